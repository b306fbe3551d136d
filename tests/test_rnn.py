"""The Elman RNN of lesson 01 equals nn.RNN; the spectral-radius helper."""

import pytest
import torch
from torch import nn

from course_lib.nn.rnn import ElmanRNN, set_spectral_radius, spectral_radius
from course_lib.nn.torch_compat import rnn_from_torch

ATOL = 1e-5


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_equals_nn_rnn(nonlinearity):
    torch.manual_seed(0)
    theirs = nn.RNN(3, 8, nonlinearity=nonlinearity, batch_first=True)
    ours = rnn_from_torch(theirs)
    x, h0 = torch.randn(2, 6, 3), torch.randn(2, 8)
    out = ours(x, h0)
    ref, h_n = theirs(x, h0[None])
    torch.testing.assert_close(out, ref, atol=ATOL, rtol=0)
    torch.testing.assert_close(out[:, -1], h_n[0], atol=ATOL, rtol=0)
    torch.testing.assert_close(ours(x), theirs(x)[0], atol=ATOL, rtol=0)


def test_gradients_equal_nn_rnn():
    torch.manual_seed(1)
    theirs = nn.RNN(3, 8, batch_first=True)
    ours = rnn_from_torch(theirs)
    x = torch.randn(2, 5, 3)
    ours(x).pow(2).sum().backward()
    theirs(x)[0].pow(2).sum().backward()
    torch.testing.assert_close(ours.W.grad, theirs.weight_hh_l0.grad, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.U.grad, theirs.weight_ih_l0.grad, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.b.grad, theirs.bias_ih_l0.grad, atol=ATOL, rtol=0)


def test_linear_rnn_is_the_plain_recurrence():
    rnn = ElmanRNN(2, 4, nonlinearity="linear")
    x = torch.randn(1, 3, 2)
    h = torch.zeros(1, 4)
    for t in range(3):
        h = h @ rnn.W.T + x[:, t] @ rnn.U.T + rnn.b
    torch.testing.assert_close(rnn(x)[:, -1], h, atol=ATOL, rtol=0)


@pytest.mark.parametrize("rho", [0.5, 1.0, 1.5])
def test_set_spectral_radius(rho):
    rnn = ElmanRNN(2, 16)
    returned = set_spectral_radius(rnn.W, rho)
    assert returned is rnn.W and isinstance(rnn.W, nn.Parameter)
    assert spectral_radius(rnn.W) == pytest.approx(rho, rel=1e-5)


def test_gradient_to_h0_shrinks_with_small_radius():
    """The lesson's claim in miniature: ‖∂h_n/∂h_0‖ falls with n when ρ(W) < 1."""
    torch.manual_seed(2)
    rnn = ElmanRNN(2, 16, nonlinearity="linear")
    set_spectral_radius(rnn.W, 0.5)
    norms = []
    for n in (5, 20):
        h0 = torch.randn(1, 16, requires_grad=True)
        rnn(torch.zeros(1, n, 2), h0)[:, -1].sum().backward()
        norms.append(h0.grad.norm().item())
    assert norms[1] < norms[0] * 1e-2
