"""Lesson 00 — a first exercise to try the checking system.

`center_rows(x)`: subtract from every row its own mean, so each row sums to 0.
The same step opens LayerNorm in lesson 05.
"""
import torch

from .feedback import rows_have_mean_zero, unchanged_when
from .framework import Exercise, Mistake

__all__ = ["check_center_rows"]


def center_rows_reference(x: torch.Tensor) -> torch.Tensor:
    """x: (n, d) -> (n, d), each row minus its mean over the last axis."""
    return x - x.mean(dim=-1, keepdim=True)


def _inputs(gen):
    n, d = torch.randint(3, 7, (2,), generator=gen).tolist()
    if n == d:          # a square input would hide the wrong-axis mistake
        d += 1
    return (torch.randn(n, d, generator=gen) * 3 + 1,)


CENTER_ROWS = Exercise(
    name="center_rows",
    reference=center_rows_reference,
    make_inputs=_inputs,
    mistakes=[
        Mistake("you subtracted the mean of each *column* (dim=0); a row's mean is over "
                "the last axis: `x.mean(dim=-1, keepdim=True)`",
                lambda x: x - x.mean(dim=0, keepdim=True)),
        # (n, d) minus (n,): the checker's inputs are never square, so this always crashes
        # with a broadcasting error — matched here, and the message names keepdim instead.
        Mistake("`x.mean(dim=1)` has shape (n,): averaging removed the axis, so in `x - mean` the "
                "n row means line up with x's *last* axis, the d columns, and cannot be subtracted "
                "(when n = d they would be, each from the wrong column). Print the mean's shape; "
                "with keepdim=True it stays (n, 1) — one mean per row, repeated along that row",
                lambda x: x - x.mean(dim=1)),
        Mistake("you subtracted each row's *sum*; its mean is the sum divided by the number of "
                "entries in the row",
                lambda x: x - x.sum(dim=1, keepdim=True)),
        Mistake("you divided the row sums by x.shape[0] = n, the number of rows; a row has "
                "d = x.shape[1] entries",
                lambda x: x - x.sum(dim=1, keepdim=True) / x.shape[0]),
        Mistake("you subtracted one number, the mean of the whole tensor; each row needs "
                "its own mean: `x.mean(dim=-1, keepdim=True)`",
                lambda x: x - x.mean()),
        Mistake("you divided by the mean instead of subtracting it",
                lambda x: x / x.mean(dim=-1, keepdim=True)),
        Mistake("you also divided by the standard deviation — that is standardizing "
                "(LayerNorm, lesson 05); here only subtract the mean",
                lambda x: (x - x.mean(dim=-1, keepdim=True)) / x.std(dim=-1, keepdim=True)),
        Mistake("you also divided by the standard deviation — that is standardizing "
                "(LayerNorm, lesson 05); here only subtract the mean",
                lambda x: (x - x.mean(dim=-1, keepdim=True))
                / x.std(dim=-1, keepdim=True, unbiased=False)),
    ],
    alternatives=[
        lambda x: x - x.sum(dim=1, keepdim=True) / x.shape[1],
        lambda x: torch.stack([row - row.mean() for row in x]),
        lambda x: x - x.mean(dim=1)[:, None],          # keepdim's axis put back by hand
        lambda x: (x.T - x.mean(dim=1)).T,
    ],
    # A square input, rows with different means: there a mean without keepdim runs (wrongly) and
    # is told apart from other reductions without keepdim, which crash alike on n × d (issue 44).
    probes=lambda gen: [(torch.randn(4, 4, generator=gen) + torch.arange(4.0)[:, None],)],
    properties=[
        rows_have_mean_zero("rows"),
        unchanged_when(lambda a: (a[0] + torch.linspace(-3.0, 2.0, a[0].shape[0])[:, None],),
                       "your output changes when a constant is added to every entry of a row, and "
                       "the right one does not: that constant is part of the row's mean, which is "
                       "subtracted"),
    ],
    small_inputs=lambda gen: [(torch.tensor([[1.0, 3.0]]),), (torch.tensor([[1.0, 3.0], [0.0, 4.0]]),),
                              (torch.tensor([[1.0, 2.0, 6.0], [0.0, 4.0, 2.0]]),)],
)


def check_center_rows(fn):
    """Check a learner's `center_rows(x)`; prints a verdict, never raises."""
    return CENTER_ROWS.check(fn)
