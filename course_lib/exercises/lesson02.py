"""Lesson 02 — attention and self-attention.

Exercise 2.1 `softmax(scores)`: a numerically stable softmax over the last axis.
Exercise 2.2 `attention(q, k, v, mask=None)`: scaled dot-product attention, returning
(out, weights); checked against `course_lib.nn.attention` (which equals
`F.scaled_dot_product_attention`).
Exercise 2.3 `SelfAttention(d_model, d_k, d_v)`: an nn.Module whose bias-free nn.Linear layers
w_q, w_k, w_v hold W^Q, W^K, W^V (the names lesson 04's MultiHeadAttention uses).
Length: three exercises, each with the planted wrong answers it names (most of the file); 2.3's
plumbing (weights copied in, a bias given values) sits beside the mistakes it exposes.
"""
import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from ..nn.attention import scaled_dot_product_attention
from .feedback import (blocked_keys_ignored, blocked_weights_are_zero, out_is_weights_times_v,
                       permutation_equivariant, rows_are_distributions, unchanged_when)
from .framework import Exercise, Mistake

__all__ = ["check_softmax", "check_attention", "check_self_attention"]

NEG_INF = float("-inf")


# --------------------------------------------------------- 2.1 a stable softmax

def softmax_reference(scores):
    """scores (..., n) -> weights (..., n), each slice along the last axis sums to 1."""
    shifted = scores - scores.max(dim=-1, keepdim=True).values   # largest entry becomes 0
    e = torch.exp(shifted)                                         # so exp never overflows
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_inputs(gen):
    n, m = 5, 7                               # not square: a wrong axis cannot hide
    s = torch.randn(n, m, generator=gen) * 2.0
    big, low = torch.randperm(n, generator=gen)[:2].tolist()
    # One row of large scores, each below float32's exp limit (~88.7) but whose exp's
    # *sum* is not: without the max subtraction that row overflows.
    s[big] = 87.0 + 1.5 * torch.rand(m, generator=gen)
    # One row of very negative scores: fine for the naive formula (e^-60 is a normal float),
    # but subtracting the max of the whole tensor instead of the row's own max leaves
    # e^(-60 - 88) = 0 everywhere in that row, and 0/0 = NaN.
    s[low] = -60.0 + 1.5 * torch.rand(m, generator=gen)
    return (s,)


def _softmax_probes(gen):
    """A square input with rows of different maxima: on it the max without keepdim and the sum
    without keepdim, which crash alike on 5 × 7, give different numbers."""
    return [(torch.randn(4, 4, generator=gen) * 2 + torch.arange(4.0)[:, None] * 3,)]


def _softmax_small(gen):
    """From one row of 2 up: the counterexample search tries these in order."""
    yield (torch.tensor([[0.0, 1.0]]),)
    yield (torch.tensor([[0.0, 1.0, 2.0]]),)
    yield (torch.tensor([[0.0, 1.0], [3.0, -1.0]]),)
    yield (torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, -1.0]]),)
    for n, m in ((2, 3), (3, 4)):
        yield (torch.randn(n, m, generator=gen) * 2,)


def _shift_rows(args):
    (s,) = args
    return (s + torch.linspace(-2.0, 3.0, s.shape[0])[:, None],)


def _naive_softmax(s):
    e = torch.exp(s)
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_denominator_dim0(s):
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=0, keepdim=True)


def _softmax_denominator_whole(s, row_max=True):
    """e / e.sum(): one sum over every entry, so the whole tensor sums to 1, not each row."""
    e = torch.exp(s - (s.max(dim=-1, keepdim=True).values if row_max else s.max()))
    return e / e.sum()


WHOLE_SUM_HINT = ("you divided by the sum of the whole tensor (`e.sum()`), so all the entries "
                  "together sum to 1 and each row sums to less. Each row is its own distribution: "
                  "divide by the row's sum, `e.sum(dim=-1, keepdim=True)`")


SOFTMAX = Exercise(
    name="softmax",
    reference=softmax_reference,
    make_inputs=_softmax_inputs,
    output_names=("weights",),
    mistakes=[
        Mistake("your softmax overflowed: e^s is inf for large scores (float32 ends near e^88.7), "
                "so a row of large scores came out as zeros. Subtract each row's max first — "
                "softmax(s) = softmax(s − max s), and the largest exponent becomes e^0 = 1",
                _naive_softmax),
        Mistake("wrong axis: each row (the last axis, dim=-1) must sum to 1; you normalised "
                "each column (dim=0)",
                lambda s: torch.softmax(s, dim=0)),
        Mistake("you subtracted the max of the whole tensor; each row needs its own max "
                "(`s.max(dim=-1, keepdim=True).values`) — otherwise a row of very negative "
                "scores underflows to e^-inf = 0 everywhere, and 0/0 = NaN",
                lambda s: torch.exp(s - s.max()) / torch.exp(s - s.max()).sum(dim=-1, keepdim=True)),
        Mistake("the sum in the denominator runs over the wrong axis: use "
                "`e.sum(dim=-1, keepdim=True)`, the same axis as the max",
                _softmax_denominator_dim0),
        Mistake(WHOLE_SUM_HINT, _softmax_denominator_whole),
        Mistake(WHOLE_SUM_HINT, lambda s: _softmax_denominator_whole(s, row_max=False)),
        # The next two crash on 5 × 7 (the sum without keepdim runs on the square probe; the max
        # without .values never runs, and its TypeError names it).
        Mistake("`e.sum(dim=-1)` has one entry per row, shape (n,): without keepdim=True the summed "
                "axis is gone, so `e / sums` lines the n row sums up with the *last* axis and cannot "
                "divide. Print the sum's shape; with keepdim=True it is (n, 1), one sum per row",
                lambda s: (lambda e: e / e.sum(dim=-1))(torch.exp(s - s.max(dim=-1, keepdim=True).values))),
        Mistake("`s.max(dim=-1)` returns two tensors, (values, indices): take its `.values` (the "
                "row maxima) before subtracting",
                lambda s: s - s.max(dim=-1, keepdim=True), by_error=True),   # a TypeError, always
        # Crashes like the sum without keepdim on 5 × 7, but not on the square probe (issue 44).
        Mistake("`s.max(dim=-1).values` has one entry per row, shape (n,): without keepdim=True the "
                "max's axis is gone, so `s - m` lines the n row maxima up with the *last* axis — it "
                "cannot subtract, or (when n equals the row length) subtracts row j's max from column j. "
                "Print the max's shape; with keepdim=True it is (n, 1), one max per row",
                lambda s: (lambda e: e / e.sum(dim=-1, keepdim=True))(torch.exp(s - s.max(dim=-1).values))),
    ],
    alternatives=[
        lambda s: torch.softmax(s, dim=-1),
        lambda s: torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True)),
        lambda s: torch.stack([torch.exp(r - r.max()) / torch.exp(r - r.max()).sum() for r in s]),
    ],
    probes=_softmax_probes,
    properties=[
        rows_are_distributions(what="weights"),
        unchanged_when(_shift_rows, "your weights change when a constant is added to a row of scores, "
                                    "and softmax(s + c) = softmax(s): only differences between scores "
                                    "count"),
    ],
    small_inputs=_softmax_small,
)


def check_softmax(fn):
    """Check a learner's `softmax(scores)`; prints a verdict, never raises."""
    return SOFTMAX.check(fn)


# ------------------------------------------------ 2.2 scaled dot-product attention

def attention_reference(q, k, v, mask=None):
    """softmax(q kᵀ / √d_k) v with a True = may-attend mask; returns (out, weights)."""
    return scaled_dot_product_attention(q, k, v, mask)


def _mask(n_q, n_k, gen):
    """Every row keeps >= 1 key and blocks >= 1; every key is visible to >= 1 query
    (so even the planted mistakes stay finite and can be told apart)."""
    while True:
        m = torch.rand(n_q, n_k, generator=gen) < 0.6
        if m.any(1).all() and (~m).any(1).all() and m.any(0).all():
            return m


def _attention_inputs(gen, sizes=(2, 3, 5, 5, 4), with_mask=None):
    # n_k == d_k on purpose: then `q @ k` (K not transposed) runs and can be diagnosed. The probe
    # (sizes 2, 3, 4, 5, 2) has n_k ≠ d_k: a scale by √n_k does not pass for √d_k there.
    batch, n_q, n_k, d_k, d_v = sizes
    if with_mask is None:
        with_mask = bool(torch.rand(1, generator=gen) < 0.3)   # with seed 1234: mask, mask, None
    q = torch.randn(batch, n_q, d_k, generator=gen) * 1.5
    k = torch.randn(batch, n_k, d_k, generator=gen) * 1.5
    v = torch.randn(batch, n_k, d_v, generator=gen)
    return q, k, v, (_mask(n_q, n_k, gen) if with_mask else None)


def _attention_small(gen):
    """One query and two keys of d = 2 first; then a mask; then a little bigger."""
    eye = torch.eye(2)[None]
    yield torch.tensor([[[1.0, 0.0]]]), eye, eye, None
    yield torch.tensor([[[1.0, 0.0], [0.0, 2.0]]]), eye, eye, torch.tensor([[True, False], [True, True]])
    for n_q, n_k, d in ((2, 3, 2), (2, 3, 3)):
        q, k, v = (torch.randn(1, n, d, generator=gen) for n in (n_q, n_k, n_k))
        yield q, k, v, None


def _attn(scores_fn, softmax_dim=-1, mask_fn=None, after_softmax=False):
    """A (possibly wrong) attention built from its parts."""
    def attention(q, k, v, mask=None):
        scores = scores_fn(q, k)
        if mask is not None and not after_softmax:
            scores = mask_fn(scores, mask)
        weights = torch.softmax(scores, dim=softmax_dim)
        if mask is not None and after_softmax:
            weights = weights.masked_fill(~mask, 0.0)
        return weights @ v, weights
    return attention


def _scaled(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def _fill_blocked(scores, mask):
    return scores.masked_fill(~mask, NEG_INF)


def _scores_with_k_T(q, k):
    with warnings.catch_warnings():   # torch warns that .T on a 3-d tensor is deprecated
        warnings.simplefilter("ignore", UserWarning)
        return q @ k.T / math.sqrt(q.shape[-1])


def _attention_with_torch(q, k, v, mask=None):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = _scaled(q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask, NEG_INF)
    return out, torch.softmax(scores, dim=-1)


def _attention_einsum(q, k, v, mask=None):
    scores = torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(NEG_INF))
    weights = scores.softmax(-1)
    return torch.einsum("bqk,bkd->bqd", weights, v), weights


def _attention_scaled_by_d_v(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, NEG_INF)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def _attention_normalised_over(dims):
    """e / e.sum() (dims None) or e / e.sum(dim=(-2, -1)): every query's weights share one sum."""
    def attention(q, k, v, mask=None):
        scores = _scaled(q, k)
        if mask is not None:
            scores = scores.masked_fill(~mask, NEG_INF)
        e = torch.exp(scores - scores.amax(dim=(-2, -1), keepdim=True))
        weights = e / (e.sum() if dims is None else e.sum(dim=dims, keepdim=True))
        return weights @ v, weights
    return attention


WHOLE_MATRIX_HINT = ("you normalised over the whole score matrix (`e / e.sum()` or "
                     "`e.sum(dim=(-2, -1))`), so all the n_q × n_k weights together sum to 1 and "
                     "each query's row sums to less. Each query has its own distribution over the "
                     "keys: softmax over the last axis only, `torch.softmax(scores, dim=-1)`")


ATTENTION = Exercise(
    name="attention",
    reference=attention_reference,
    make_inputs=_attention_inputs,
    output_names=("out", "weights"),
    mistakes=[
        Mistake("wrong softmax axis: each query's weights over the keys (a row, the last axis) "
                "must sum to 1 — `torch.softmax(scores, dim=-1)`",
                _attn(_scaled, softmax_dim=-2, mask_fn=_fill_blocked)),
        Mistake("missing scaling: divide the scores by √d_k (`math.sqrt(q.shape[-1])`) "
                "before the softmax",
                _attn(lambda q, k: q @ k.transpose(-2, -1), mask_fn=_fill_blocked)),
        Mistake("you divided by d_k; the scaling is by √d_k",
                _attn(lambda q, k: q @ k.transpose(-2, -1) / q.shape[-1], mask_fn=_fill_blocked)),
        Mistake("scale by √d_k, the size of q and k — you used √d_v, the size of v",
                _attention_scaled_by_d_v),
        Mistake("K is not transposed: the scores are `q @ k.transpose(-2, -1)`, "
                "(n_q, d_k) @ (d_k, n_k) -> (n_q, n_k). `q @ k` only ran because here n_k = d_k",
                _attn(lambda q, k: q @ k / math.sqrt(q.shape[-1]), mask_fn=_fill_blocked)),
        Mistake("the mask was applied after the softmax: the remaining weights no longer sum "
                "to 1. Fill the blocked scores with -inf *before* the softmax",
                _attn(_scaled, after_softmax=True)),
        Mistake("mask polarity: in this course True means 'may attend', so block where the "
                "mask is False — `scores.masked_fill(~mask, float('-inf'))`",
                _attn(_scaled, mask_fn=lambda s, m: s.masked_fill(m, NEG_INF))),
        Mistake("a blocked score set to 0 still gets weight e^0 after the softmax; "
                "fill it with float('-inf') so its weight is exactly 0",
                _attn(_scaled, mask_fn=lambda s, m: s.masked_fill(~m, 0.0))),
        Mistake(WHOLE_MATRIX_HINT, _attention_normalised_over(None)),
        Mistake(WHOLE_MATRIX_HINT, _attention_normalised_over((-2, -1))),
        # k.T reverses all three axes, (d_k, n_k, batch): the product crashes, except on the probe
        # with batch = n_k = d_k, where it runs and is matched by its numbers.
        Mistake("`k.T` reverses *every* axis of a 3-d tensor — (batch, n_k, d_k) becomes "
                "(d_k, n_k, batch) — so the batch axes no longer line up. Transpose only the last "
                "two: `k.transpose(-2, -1)`, (batch, d_k, n_k)",
                _attn(_scores_with_k_T, mask_fn=_fill_blocked)),
        Mistake("you returned (weights, out); the function returns (out, weights), the output first",
                lambda q, k, v, mask=None: attention_reference(q, k, v, mask)[::-1]),
    ],
    alternatives=[_attention_with_torch, _attention_einsum],
    # The second probe has batch = n_k = d_k: there `k.T` runs, so its hint needs its numbers.
    probes=lambda gen: [_attention_inputs(gen, sizes=(2, 3, 4, 5, 2), with_mask=True),
                        _attention_inputs(gen, sizes=(2, 3, 2, 2, 3), with_mask=True)],
    properties=[rows_are_distributions(1, "weights"), blocked_weights_are_zero(3),
                blocked_keys_ignored(3), out_is_weights_times_v()],
    small_inputs=_attention_small,
)


def check_attention(fn):
    """Check a learner's `attention(q, k, v, mask=None)` -> (out, weights); never raises."""
    return ATTENTION.check(fn)


# ------------------------------------------------------- 2.3 a self-attention module

class SelfAttentionReference(nn.Module):
    """Single-head self-attention: Q = x W^Q, K = x W^K, V = x W^V, softmax(QKᵀ/√d_k) V.

    x: (batch, n, d_model) -> (batch, n, d_v). w_q, w_k, w_v are nn.Linear without bias, named
    as the library's layers name them (lesson 04's MultiHeadAttention has the same w_q, w_k, w_v).
    """

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x):
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)   # (batch, n, d_k), (.., d_k), (.., d_v)
        return scaled_dot_product_attention(q, k, v)[0]


def _self_attention_inputs(gen):
    batch, n, d_model, d_k, d_v = 2, 6, 7, 4, 5
    x = torch.randn(batch, n, d_model, generator=gen)
    W_q = torch.randn(d_k, d_model, generator=gen) * 0.8   # each (out, in), as nn.Linear keeps it
    W_k = torch.randn(d_k, d_model, generator=gen) * 0.8
    W_v = torch.randn(d_v, d_model, generator=gen) * 0.8
    return x, W_q, W_k, W_v


def _self_attention_small(gen):
    """One sequence of two tokens with d_model = d_k = d_v = 2 first, the weights written out."""
    eye = torch.eye(2)
    yield torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]), eye, eye, eye
    yield torch.tensor([[[1.0, 2.0], [0.0, 1.0]]]), eye, torch.tensor([[1.0, 1.0], [0.0, 1.0]]), eye
    yield (torch.randn(1, 3, 3, generator=gen), torch.randn(2, 3, generator=gen), torch.randn(2, 3, generator=gen),
           torch.randn(2, 3, generator=gen))


def _projection(module, name):
    """The learner's nn.Linear called `name`; until issue 38 the prompt said W_q, W_k, W_v, so a
    module written then is still found under that spelling."""
    layer = getattr(module, name, None)
    return layer if layer is not None else getattr(module, "W" + name[1:], None)


def _build_and_run(cls, args):
    """Build the learner's module with known weights, then run it on x.

    A bias is not asked for (Q = x W^Q), but nn.Linear adds one by default: where the learner's
    layer has one, it gets known non-zero values, so a bias that changes the output is named by
    its planted mistake rather than silently zeroed. (A bias on w_k alone cannot change it:
    q·(k_j + b) = q·k_j + q·b is the same shift for every key j, which the softmax drops.)
    """
    x, W_q, W_k, W_v = args
    with torch.random.fork_rng(devices=[]):     # their __init__ must not shift the notebook's RNG
        module = cls(W_q.shape[1], W_q.shape[0], W_v.shape[0])
    with torch.no_grad():
        for name, weight in (("w_q", W_q), ("w_k", W_k), ("w_v", W_v)):
            layer = _projection(module, name)
            if not isinstance(layer, nn.Linear):
                raise AttributeError(
                    f"{cls.__name__} needs an nn.Linear named exactly `{name}` (found "
                    f"{type(layer).__name__ if layer is not None else 'nothing'}): the check "
                    "copies known weights into self.w_q, self.w_k and self.w_v")
            layer.weight.copy_(weight)
            if getattr(layer, "bias", None) is not None:
                layer.bias.copy_(torch.linspace(-1.0, 1.0, layer.bias.shape[0]))
    return module(x)


def _self_attention_variant(scores_fn, softmax_dim=-1, keys_from_w_q=False, scale_by_d_v=False):
    class Variant(SelfAttentionReference):
        def forward(self, x):
            q, v = self.w_q(x), self.w_v(x)
            k = self.w_q(x) if keys_from_w_q else self.w_k(x)
            if scale_by_d_v:
                return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1]), dim=softmax_dim) @ v
            return torch.softmax(scores_fn(q, k, x), dim=softmax_dim) @ v
    return Variant


def _with_bias(names):
    """The reference whose layers in `names` kept nn.Linear's default bias=True."""
    class WithBias(SelfAttentionReference):
        def __init__(self, d_model, d_k, d_v):
            super().__init__(d_model, d_k, d_v)
            for name in names:
                old = getattr(self, name)
                setattr(self, name, nn.Linear(old.in_features, old.out_features))
    return WithBias


class _ReturnsWeightsToo(SelfAttentionReference):
    def forward(self, x):
        return scaled_dot_product_attention(self.w_q(x), self.w_k(x), self.w_v(x))


BIAS_HINT = ("your projections have a bias — nn.Linear adds one unless told not to — so they compute "
             "x W^Q + b instead of x W^Q (the check gives a bias non-zero values, and yours changed the "
             "output). The layer has none: nn.Linear(d_model, d_k, bias=False), and the same for "
             "w_k and w_v")


class _SelfAttentionWithTorch(SelfAttentionReference):
    def forward(self, x):
        return F.scaled_dot_product_attention(self.w_q(x), self.w_k(x), self.w_v(x))


class _SelfAttentionParameters(nn.Module):
    """Another valid layout: the matrices as Linear layers, the maths written out."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.d_k = d_k
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x):
        Q = x @ self.w_q.weight.T
        K = x @ self.w_k.weight.T
        V = x @ self.w_v.weight.T
        A = torch.einsum("bid,bjd->bij", Q, K) / math.sqrt(self.d_k)
        return A.softmax(dim=-1) @ V


def _describe_self_attention_inputs(args):
    """How a crash message names the check's inputs: x, and the weights it copied in."""
    x, W_q, W_k, W_v = args
    return (f"x {tuple(x.shape)} (batch, n, d_model), after copying known weights into "
            f"self.w_q {tuple(W_q.shape)}, self.w_k {tuple(W_k.shape)}, self.w_v {tuple(W_v.shape)} "
            f"(nn.Linear keeps its weight as (out, in)) of your class(d_model={W_q.shape[1]}, "
            f"d_k={W_q.shape[0]}, d_v={W_v.shape[0]})")


SELF_ATTENTION = Exercise(
    name="self_attention",
    reference=SelfAttentionReference,
    make_inputs=_self_attention_inputs,
    run=_build_and_run,
    describe=_describe_self_attention_inputs,
    output_names=("out",),
    mistakes=[
        Mistake("your keys use w_q: the keys need their own projection, K = x W^K (`self.w_k(x)`)",
                _self_attention_variant(lambda q, k, x: _scaled(q, k), keys_from_w_q=True)),
        Mistake("wrong softmax axis: each query's weights over the n positions (the last axis) "
                "must sum to 1",
                _self_attention_variant(lambda q, k, x: _scaled(q, k), softmax_dim=-2)),
        Mistake("missing scaling: divide Q Kᵀ by √d_k",
                _self_attention_variant(lambda q, k, x: q @ k.transpose(-2, -1))),
        Mistake("you scaled by √d_v, the size of the values; the scaling is by √d_k, the size of "
                "q and k (d_k = self.w_q.out_features), whose dot products are the scores",
                _self_attention_variant(lambda q, k, x: q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1]),
                                        scale_by_d_v=True)),
        Mistake("you scaled by √d_model; the scaling is by √d_k, the size of q and k "
                "after the projection",
                _self_attention_variant(lambda q, k, x: q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1]))),
        Mistake("your scores are K Qᵀ, the transpose: row i must hold query i's scores, Q Kᵀ",
                _self_attention_variant(lambda q, k, x: k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1]))),
        # What the output shows of a bias: on w_q (the weights move) and on w_v (every output row
        # shifts by b); with all three the output is that of w_q and w_v.
        Mistake(BIAS_HINT, _with_bias(("w_q", "w_k", "w_v"))),
        Mistake(BIAS_HINT, _with_bias(("w_q",))),
        Mistake(BIAS_HINT, _with_bias(("w_v",))),
        Mistake("your forward returns (out, weights), as the attention of exercise 2.2 does; the "
                "module returns the output alone, (batch, n, d_v) — take its [0]",
                _ReturnsWeightsToo),
    ],
    alternatives=[_SelfAttentionWithTorch, _SelfAttentionParameters,
                  _with_bias(("w_k",))],   # a bias on the keys alone cannot change the output
    input_names=("x", "self.w_q.weight", "self.w_k.weight", "self.w_v.weight"),
    small_inputs=_self_attention_small,
    properties=[permutation_equivariant(
        1, "your outputs are not permutation-equivariant: with the positions of x rotated by one, "
           "each position's output should be its old output, moved along with it (self-attention "
           "without positional encodings sees a set), and yours changed")],
)


def check_self_attention(cls):
    """Check a learner's `SelfAttention` class; prints a verdict, never raises."""
    return SELF_ATTENTION.check(cls)
