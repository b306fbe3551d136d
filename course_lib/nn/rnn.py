"""The small recurrent network of lesson 01, written as the recurrence it is.

    h_t = σ(W h_{t-1} + U x_t + b)

Step t needs h_{t-1}, so n positions take n sequential steps — the cost that
attention removes. Lesson 01 also scales W's spectral radius to show gradients
through many steps vanishing (radius < 1) or exploding (radius > 1).
"""

import math

import torch
from torch import nn

from .._checks import check_choice, check_float, check_last_dim, check_ndim, check_positive_int

__all__ = ["ElmanRNN", "spectral_radius", "set_spectral_radius"]

NONLINEARITIES = {"tanh": torch.tanh, "relu": torch.relu, "linear": lambda a: a}


class ElmanRNN(nn.Module):
    """A one-layer Elman RNN with an explicit loop over time.

    U: (d_hidden, d_in) input weights, W: (d_hidden, d_hidden) recurrent weights,
    b: (d_hidden,) bias; σ is "tanh", "relu" or "linear" (no nonlinearity).
    Initialized like nn.RNN: uniform in ±1/√d_hidden.
    """

    def __init__(self, d_in, d_hidden, nonlinearity="tanh"):
        super().__init__()
        check_positive_int("d_in", d_in)
        check_positive_int("d_hidden", d_hidden)
        check_choice("nonlinearity", nonlinearity, NONLINEARITIES)
        self.d_in, self.d_hidden, self.nonlinearity = d_in, d_hidden, nonlinearity
        bound = 1 / math.sqrt(d_hidden)
        self.U = nn.Parameter(torch.empty(d_hidden, d_in).uniform_(-bound, bound))
        self.W = nn.Parameter(torch.empty(d_hidden, d_hidden).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(d_hidden).uniform_(-bound, bound))

    def forward(self, x, h0=None):
        """x: (batch, n, d_in), h0: (batch, d_hidden) or None for zeros.

        Returns every hidden state, (batch, n, d_hidden); the last one is out[:, -1].
        """
        check_float("x", x)
        check_ndim("x", x, 3, "(batch, n, d_in)")
        check_last_dim("x", x, self.d_in, what="d_in")
        batch, n, _ = x.shape
        if h0 is None:
            h = x.new_zeros(batch, self.d_hidden)
        else:
            check_float("h0", h0)
            if tuple(h0.shape) != (batch, self.d_hidden):
                raise ValueError(f"h0 must have shape (batch, d_hidden)={(batch, self.d_hidden)}, got {tuple(h0.shape)}")
            h = h0
        sigma = NONLINEARITIES[self.nonlinearity]
        states = []
        for t in range(n):  # sequential: h_t cannot start before h_{t-1} is known
            h = sigma(h @ self.W.T + x[:, t] @ self.U.T + self.b)
            states.append(h)
        return torch.stack(states, dim=1)

    def extra_repr(self):
        return f"d_in={self.d_in}, d_hidden={self.d_hidden}, nonlinearity={self.nonlinearity!r}"


def spectral_radius(W):
    """max |λ| over the eigenvalues λ of the square matrix W (a float)."""
    check_float("W", W)
    if W.dim() != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be a square matrix, got shape {tuple(W.shape)}")
    return torch.linalg.eigvals(W.detach().double()).abs().max().item()


def set_spectral_radius(W, rho):
    """Scale W in place so that its spectral radius is rho; returns W.

    Repeated multiplication by W grows or shrinks vectors roughly like rho^t, which
    is what makes RNN gradients explode (rho > 1) or vanish (rho < 1).
    Use on a parameter directly: set_spectral_radius(rnn.W, 0.9).
    """
    if isinstance(rho, bool) or not isinstance(rho, (int, float)):
        raise TypeError(f"rho must be a number, got {type(rho).__name__}")
    if rho < 0:
        raise ValueError(f"rho must be >= 0, got rho={rho}")
    current = spectral_radius(W)
    if current == 0:
        raise ValueError("W has spectral radius 0 (nilpotent or zero); it cannot be rescaled to rho")
    with torch.no_grad():
        W.mul_(rho / current)
    return W
