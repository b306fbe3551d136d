"""Lesson 01 — why not RNNs.

Exercise 1.1 `rnn_forward(x, W, U, b)`: the Elman recurrence h_t = tanh(W h_{t-1} + U x_t + b)
written as a loop (checked against `course_lib.nn.rnn.ElmanRNN` and `nn.RNN`).
Exercise 1.2 `grad_norm(rnn, x, h0)`: measure ‖∂L/∂h_0‖ with autograd, L = Σ_i (h_n)_i.
"""
import math

import torch
from torch import nn

from ..nn.rnn import ElmanRNN
from .feedback import Property, first_difference, in_range
from .framework import Exercise, Mistake

__all__ = ["check_rnn_forward", "check_grad_norm"]


# ----------------------------------------------------------------- 1.1 the RNN loop

def rnn_forward_reference(x, W, U, b):
    """x (batch, n, d_in), W (d_h, d_h), U (d_h, d_in), b (d_h,) -> states (batch, n, d_h)."""
    h = x.new_zeros(x.shape[0], W.shape[0])            # h_0 = 0
    states = []
    for t in range(x.shape[1]):
        h = torch.tanh(h @ W.T + x[:, t] @ U.T + b)    # (batch, d_h)
        states.append(h)
    return torch.stack(states, dim=1)


def _rnn_inputs(gen, sizes=(3, 7, 4, 5)):
    batch, n, d_in, d_h = sizes            # all different: a swapped axis cannot hide
    x = torch.randn(batch, n, d_in, generator=gen)
    W = torch.randn(d_h, d_h, generator=gen) * 0.6   # not symmetric: W h ≠ Wᵀ h
    U = torch.randn(d_h, d_in, generator=gen) * 0.6
    b = torch.randn(d_h, generator=gen) * 0.3
    return x, W, U, b


def _rnn_probes(gen):
    """batch = n and d_in = d_h: there `x[:, t] @ U`, W and U swapped, and x[t] for time step t
    run, so they are matched by their numbers, not by a shape error that other slips raise too."""
    return [_rnn_inputs(gen, sizes=(4, 4, 3, 3))]


def _with_elman(x, W, U, b):
    rnn = ElmanRNN(U.shape[1], W.shape[0])
    with torch.no_grad():
        rnn.W.copy_(W), rnn.U.copy_(U), rnn.b.copy_(b)
    return rnn(x)


def _with_nn_rnn(x, W, U, b):
    rnn = nn.RNN(U.shape[1], W.shape[0], batch_first=True)   # h_t = tanh(x U^T + b_ih + h W^T + b_hh)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(U), rnn.weight_hh_l0.copy_(W)
        rnn.bias_ih_l0.copy_(b), rnn.bias_hh_l0.zero_()
    return rnn(x)[0]


def _with_precomputed_inputs(x, W, U, b):
    ux = torch.einsum("bti,hi->bth", x, U) + b          # every U x_t + b at once: no recurrence
    h, out = x.new_zeros(x.shape[0], W.shape[0]), []
    for t in range(x.shape[1]):
        h = torch.tanh(ux[:, t] + torch.einsum("hk,bk->bh", W, h))
        out.append(h)
    return torch.stack(out, 1)


def _loop(step, shift=False, keep_h0=False, stack_dim=1, last_only=False, in_place=False):
    """A wrong loop: `step(h, x, t, W, U, b)` gives the next h. shift stores h before updating
    it; keep_h0 also stores h_0; in_place writes each new state into the same tensor."""
    def rnn(x, W, U, b):
        h = x.new_zeros(x.shape[0], W.shape[0])
        states = [h] if keep_h0 else []
        for t in range(x.shape[1]):
            if shift:
                states.append(h)
            if in_place:
                h[:] = step(h, x, t, W, U, b)
            else:
                h = step(h, x, t, W, U, b)
            if not shift:
                states.append(h)
        return h if last_only else torch.stack(states, dim=stack_dim)
    return rnn


def _states_depend_on_the_past_only(args, out, again):
    """Changing the last input x_n leaves h_1 … h_{n-1} as they were."""
    x = args[0].clone()
    x[:, -1] += 2.0
    diff = first_difference(again((x,) + args[1:])[:, :-1], out[:, :-1], 1e-5)
    if diff is None:
        return None
    return (f"your state at step {diff[0][1] + 1} changes when only the last input x_{x.shape[1]} "
            f"changes: h_t can depend on x_1 … x_t only, never on a later input")


def _rnn_small(gen):
    one = torch.ones(1, 1)
    yield torch.tensor([[[1.0]]]), 0.5 * one, one, torch.zeros(1)
    yield torch.tensor([[[1.0], [2.0]]]), 0.5 * one, one, torch.tensor([0.1])
    yield torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]), torch.tensor([[0.5, -0.3], [0.2, 0.4]]), \
        torch.tensor([[1.0, 0.5], [-0.5, 1.0]]), torch.tensor([0.1, -0.2])


def _right(h, x, t, W, U, b):
    return torch.tanh(h @ W.T + x[:, t] @ U.T + b)


RNN_FORWARD = Exercise(
    name="rnn_forward",
    reference=rnn_forward_reference,
    make_inputs=_rnn_inputs,
    output_names=("states",),
    mistakes=[
        Mistake("no nonlinearity: h_t = tanh(W h_{t-1} + U x_t + b) needs the tanh around the sum",
                _loop(lambda h, x, t, W, U, b: h @ W.T + x[:, t] @ U.T + b)),
        Mistake("W is applied from the wrong side: with batch-first rows, W h_{t-1} is "
                "`h @ W.T`, not `h @ W` (that would be Wᵀ h)",
                _loop(lambda h, x, t, W, U, b: torch.tanh(h @ W + x[:, t] @ U.T + b))),
        Mistake("your states never use the previous one: every h_t came out as tanh(U x_t + b), as if "
                "h_{t-1} were still h₀ = 0. Check that the sum has the term W h_{t-1}, and that each "
                "step assigns the new state to the variable the next step reads (h = ...)",
                _loop(lambda h, x, t, W, U, b: torch.tanh(x[:, t] @ U.T + b))),
        Mistake("off by one: you stored h before updating it, so your states are h_0 … h_{n-1}; "
                "the output at step t is the *new* h_t",
                _loop(_right, shift=True)),
        Mistake("your states start with h₀: you stored the initial state too, so there are n + 1 of "
                "them. The output is h₁ … h_n, one state per input x_t — store each h after its update",
                _loop(_right, keep_h0=True)),
        Mistake("you returned only the last state h_n, (batch, d_h); the exercise asks for all of "
                "them, h₁ … h_n, stacked into (batch, n, d_h)",
                _loop(_right, last_only=True)),
        Mistake("your states are stacked along axis 0, (n, batch, d_h): torch.stack(states) puts the "
                "time axis first. The output is batch-first, (batch, n, d_h) — stack along dim=1",
                _loop(_right, stack_dim=0)),
        Mistake("all your states equal the last one: h was updated in place (h[:] = … or h.copy_(…)), "
                "so the list holds n references to one tensor, overwritten every step. Make a new "
                "tensor each step: h = torch.tanh(...)",
                _loop(_right, in_place=True)),
        # The next three crash on the trials' sizes (d_in ≠ d_h, batch ≠ n) and run on the probe.
        Mistake("`x[:, t] @ U` does not fit: U is (d_h, d_in) and x_t is a row of d_in numbers, so "
                "U x_t for batch-first rows is x_t times Uᵀ — the same rule as W h_{t-1} = `h @ W.T`",
                _loop(lambda h, x, t, W, U, b: torch.tanh(h @ W.T + x[:, t] @ U + b))),
        Mistake("W and U are swapped: W (d_h, d_h) multiplies the previous state h_{t-1}, U (d_h, d_in) "
                "the input x_t",
                _loop(lambda h, x, t, W, U, b: torch.tanh(h @ U.T + x[:, t] @ W.T + b))),
        Mistake("x[t] is sequence t of the batch, not time step t: x is (batch, n, d_in), time is "
                "axis 1, and the inputs of step t for the whole batch are x[:, t]",
                _loop(lambda h, x, t, W, U, b: torch.tanh(h @ W.T + x[t] @ U.T + b))),
        Mistake("you used the logistic sigmoid; the lesson's recurrence uses tanh, "
                "h_t = tanh(W h_{t-1} + U x_t + b) (torch.tanh), whose states lie in (−1, 1)",
                _loop(lambda h, x, t, W, U, b: torch.sigmoid(h @ W.T + x[:, t] @ U.T + b))),
        Mistake("the bias is missing: h_t = tanh(W h_{t-1} + U x_t + b)",
                _loop(lambda h, x, t, W, U, b: torch.tanh(h @ W.T + x[:, t] @ U.T))),
        Mistake("the tanh is applied to the input term only; it goes around the whole sum "
                "W h_{t-1} + U x_t + b",
                _loop(lambda h, x, t, W, U, b: h @ W.T + torch.tanh(x[:, t] @ U.T + b))),
    ],
    alternatives=[_with_elman, _with_nn_rnn, _with_precomputed_inputs],
    properties=[in_range(-1.0, 1.0, "states", "tanh's values lie between −1 and 1"),
                Property(_states_depend_on_the_past_only)],
    probes=_rnn_probes,
    small_inputs=_rnn_small,
)


def check_rnn_forward(fn):
    """Check a learner's `rnn_forward(x, W, U, b)`; prints a verdict, never raises."""
    return RNN_FORWARD.check(fn)


# -------------------------------------------------------- 1.2 measuring the gradient

def grad_norm_reference(rnn, x, h0):
    """‖∂L/∂h_0‖ for L = Σ_i (h_n)_i, the sum of the last hidden state's entries. A 0-dim tensor."""
    h0 = h0.detach().clone().requires_grad_(True)
    L = rnn(x, h0)[:, -1].sum()
    (g,) = torch.autograd.grad(L, h0)
    return g.norm()


def _grad_inputs(gen):
    with torch.random.fork_rng(devices=[]):   # leave the notebook's random stream alone
        rnn = ElmanRNN(3, 6)
    with torch.no_grad():                     # weights from the checker's own generator
        rnn.W.copy_(torch.randn(6, 6, generator=gen) * 0.5)
        rnn.U.copy_(torch.randn(6, 3, generator=gen) * 0.5)
        rnn.b.copy_(torch.randn(6, generator=gen) * 0.2)
    x = torch.randn(1, 9, 3, generator=gen)
    h0 = torch.randn(1, 6, generator=gen) * 0.5
    return rnn, x, h0


def _elman(W, U, b):
    with torch.random.fork_rng(devices=[]):   # leave the notebook's random stream alone
        rnn = ElmanRNN(U.shape[1], W.shape[0])
    with torch.no_grad():
        rnn.W.copy_(W), rnn.U.copy_(U), rnn.b.copy_(b)
    return rnn


def _grad_small(gen):
    """One state and one input of size 1 first, the weights written out; then two steps; then d_h = 2."""
    one = torch.ones(1, 1)
    yield _elman(0.5 * one, one, torch.zeros(1)), torch.tensor([[[1.0]]]), torch.tensor([[0.5]])
    yield _elman(0.5 * one, one, torch.zeros(1)), torch.tensor([[[1.0], [2.0]]]), torch.tensor([[0.5]])
    yield (_elman(torch.tensor([[0.5, -0.3], [0.2, 0.4]]), torch.tensor([[1.0], [-0.5]]), torch.tensor([0.1, -0.2])),
           torch.tensor([[[1.0], [0.0], [2.0]]]), torch.tensor([[0.5, -1.0]]))


def _run_with_grad(fn, args):
    """Checks run under no_grad; measuring a gradient needs autograd switched back on."""
    with torch.enable_grad():
        out = fn(*args)
    return out.detach() if isinstance(out, torch.Tensor) else out


def _grad_of(loss_fn, wrt="h0", squared=False):
    def measure(rnn, x, h0):
        x = x.detach().clone().requires_grad_(wrt == "x")
        h0 = h0.detach().clone().requires_grad_(wrt == "h0")
        L = loss_fn(rnn(x, h0))
        (g,) = torch.autograd.grad(L, h0 if wrt == "h0" else x)
        if wrt == "x":
            g = g[:, 0]
        return (g ** 2).sum() if squared else g.norm()
    return measure


def _without_requires_grad(use_autograd_grad):
    """h0 used as given: autograd never tracks it (the crash is matched and named)."""
    def measure(rnn, x, h0):
        L = rnn(x, h0)[:, -1].sum()
        if use_autograd_grad:
            return torch.autograd.grad(L, h0)[0].norm()
        L.backward()
        return h0.grad.norm()
    return measure


NO_REQUIRES_GRAD_HINT = ("h0.grad is None (or autograd says h0 \"does not require grad\"): autograd "
                         "only records the gradient of a tensor marked before the forward pass. "
                         "Make h0 one first: h0 = h0.clone().requires_grad_(), then run rnn(x, h0)")


def _gradient(rnn, x, h0):
    """∂L/∂h_0 itself, (1, d_h): the norm left out."""
    h0 = h0.detach().clone().requires_grad_(True)
    return torch.autograd.grad(rnn(x, h0)[:, -1].sum(), h0)[0]


def _with_jacobian(rnn, x, h0):
    J = torch.autograd.functional.jacobian(lambda h: rnn(x, h)[:, -1].sum(), h0)
    return J.norm()


def _with_backward(rnn, x, h0):
    h0 = h0.clone().requires_grad_()
    rnn(x, h0)[:, -1].sum().backward()
    return h0.grad.norm()


GRAD_NORM = Exercise(
    name="grad_norm",
    reference=grad_norm_reference,
    make_inputs=_grad_inputs,
    run=_run_with_grad,
    output_names=("norm",),
    mistakes=[
        Mistake("you summed every hidden state; L uses only the last one, h_n = `states[:, -1]`",
                _grad_of(lambda s: s.sum())),
        Mistake("that is the squared norm Σ g_i²; take the square root — `g.norm()`",
                _grad_of(lambda s: s[:, -1].sum(), squared=True)),
        Mistake("L is the *sum* of h_n's entries, not their mean (the mean divides the gradient by d)",
                _grad_of(lambda s: s[:, -1].mean())),
        Mistake("that is the gradient with respect to the first input x_1, not the initial "
                "state h_0: set requires_grad on h0 and pass it to `rnn(x, h0)`",
                _grad_of(lambda s: s[:, -1].sum(), wrt="x")),
        Mistake("you returned the size of h_n itself, not of a gradient: call `.backward()` "
                "(or torch.autograd.grad) and take the norm of `h0.grad`",
                lambda rnn, x, h0: rnn(x, h0)[:, -1].norm()),
        # Always a crash, and its error says so: "'NoneType' object has no attribute 'norm'" (h0.grad),
        # "One of the differentiated Tensors does not require grad".
        Mistake(NO_REQUIRES_GRAD_HINT, _without_requires_grad(False), by_error=True),
        Mistake(NO_REQUIRES_GRAD_HINT, _without_requires_grad(True), by_error=True),
        Mistake("you returned the gradient ∂L/∂h_0 itself, shaped like h0; the exercise asks for its "
                "norm ‖∂L/∂h_0‖, one number: `.norm()`",
                _gradient),
    ],
    alternatives=[_with_jacobian, _with_backward],
    properties=[in_range(0.0, math.inf, "norm", "a norm is never negative")],
    small_inputs=_grad_small,
)


def check_grad_norm(fn):
    """Check a learner's `grad_norm(rnn, x, h0)`; prints a verdict, never raises."""
    return GRAD_NORM.check(fn)
