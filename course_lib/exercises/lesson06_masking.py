"""Lesson 06, part 1 — masking: exercises 6.1 and 6.2 (the sampling ones, 6.3 and 6.4, are in
lesson06_sampling.py; both modules count as lesson 06 — see Exercise.lesson).

Exercise 6.1 `causal_mask(n)`: the bool (n, n) "no peeking" triangle, True = may attend.
Exercise 6.2 `masked_attention(q, k, v, mask)`: softmax(q kᵀ/√d_k) v with the masked
    scores set to -inf *before* the softmax; q (b, n_q, d_k), k (b, n_k, d_k), v (b, n_k, d_v),
    mask bool (b, n_q, n_k); returns (out (b, n_q, d_v), weights (b, n_q, n_k)).

6.1 returns a bool tensor, so it is wired with `run=` and the suite's generic "NaN output" probe
(which only makes sense for floats) skips it; tests/test_lesson06_exercises.py checks stubs and
crashes for it instead.
"""
import math

import torch
import torch.nn.functional as F

from ..nn.attention import scaled_dot_product_attention
from .feedback import (Property, blocked_keys_ignored, blocked_weights_are_zero,
                       out_is_weights_times_v, rows_are_distributions)
from .framework import Exercise, Mistake

__all__ = ["check_causal_mask", "check_masked_attention"]


def _call(fn, args):
    return fn(*args)


# ---------------------------------------------------------------- 6.1 causal mask

def causal_mask_reference(n):
    """(n, n) bool, True where key j ≤ query i."""
    return torch.ones(n, n, dtype=torch.bool).tril()


def _mask_is_causal(args, out, again):
    """Query i may see itself and every earlier key, and no later one."""
    n = out.shape[0]
    for i in range(n):
        if not out[i, i]:
            return f"your mask stops a position from attending to itself: mask[{i}, {i}] is False"
        later = out[i, i + 1:].nonzero()
        if len(later):
            j = i + 1 + int(later[0])
            return f"your mask lets query {i} see a later key: mask[{i}, {j}] is True, and key {j} is its future"
        earlier = (~out[i, :i]).nonzero()
        if len(earlier):
            j = int(earlier[0])
            return f"your mask hides an earlier key: mask[{i}, {j}] is False, and query {i} may see key {j} ≤ {i}"
    return None


def _mask_inputs(gen):
    return (int(torch.randint(3, 10, (1,), generator=gen)),)


CAUSAL_MASK = Exercise(
    name="causal_mask",
    reference=causal_mask_reference,
    make_inputs=_mask_inputs,
    run=_call,
    output_names=("mask",),
    mistakes=[
        Mistake("your mask is True strictly above the diagonal: that is PyTorch's nn.Transformer "
                "convention (True = blocked). Here True = may attend, so query i may see keys "
                "j ≤ i: True on and below the diagonal (torch.tril)",
                lambda n: torch.ones(n, n, dtype=torch.bool).triu(1)),
        Mistake("your mask is transposed: True on and above the diagonal lets position 0 see "
                "the whole sequence. Row i is query i and may see columns (keys) j ≤ i: torch.tril",
                lambda n: torch.ones(n, n, dtype=torch.bool).triu()),
        Mistake("the diagonal is False, so no token may attend to itself; j = i is the present, "
                "not the future — keep the diagonal: torch.tril(..., diagonal=0)",
                lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1)),
        Mistake("every entry is True: that is no mask at all. Future keys (j > i) must be False",
                lambda n: torch.ones(n, n, dtype=torch.bool)),
    ],
    alternatives=[
        lambda n: torch.arange(n)[:, None] >= torch.arange(n)[None, :],
        lambda n: ~torch.ones(n, n, dtype=torch.bool).triu(1),
        lambda n: torch.tensor([[j <= i for j in range(n)] for i in range(n)]),
    ],
    properties=[Property(_mask_is_causal)],
    small_inputs=lambda gen: [(1,), (2,), (3,), (4,)],
)


def check_causal_mask(fn):
    """Check a learner's `causal_mask(n)`; prints a verdict, never raises."""
    return CAUSAL_MASK.check(fn)


# ---------------------------------------------------------------- 6.2 masked attention

def masked_attention_reference(q, k, v, mask):
    """q (b, n_q, d_k), k (b, n_k, d_k), v (b, n_k, d_v), mask bool (b, n_q, n_k)
    -> (out (b, n_q, d_v), weights (b, n_q, n_k))."""
    return scaled_dot_product_attention(q, k, v, mask)


def _attention_inputs(gen):
    b, n_q, n_k, d_k, d_v = 2, 4, 6, 3, 5   # all different: a wrong axis cannot hide
    q = torch.randn(b, n_q, d_k, generator=gen) * 2
    k = torch.randn(b, n_k, d_k, generator=gen) * 2
    v = torch.randn(b, n_k, d_v, generator=gen)
    # Queries are the last n_q of n_k positions (causal: query i sees keys j ≤ i + 2), and
    # the last query also loses one random earlier key. So every row keeps a key and
    # hides a key, and every key is seen by some query: neither a flipped mask nor a
    # softmax over the wrong axis meets a row (or column) of -inf only.
    mask = torch.ones(n_q, n_k, dtype=torch.bool).tril(n_k - n_q).repeat(b, 1, 1)
    hole = torch.randint(0, n_k - 1, (b,), generator=gen)
    mask[torch.arange(b), -1, hole] = False                    # (b, n_q, n_k)
    return q, k, v, mask


def _masked_small(gen):
    """One query over two keys with d = 2, the second blocked; then two queries; then bigger."""
    eye = torch.eye(2)[None]
    yield torch.tensor([[[1.0, 0.0]]]), eye, eye, torch.tensor([[[True, False]]])
    yield torch.tensor([[[1.0, 0.0], [0.0, 2.0]]]), eye, eye, torch.tensor([[[True, False], [True, True]]])
    q, k = torch.randn(1, 2, 2, generator=gen), torch.randn(1, 3, 2, generator=gen)
    v = torch.randn(1, 3, 3, generator=gen)
    yield q, k, v, torch.tensor([[[True, True, False], [True, False, True]]])


def _scores(q, k, scale=True):
    s = q @ k.transpose(-2, -1)
    return s / math.sqrt(q.shape[-1]) if scale else s


def _attend(weights, v):
    return weights @ v, weights


def _mask_after_softmax(q, k, v, mask):
    return _attend(torch.softmax(_scores(q, k), -1) * mask, v)


def _fill_zero(q, k, v, mask):
    return _attend(torch.softmax(_scores(q, k).masked_fill(~mask, 0.0), -1), v)


def _flipped(q, k, v, mask):
    return _attend(torch.softmax(_scores(q, k).masked_fill(mask, float("-inf")), -1), v)


def _no_scale(q, k, v, mask):
    return _attend(torch.softmax(_scores(q, k, scale=False).masked_fill(~mask, float("-inf")), -1), v)


def _divide_by_d_k(q, k, v, mask):
    s = (q @ k.transpose(-2, -1) / q.shape[-1]).masked_fill(~mask, float("-inf"))
    return _attend(torch.softmax(s, -1), v)


def _query_axis(q, k, v, mask):
    s = _scores(q, k).masked_fill(~mask, float("-inf"))
    return _attend(torch.nan_to_num(torch.softmax(s, -2)), v)


def _own_triangle(diagonal):
    """The `mask` argument ignored: a causal triangle built here instead, aligned at the
    top-left corner (diagonal 0) or, as the given masks are, at the bottom-right (n_k - n_q)."""
    def attention(q, k, v, mask):
        n_q, n_k = q.shape[-2], k.shape[-2]
        own = torch.ones(n_q, n_k, dtype=torch.bool).tril(diagonal(n_q, n_k))
        return _attend(torch.softmax(_scores(q, k).masked_fill(~own, float("-inf")), -1), v)
    return attention


def _masked_renormalized(q, k, v, mask):
    # Softmax, zero the masked weights, renormalize: the same numbers as -inf first.
    w = torch.softmax(_scores(q, k), -1) * mask
    return _attend(w / w.sum(-1, keepdim=True), v)


def _additive(q, k, v, mask):
    bias = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    w = torch.softmax(torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5 + bias, dim=-1)
    return torch.einsum("bqk,bkd->bqd", w, v), w


MASKED_ATTENTION = Exercise(
    name="masked_attention",
    reference=masked_attention_reference,
    make_inputs=_attention_inputs,
    output_names=("out", "weights"),
    mistakes=[
        Mistake("masked weights are zero but the rows no longer sum to 1: you applied the mask "
                "*after* the softmax. Set masked scores to -inf *before* it, so the softmax "
                "spreads all the weight over the allowed keys",
                _mask_after_softmax),
        Mistake("masked positions still get weight: you filled them with 0, but exp(0) = 1. "
                "Fill with -inf (exp(-inf) = 0): scores.masked_fill(~mask, float('-inf'))",
                _fill_zero),
        Mistake("mask polarity is flipped: here True = may attend, so fill where the mask is "
                "*False*: scores.masked_fill(~mask, float('-inf'))",
                _flipped),
        Mistake("the scores are not scaled: divide q kᵀ by √d_k (d_k = q.shape[-1]) before masking",
                _no_scale),
        Mistake("you divided the scores by d_k; the scale is √d_k",
                _divide_by_d_k),
        Mistake("softmax over the wrong axis: each *query's* weights (a row, over the keys) must "
                "sum to 1 — softmax(dim=-1)",
                _query_axis),
        Mistake("you ignored `mask` and built your own triangle with tril, which starts at the "
                "top-left corner. Here n_q < n_k: the queries are the *last* n_q positions, so "
                "your triangle hides keys they may see (query 0 sees only key 0). The mask you are "
                "given already says which keys each query may see — and it is not always a "
                "plain triangle",
                _own_triangle(lambda n_q, n_k: 0)),
        Mistake("you ignored `mask` and built your own causal triangle: the masks given here also "
                "hide keys a triangle allows (the last query loses one earlier key, as padding "
                "would). Apply the mask you are given, whatever its pattern",
                _own_triangle(lambda n_q, n_k: n_k - n_q)),
    ],
    alternatives=[
        _masked_renormalized,
        _additive,
        lambda q, k, v, m: _attend(torch.softmax(_scores(q, k).masked_fill(~m, -1e9), -1), v),
        lambda q, k, v, m: (F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                            torch.softmax(_scores(q, k).masked_fill(~m, float("-inf")), -1)),
    ],
    properties=[rows_are_distributions(1, "weights"), blocked_weights_are_zero(3),
                blocked_keys_ignored(3), out_is_weights_times_v()],
    small_inputs=_masked_small,
)


def check_masked_attention(fn):
    """Check a learner's `masked_attention(q, k, v, mask)` -> (out, weights)."""
    return MASKED_ATTENTION.check(fn)
