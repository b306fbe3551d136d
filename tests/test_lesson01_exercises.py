"""Lesson 01's RNN loop: the slips learners write, each named in the lesson's notation
(h₀, h_t = tanh(W h_{t-1} + U x_t + b)) rather than "compare by hand" (issue 38 §3)."""
import pytest
import torch

from course_lib.exercises.framework import OK, WRONG
from course_lib.exercises.lesson01 import GRAD_NORM, RNN_FORWARD


def _rnn(step, keep_h0=False, stack_dim=1, last_only=False, in_place=False):
    """A learner's loop; `step(h, x_t, W, U, b)` is their update line."""
    def rnn_forward(x, W, U, b):
        h = torch.zeros(x.shape[0], W.shape[0])
        states = [h] if keep_h0 else []
        for t in range(x.shape[1]):
            if in_place:
                h[:] = step(h, x, t, W, U, b)
            else:
                h = step(h, x, t, W, U, b)
            states.append(h)
        return h if last_only else torch.stack(states, dim=stack_dim)
    return rnn_forward


def _right(h, x, t, W, U, b):
    return torch.tanh(h @ W.T + x[:, t] @ U.T + b)


@pytest.mark.parametrize("learner, words", [
    (_rnn(_right, keep_h0=True), ["h₀", "n + 1"]),
    (_rnn(_right, last_only=True), ["only the last state"]),
    (_rnn(_right, stack_dim=0), ["axis 0", "dim=1"]),
    (_rnn(_right, in_place=True), ["in place"]),
    (_rnn(lambda h, x, t, W, U, b: torch.tanh(h @ W.T + x[:, t] @ U + b)), ["U is (d_h, d_in)"]),
    (_rnn(lambda h, x, t, W, U, b: torch.tanh(h @ U.T + x[:, t] @ W.T + b)), ["W and U are swapped"]),
    (_rnn(lambda h, x, t, W, U, b: torch.tanh(h @ W.T + x[t] @ U.T + b)), ["x[:, t]", "time"]),
    (_rnn(lambda h, x, t, W, U, b: torch.sigmoid(h @ W.T + x[:, t] @ U.T + b)), ["sigmoid", "tanh"]),
], ids=["states-include-h0", "last-state-only", "stacked-time-first", "updated-in-place",
        "U-not-transposed", "W-and-U-swapped", "x[t]-is-a-sequence", "sigmoid"])
def test_a_learners_rnn_slip_is_named(learner, words):
    v = RNN_FORWARD.verdict(learner)
    assert v.status == WRONG, v.message
    for w in words:
        assert w in v.message, v.message


def test_the_no_nonlinearity_hint_speaks_the_lessons_tanh():
    """The lesson writes h_t = tanh(…); the hint said σ(…)."""
    v = RNN_FORWARD.verdict(_rnn(lambda h, x, t, W, U, b: h @ W.T + x[:, t] @ U.T + b))
    assert v.status == WRONG and "tanh" in v.message and "σ" not in v.message, v.message


def test_preallocated_states_are_accepted():
    def rnn_forward(x, W, U, b):
        states = x.new_zeros(x.shape[0], x.shape[1], W.shape[0])
        h = x.new_zeros(x.shape[0], W.shape[0])
        for t in range(x.shape[1]):
            h = torch.tanh(h @ W.T + x[:, t] @ U.T + b)
            states[:, t] = h
        return states

    assert RNN_FORWARD.verdict(rnn_forward).status == OK


def test_a_gradient_of_a_state_without_requires_grad_is_named():
    def grad_norm(rnn, x, h0):
        rnn(x, h0)[:, -1].sum().backward()      # h0 was never marked requires_grad
        return h0.grad.norm()

    v = GRAD_NORM.verdict(grad_norm)
    assert v.status == WRONG and "requires_grad" in v.message and "h0.grad is None" in v.message, v.message


def test_the_gradient_vector_instead_of_its_norm_is_named():
    def grad_norm(rnn, x, h0):
        h0 = h0.clone().requires_grad_()
        rnn(x, h0)[:, -1].sum().backward()
        return h0.grad

    v = GRAD_NORM.verdict(grad_norm)
    assert v.status == WRONG and "its norm" in v.message, v.message
