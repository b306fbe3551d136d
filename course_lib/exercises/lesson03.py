"""Lesson 03 — positional encodings.

Exercise 3.1 `sinusoidal_table(length, d_model, base)`: the table of Vaswani et al.,
    PE[pos, 2i] = sin(pos / base^(2i/d_model)),  PE[pos, 2i+1] = cos(pos / base^(2i/d_model)),
float32 (length, d_model), odd d_model included (the last column is then a lone sine).

Exercise 3.2 `add_learned_positions(x, P, positions)`: learned absolute positions are a
table lookup, x + P[positions], with positions given per token (batch, n).
"""
import math

import torch
import torch.nn.functional as F

from ..nn.positional import sinusoidal_table as _library_table
from .feedback import Property, first_difference, fmt, in_range
from .framework import Exercise, Mistake

__all__ = ["check_sinusoidal_table", "check_add_learned_positions"]


# ---------------------------------------------------------------- 3.1 sinusoidal table

def sinusoidal_table_reference(length, d_model, base=10000.0):
    """(length, d_model) float32; sin on even dimensions, cos on odd ones."""
    return _library_table(length, d_model, base)


def _table(length, d_model, base, exponent, first_pos=0, even_fn=torch.sin, odd_fn=torch.cos):
    """A table built like the reference but with the frequency of dimension j given by
    `exponent(j)` (the power of base that divides pos). Used to plant mistakes."""
    pos = torch.arange(first_pos, first_pos + length, dtype=torch.float64)[:, None]
    j = torch.arange(d_model, dtype=torch.float64)
    angle = pos / base ** exponent(j)
    even = torch.arange(d_model) % 2 == 0
    return torch.where(even, even_fn(angle), odd_fn(angle)).float()


def _pair(j, d_model):
    return 2 * (j // 2) / d_model       # the right exponent: 2i/d_model, i = j // 2


def _zero_last_column_when_odd(length, d_model, base):
    pe = sinusoidal_table_reference(length, d_model, base)
    if d_model % 2:
        pe[:, -1] = 0.0
    return pe


def _pair_over_d_model_last_column_zero(length, d_model, base):
    """i/d_model for the exponent, and (odd d_model) a loop over d_model // 2 pairs that never
    writes the last column: `for i in range(d_model // 2): pe[:, 2i] = sin(pos / base**(i/d_model))`."""
    pe = _table(length, d_model, base, lambda j: (j // 2) / d_model)
    if d_model % 2:
        pe[:, -1] = 0.0
    return pe


def _rounded_up_d_model(length, d_model, base):
    even_d = d_model + d_model % 2
    return sinusoidal_table_reference(length, even_d, base)[:, :d_model]


def _table_loops(length, d_model, base=10000.0):
    pe = torch.zeros(length, d_model)
    for pos in range(length):
        for j in range(d_model):
            angle = pos / base ** (2 * (j // 2) / d_model)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


def _table_annotated_transformer(length, d_model, base=10000.0):
    # The Annotated Transformer's version, with the odd-d_model slice fixed.
    pe = torch.zeros(length, d_model)
    position = torch.arange(length).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(base) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe


def _row_zero_is_position_zero(args, out, again):
    """Position 0: every angle is 0, so sin 0 = 0 on even dimensions and cos 0 = 1 on odd ones."""
    want = (torch.arange(out.shape[1]) % 2).to(out.dtype)
    diff = first_difference(out[0], want, 1e-5)
    if diff is None:
        return None
    j = diff[0][0]
    return (f"your row 0 is not position 0's encoding: at position 0 every angle is 0, so pe[0, {j}] "
            f"is {'cos' if j % 2 else 'sin'} 0 = {fmt(diff[2])}, and yours is {fmt(diff[1])}")


def _table_inputs(gen):
    length = int(torch.randint(6, 13, (1,), generator=gen))
    d_model = int(torch.randint(5, 12, (1,), generator=gen))
    base = [10000.0, 100.0, 10.0][int(torch.randint(0, 3, (1,), generator=gen))]
    return length, d_model, base


SINUSOIDAL_TABLE = Exercise(
    name="sinusoidal_table",
    reference=sinusoidal_table_reference,
    make_inputs=_table_inputs,
    trials=6,
    output_names=("pe",),
    mistakes=[
        Mistake("sin and cos are swapped: even dimensions (0, 2, 4 …) hold the sine, odd "
                "ones the cosine — row 0 should read 0, 1, 0, 1, …",
                lambda n, d, b: _table(n, d, b, lambda j: _pair(j, d), even_fn=torch.cos, odd_fn=torch.sin)),
        Mistake("wrong exponent: you used i/d_model with i the pair index; the exponent is "
                "2i/d_model (pair i holds dimensions 2i and 2i+1)",
                lambda n, d, b: _table(n, d, b, lambda j: (j // 2) / d)),
        Mistake("two slips: your exponent is i/d_model with i the pair index — the 2 of 2i/d_model "
                "is missing, so every frequency after the first is off — and with an odd d_model "
                "your last column stays all zeros: dimension d_model−1 is the sine of a last pair "
                "that has no cosine, and a loop (or slice) over d_model // 2 pairs never reaches it",
                _pair_over_d_model_last_column_zero),
        Mistake("wrong exponent: dimension 2i+1 used (2i+1)/d_model; sin and cos of a pair share "
                "one frequency, so both use 2i/d_model with i = j // 2",
                lambda n, d, b: _table(n, d, b, lambda j: j / d)),
        Mistake("wrong exponent: you used 2j/d_model with j the dimension index; the exponent "
                "is 2i/d_model where i = j // 2 is the pair index",
                lambda n, d, b: _table(n, d, b, lambda j: 2 * j / d)),
        Mistake("wrong exponent: the /d_model is missing — it should be base^(2i/d_model), "
                "so the frequencies fall from 1 to about 1/base across the dimensions",
                lambda n, d, b: _table(n, d, b, lambda j: 2 * (j // 2))),
        Mistake("the exponent has the wrong sign: pos is *divided* by base^(2i/d_model) "
                "(frequencies get smaller with i), not multiplied",
                lambda n, d, b: _table(n, d, b, lambda j: -_pair(j, d))),
        Mistake("positions start at 0: row 0 is the encoding of position 0 "
                "(sin 0 = 0, cos 0 = 1), not of position 1",
                lambda n, d, b: _table(n, d, b, lambda j: _pair(j, d), first_pos=1)),
        Mistake("with an odd d_model your last column is all zeros: the last dimension "
                "(index d_model-1, an even index) is the sine of pair (d_model-1)/2 — "
                "loop over ceil(d_model/2) pairs, or slice the cosines to d_model//2",
                _zero_last_column_when_odd),
        Mistake("with an odd d_model you built the table for d_model+1 and cut a column off, "
                "so every frequency is off: the exponent must use the real d_model, 2i/d_model",
                _rounded_up_d_model),
    ],
    alternatives=[_table_loops, _table_annotated_transformer],
    properties=[in_range(-1.0, 1.0, "pe", "a sine or a cosine lies between −1 and 1"),
                Property(_row_zero_is_position_zero)],
    small_inputs=lambda gen: [(1, 2, 10000.0), (2, 2, 10000.0), (2, 3, 10.0), (3, 4, 10.0), (4, 5, 100.0)],
)


def check_sinusoidal_table(fn):
    """Check a learner's `sinusoidal_table(length, d_model, base)`; prints a verdict."""
    return SINUSOIDAL_TABLE.check(fn)


# ---------------------------------------------------------------- 3.2 learned lookup

def add_learned_positions_reference(x, P, positions):
    """x: (batch, n, d_model), P: (max_len, d_model), positions: (batch, n) int -> x + P[positions]."""
    return x + P[positions]


def _added_rows_ignore_x(args, out, again):
    """out − x is the position rows alone: it must not depend on x."""
    x, P, positions = args
    x2 = x + 1.0 + x.abs()
    diff = first_difference(again((x2, P, positions)) - x2, out - x, 1e-5)
    if diff is None:
        return None
    return (f"what your function adds to x changes when x changes (entry {list(diff[0])} of out − x "
            f"went from {fmt(diff[2])} to {fmt(diff[1])}): the position rows added to x depend on the "
            f"positions only")


def _lookup_small(gen):
    P = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    yield torch.zeros(1, 1, 2), P, torch.tensor([[0]])
    yield torch.zeros(1, 1, 2), P, torch.tensor([[2]])
    yield torch.zeros(1, 2, 2), P, torch.tensor([[1, 2]])
    yield torch.zeros(2, 2, 2), P, torch.tensor([[0, 1], [2, 3]])
    yield torch.tensor([[[0.5, -1.0], [1.0, 0.0]], [[0.0, 2.0], [-1.0, 1.0]]]), P, torch.tensor([[2, 3], [0, 1]])


def _lookup_inputs(gen):
    batch = int(torch.randint(2, 4, (1,), generator=gen))
    n = int(torch.randint(4, 7, (1,), generator=gen))
    d_model = int(torch.randint(7, 10, (1,), generator=gen))
    max_len = 16
    starts = torch.randint(1, max_len - n, (batch,), generator=gen)
    # The last sequence is an ordinary one, from 0; the first is continued elsewhere, so
    # "rows 0 … n-1 for all" and "the first sequence's positions for all" differ.
    starts[-1] = 0
    positions = starts[:, None] + torch.arange(n)
    x = torch.randn(batch, n, d_model, generator=gen)
    P = torch.randn(max_len, d_model, generator=gen)
    return x, P, positions


ADD_LEARNED_POSITIONS = Exercise(
    name="add_learned_positions",
    reference=add_learned_positions_reference,
    make_inputs=_lookup_inputs,
    mistakes=[
        Mistake("you added rows 0 … n-1 to every sequence and ignored `positions`; token i "
                "of sequence b gets row P[positions[b, i]]",
                lambda x, P, p: x + P[: x.shape[1]]),
        Mistake("you used the first sequence's positions (`positions[0]`) for every sequence; "
                "each sequence has its own: index with the whole (batch, n) tensor, P[positions]",
                lambda x, P, p: x + P[p[0]]),
        Mistake("you returned the position rows alone: add them to the token vectors, x + P[positions]",
                lambda x, P, p: P[p]),
        Mistake("positions are 0-based: the token at position p gets row P[p], not P[p-1]",
                lambda x, P, p: x + P[p - 1]),
        Mistake("positions are 0-based: the token at position p gets row P[p], not P[p+1]",
                lambda x, P, p: x + P[p + 1]),
        Mistake("you added rows P[1] … P[n] to every sequence: two slips. The rows are shifted by "
                "one (a token at position p gets row p, and positions count from 0), and they are "
                "the same for every sequence — `positions` was not used, though sequence b's "
                "token i sits at positions[b, i]",
                lambda x, P, p: x + P[1: x.shape[1] + 1]),
        Mistake("you multiplied by the position rows; learned positions are *added*: x + P[positions]",
                lambda x, P, p: x * P[p]),
        Mistake("you added the position number itself; look up its row in the table: P[positions]",
                lambda x, P, p: x + p[..., None].float()),
        Mistake("don't scale the position rows by √d_model (that factor belongs to the token "
                "embedding in the paper); add P[positions] as it is",
                lambda x, P, p: x + P[p] * math.sqrt(P.shape[1])),
    ],
    alternatives=[
        lambda x, P, p: x + F.embedding(p, P),
        lambda x, P, p: x + F.one_hot(p, P.shape[0]).float() @ P,   # one-hot × P = row lookup
        lambda x, P, p: x + P.index_select(0, p.flatten()).view(*p.shape, P.shape[1]),
        lambda x, P, p: torch.stack([torch.stack([x[b, i] + P[p[b, i]] for i in range(x.shape[1])])
                                     for b in range(x.shape[0])]),
    ],
    properties=[Property(_added_rows_ignore_x)],
    small_inputs=_lookup_small,
)


def check_add_learned_positions(fn):
    """Check a learner's `add_learned_positions(x, P, positions)`; prints a verdict."""
    return ADD_LEARNED_POSITIONS.check(fn)
