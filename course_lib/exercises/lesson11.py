"""Lesson 11 — from 2017 to today: the modern decoder's pieces.

Length: five exercises, each with its planted wrong answers, the properties of a right answer
and the small inputs the counterexample search tries (issue 44).

Exercise 11.1 `rms_norm(x, gamma, eps)`: x / √(mean(x²) + ε) · γ over the last axis.
Exercise 11.2 `apply_rope(x, base)`: rotary positions in Llama's layout, pairs (x_i, x_i+d/2).
Exercise 11.3 `swiglu(x, W1, W3, W2)`: (SiLU(x W1) ⊙ x W3) W2, matrices in math layout.
Exercise 11.4 `grouped_query_attention(q, k, v)`: causal attention where h query heads
    share h_kv key/value heads (query head j uses kv head j // (h / h_kv)).
Exercise 11.5 `cached_attention_step(q, k_new, v_new, k_cache, v_cache)`: one decoding step
    with a KV cache — append the new key and value, attend from the new query.
"""
import math

import torch
import torch.nn.functional as F

from ..nn.attention import scaled_dot_product_attention
from ..nn.positional import apply_rotary
from .feedback import Property, first_difference, fmt
from .framework import Exercise, Mistake

__all__ = ["check_rms_norm", "check_swiglu", "check_apply_rope", "check_grouped_query_attention",
           "check_cached_attention_step"]


def _int(gen, lo, hi):
    return int(torch.randint(lo, hi, (1,), generator=gen))


# ---------------------------------------------------------------- 11.1 RMSNorm
def rms_norm_reference(x, gamma, eps):
    """x: (..., d), gamma: (d,) -> (..., d)."""
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma


def _rms_inputs(gen, sizes=None):
    batch, n, d = sizes or (_int(gen, 2, 4), _int(gen, 3, 6), _int(gen, 5, 9))
    # Small activations with a non-zero mean and a large ε, so that every planted mistake
    # (where ε goes, whether the mean is removed) changes the result by far more than rounding.
    x = torch.randn(batch, n, d, generator=gen) * 0.4 + 0.3
    gamma = torch.rand(d, generator=gen) + 0.5
    return x, gamma, 0.05


def _rms_probes(gen):
    """One sequence with n = d (the trials have n < d and batch > 1): there the mean without keepdim,
    (1, n), divides (1, n, d) and runs — matched by its numbers, not by the broadcasting error that
    a sum without keepdim raises alike."""
    return [_rms_inputs(gen, sizes=(1, 5, 5))]


def _rms_one_before_gamma(args, out, again):
    """With γ = 1 each position's output has root mean square √(m / (m + ε)) ≈ 1, m = mean(x²)."""
    x, gamma, eps = args
    y = again((x, torch.ones_like(gamma), eps)).double()
    ms = x.double().pow(2).mean(-1)
    rms, want = y.pow(2).mean(-1).sqrt(), (ms / (ms + eps)).sqrt()
    bad = ((rms - want).abs() > 1e-3 * (1 + want)).nonzero()
    if len(bad):
        i = tuple(int(t) for t in bad[0])
        return (f"with γ = 1 your position {i} has root mean square {fmt(rms[i].item())}, and RMSNorm's "
                f"has √(m/(m + ε)) = {fmt(want[i].item())} with m = mean(x²): before γ, RMSNorm rescales "
                f"each position's vector to RMS 1 (a little less, by ε)")
    return None


LENGTH_HINT = ("you divided by the vector's length ‖x‖ = √(Σ_i x_i²) (x.norm(), or the root of the "
               "sum of squares): the root *mean* square has a 1/d inside the root, √((1/d) Σ_i x_i² + ε) "
               "— about ‖x‖/√d — so your outputs come out √d times too small. Print x.pow(2).mean(-1) "
               "beside x.norm(dim=-1) ** 2 for one position")


RMS_NORM = Exercise(
    name="rms_norm",
    reference=rms_norm_reference,
    make_inputs=_rms_inputs,
    mistakes=[
        Mistake("you subtracted the mean first: that is LayerNorm (without β). RMSNorm divides x "
                "itself by its root mean square √(mean(x²) + ε) — no centring",
                lambda x, g, e: (x - x.mean(-1, keepdim=True))
                / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + e) * g),
        Mistake("you divided by the standard deviation (x.var / x.std remove the mean inside). "
                "RMSNorm uses mean(x²), which equals the variance only when the mean is 0",
                lambda x, g, e: x / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + e) * g),
        Mistake(LENGTH_HINT, lambda x, g, e: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + e) * g),
        Mistake(LENGTH_HINT, lambda x, g, e: x / x.norm(dim=-1, keepdim=True) * g),
        Mistake(LENGTH_HINT, lambda x, g, e: x / (x.norm(dim=-1, keepdim=True) + e) * g),
        Mistake("you divided by mean(x²) + ε, the mean *square*; RMSNorm divides by its square root, "
                "the root mean square √(mean(x²) + ε), which has the units of x",
                lambda x, g, e: x / (x.pow(2).mean(-1, keepdim=True) + e) * g),
        Mistake("x.pow(2).mean() without dim= is one number for the whole tensor, every position of "
                "every sequence mixed; RMSNorm gives each position its own root mean square, over its "
                "d features: .mean(dim=-1, keepdim=True)",
                lambda x, g, e: x / torch.sqrt(x.pow(2).mean() + e) * g),
        # (…, n) against (…, n, d): a broadcasting crash unless n = d (the probe), then wrong values.
        Mistake("x.pow(2).mean(dim=-1) without keepdim=True has shape (…, n): the position axis of the "
                "result lines up with x's feature axis, so the division fails (or, when n = d, divides "
                "by the wrong positions' values). Print its shape; with keepdim=True it is (…, n, 1), "
                "one root mean square per position",
                lambda x, g, e: x / torch.sqrt(x.pow(2).mean(-1) + e) * g),
        Mistake("you added γ; it is a scale, multiplied element-wise: x / √(mean(x²) + ε) · γ",
                lambda x, g, e: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + e) + g),
        Mistake("ε goes inside the square root: x / √(mean(x²) + ε), not x / (√mean(x²) + ε)",
                lambda x, g, e: x / (torch.sqrt(x.pow(2).mean(-1, keepdim=True)) + e) * g),
        Mistake("ε is missing: x / √(mean(x²) + ε) — it keeps the division safe when x is near 0",
                lambda x, g, e: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True)) * g),
        Mistake("you averaged x² over the wrong axis: each position's vector is normalized on its "
                "own, over its d features — the last axis, dim=-1",
                lambda x, g, e: x / torch.sqrt(x.pow(2).mean(-2, keepdim=True) + e) * g),
        Mistake("you forgot to scale by γ (gamma): RMSNorm(x) = x / √(mean(x²) + ε) · γ",
                lambda x, g, e: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + e)),
    ],
    alternatives=[
        lambda x, g, e: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + e) * g,
        lambda x, g, e: F.rms_norm(x, (x.shape[-1],), g, e),
        lambda x, g, e: g * x / torch.sqrt(torch.linalg.vector_norm(x, dim=-1, keepdim=True) ** 2 / x.shape[-1] + e),
    ],
    properties=[Property(_rms_one_before_gamma)],
    probes=_rms_probes,
    small_inputs=lambda gen: [(torch.tensor([[3.0, 4.0]]), torch.ones(2), 0.01),
                              (torch.tensor([[3.0, 4.0]]), torch.tensor([2.0, 0.5]), 0.01),
                              (torch.tensor([[1.0, 2.0, 2.0], [0.5, -1.0, 3.0]]), torch.tensor([2.0, 1.0, 0.5]), 0.05)],
)


def check_rms_norm(fn):
    """Check a learner's `rms_norm(x, gamma, eps)`; prints a verdict, never raises."""
    return RMS_NORM.check(fn)


# ---------------------------------------------------------------- 11.2 SwiGLU
def swiglu_reference(x, W1, W3, W2):
    """x: (..., d_model); W1, W3: (d_model, d_ff); W2: (d_ff, d_model) -> (..., d_model)."""
    return (F.silu(x @ W1) * (x @ W3)) @ W2


def _swiglu_inputs(gen):
    d_model, d_ff = _int(gen, 4, 8), _int(gen, 6, 12)
    x = torch.randn(2, _int(gen, 3, 6), d_model, generator=gen)
    W1, W3 = torch.randn(d_model, d_ff, generator=gen), torch.randn(d_model, d_ff, generator=gen)
    return x, W1, W3, torch.randn(d_ff, d_model, generator=gen)


SWIGLU = Exercise(
    name="swiglu",
    reference=swiglu_reference,
    make_inputs=_swiglu_inputs,
    mistakes=[
        Mistake("you used ReLU as the gate; SwiGLU's gate is SiLU(z) = z · σ(z) (F.silu), smooth "
                "and slightly negative for z < 0",
                lambda x, a, b, c: (F.relu(x @ a) * (x @ b)) @ c),
        Mistake("you used σ(z) as the gate: that is the original GLU. SwiGLU uses SiLU(z) = z · σ(z)",
                lambda x, a, b, c: (torch.sigmoid(x @ a) * (x @ b)) @ c),
        Mistake("the gate is on the wrong branch: SiLU goes on x W1 (the gate), and x W3 (the "
                "value) passes through unchanged",
                lambda x, a, b, c: ((x @ a) * F.silu(x @ b)) @ c),
        Mistake("you added the two branches; the gate *multiplies* the value element-wise: "
                "SiLU(x W1) ⊙ (x W3)",
                lambda x, a, b, c: (F.silu(x @ a) + (x @ b)) @ c),
        Mistake("you applied SiLU after multiplying the branches; only the gate branch goes "
                "through SiLU: SiLU(x W1) ⊙ (x W3)",
                lambda x, a, b, c: F.silu((x @ a) * (x @ b)) @ c),
        Mistake("there is no activation in your FFN: (x W1 ⊙ x W3) W2 is bilinear. Put SiLU on "
                "the gate branch x W1",
                lambda x, a, b, c: ((x @ a) * (x @ b)) @ c),
    ],
    alternatives=[
        lambda x, a, b, c: ((x @ a) * torch.sigmoid(x @ a) * (x @ b)) @ c,
        lambda x, a, b, c: torch.einsum("...f,fd->...d", F.silu(torch.einsum("...d,df->...f", x, a))
                                        * torch.einsum("...d,df->...f", x, b), c),
        lambda x, a, b, c: F.linear(F.silu(F.linear(x, a.T)) * F.linear(x, b.T), c.T),
    ],
    small_inputs=lambda gen: [
        (torch.tensor([[1.0]]), torch.tensor([[1.0]]), torch.tensor([[2.0]]), torch.tensor([[1.0]])),
        (torch.tensor([[1.0, -1.0]]), torch.eye(2), torch.tensor([[1.0, 2.0], [0.0, 1.0]]), torch.eye(2)),
        (torch.randn(2, 2, generator=gen), torch.randn(2, 3, generator=gen), torch.randn(2, 3, generator=gen),
         torch.randn(3, 2, generator=gen))],
)


def check_swiglu(fn):
    """Check a learner's `swiglu(x, W1, W3, W2)`; prints a verdict, never raises."""
    return SWIGLU.check(fn)


# ---------------------------------------------------------------- 11.3 rotary, Llama's layout
def apply_rope_reference(x, base):
    """x: (..., n, d), d even; row j at position j -> same shape, pairs (x_i, x_i+d/2)."""
    return apply_rotary(x, base, pairs="halves")


def _rope(x, base, inv_freq=None, first=0, sign=1.0, pairs="halves", swap=False):
    """A rotary built step by step, with knobs to plant mistakes."""
    n, d = x.shape[-2], x.shape[-1]
    if inv_freq is None:
        inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = torch.arange(first, first + n, dtype=torch.float64)[:, None] * inv_freq   # (n, d/2)
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    if swap:
        cos, sin = sin, cos
    sin = sign * sin
    if pairs == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def _rope_hf_style(x, base):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2).float() / d))
    freqs = torch.arange(x.shape[-2]).float()[:, None] * inv_freq[None]
    emb = torch.cat((freqs, freqs), dim=-1)
    rotated_half = torch.cat((-x[..., d // 2:], x[..., : d // 2]), dim=-1)
    return x * emb.cos() + rotated_half * emb.sin()


def _rope_complex(x, base):
    d = x.shape[-1]
    z = torch.complex(x[..., : d // 2].double(), x[..., d // 2:].double())
    angle = torch.arange(x.shape[-2], dtype=torch.float64)[:, None] * base ** (-torch.arange(0, d, 2) / d)
    z = z * torch.polar(torch.ones_like(angle), angle)
    return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)


def _rope_keeps_lengths(args, out, again):
    """A rotation keeps every vector's length, and position 0 is not rotated at all."""
    x = args[0]
    diff = first_difference(out[..., 0, :], x[..., 0, :], 1e-5)
    if diff is not None:
        return (f"your position 0 moved: out[..., 0, :] should equal x[..., 0, :] (a rotation by "
                f"0 · ω = 0), and entry {list(diff[0])} went from {fmt(diff[2])} to {fmt(diff[1])}")
    got, want = out.double().norm(dim=-1), x.double().norm(dim=-1)
    diff = first_difference(got, want, 1e-4)
    if diff is not None:
        return (f"your vectors changed length: position {diff[0][-1]}'s vector {list(diff[0][:-1])} had "
                f"length {fmt(diff[2])} and has {fmt(diff[1])} — a rotation keeps every length")
    return None


def _rope_inputs(gen):
    return torch.randn(2, 3, _int(gen, 5, 9), 2 * _int(gen, 2, 5), generator=gen), [10000.0, 100.0, 500.0][_int(gen, 0, 3)]


APPLY_ROPE = Exercise(
    name="apply_rope",
    reference=apply_rope_reference,
    make_inputs=_rope_inputs,
    mistakes=[
        Mistake("you rotated the interleaved pairs (x_2i, x_2i+1) of lesson 03; Llama's layout "
                "pairs feature i with feature i + d/2: x1, x2 = x[..., :d//2], x[..., d//2:]",
                lambda x, b: _rope(x, b, pairs="interleaved")),
        Mistake("you rotated the wrong way (by -θ): the rotated pair is (x1 cos θ - x2 sin θ, "
                "x1 sin θ + x2 cos θ)",
                lambda x, b: _rope(x, b, sign=-1.0)),
        Mistake("cos and sin are swapped: position 0 must leave x unchanged (cos 0 = 1, sin 0 = 0)",
                lambda x, b: _rope(x, b, swap=True)),
        Mistake("positions start at 0: the first row is position 0 and is not rotated at all",
                lambda x, b: _rope(x, b, first=1)),
        Mistake("wrong frequencies: ω_i = base^(-2i/d) for pair i = 0 .. d/2-1; you used "
                "base^(-i/d)",
                lambda x, b: _rope(x, b, inv_freq=b ** (-torch.arange(x.shape[-1] // 2, dtype=torch.float64)
                                                       / x.shape[-1]))),
        Mistake("the exponent has the wrong sign: ω_i = base^(-2i/d) gets *smaller* with i "
                "(slow rotations in the last pairs), not larger",
                lambda x, b: _rope(x, b, inv_freq=b ** (torch.arange(0, x.shape[-1], 2, dtype=torch.float64)
                                                       / x.shape[-1]))),
    ],
    alternatives=[_rope_hf_style, _rope_complex,
                  lambda x, b: apply_rotary(x, b, pairs="halves")],
    properties=[Property(_rope_keeps_lengths)],
    small_inputs=lambda gen: [(torch.tensor([[1.0, 0.0], [1.0, 0.0]]), 10000.0),
                              (torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]]), 100.0),
                              (torch.randn(1, 3, 4, generator=gen), 100.0)],
)


def check_apply_rope(fn):
    """Check a learner's `apply_rope(x, base)`; prints a verdict, never raises."""
    return APPLY_ROPE.check(fn)


# ---------------------------------------------------------------- 11.4 grouped-query attention
def _causal(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


def grouped_query_attention_reference(q, k, v):
    """q: (batch, h, n, d_k), k, v: (batch, h_kv, n, d_k) -> (batch, h, n, d_k), causal."""
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    return scaled_dot_product_attention(q, k, v, _causal(q.shape[2]))[0]


def _gqa(q, k, v, tile_k=False, tile_v=False, causal=True, scale=None, dim=-1, mask_t=False, invert=False):
    rep = q.shape[1] // k.shape[1]
    k = k.repeat(1, rep, 1, 1) if tile_k else k.repeat_interleave(rep, dim=1)
    v = v.repeat(1, rep, 1, 1) if tile_v else v.repeat_interleave(rep, dim=1)
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        mask = _causal(q.shape[2])
        mask = mask.T if mask_t else mask
        scores = scores.masked_fill(mask if invert else ~mask, float("-inf"))
    return torch.softmax(scores, dim=dim).nan_to_num(0.0) @ v


def _gqa_causal(args, out, again):
    """Changing the last key and value leaves every earlier query's output as it was."""
    q, k, v = args
    k2, v2 = k.clone(), v.clone()
    k2[:, :, -1] += 2.0
    v2[:, :, -1] += 2.0
    diff = first_difference(again((q, k2, v2))[:, :, :-1], out[:, :, :-1], 1e-5)
    if diff is None:
        return None
    b, head, i = diff[0][:3]
    return (f"your output for query {i} (head {head}) changes when only the last key and value "
            f"change: with the causal mask, query i sees keys j ≤ i only")


def _gqa_inputs(gen):
    h_kv, rep = _int(gen, 2, 4), _int(gen, 2, 4)
    batch, n, d_k = 2, _int(gen, 4, 7), 2 * _int(gen, 2, 5)
    q = torch.randn(batch, h_kv * rep, n, d_k, generator=gen)
    return q, torch.randn(batch, h_kv, n, d_k, generator=gen), torch.randn(batch, h_kv, n, d_k, generator=gen)


def _gqa_loop(q, k, v):
    rep = q.shape[1] // k.shape[1]
    heads = [scaled_dot_product_attention(q[:, j], k[:, j // rep], v[:, j // rep], _causal(q.shape[2]))[0]
             for j in range(q.shape[1])]
    return torch.stack(heads, dim=1)


GROUPED_QUERY_ATTENTION = Exercise(
    name="grouped_query_attention",
    reference=grouped_query_attention_reference,
    make_inputs=_gqa_inputs,
    mistakes=[
        Mistake("you tiled the key/value heads (0, 1, 2, 0, 1, 2, …, what `.repeat` does); query "
                "head j shares kv head j // (h / h_kv), so each kv head is repeated in place "
                "(0, 0, 1, 1, …): `repeat_interleave(h // h_kv, dim=1)`",
                lambda q, k, v: _gqa(q, k, v, tile_k=True, tile_v=True)),
        Mistake("keys and values are grouped differently: repeat both the same way, "
                "`repeat_interleave(h // h_kv, dim=1)` on k *and* v",
                lambda q, k, v: _gqa(q, k, v, tile_v=True)),
        Mistake("keys and values are grouped differently: repeat both the same way, "
                "`repeat_interleave(h // h_kv, dim=1)` on k *and* v",
                lambda q, k, v: _gqa(q, k, v, tile_k=True)),
        Mistake("the causal mask is missing: a decoder's query i may only see keys j ≤ i",
                lambda q, k, v: _gqa(q, k, v, causal=False)),
        Mistake("your causal mask is transposed: query i saw keys j ≥ i, the future, and not the "
                "past. Row i is query i and may see columns (keys) j ≤ i: True on and below the "
                "diagonal, torch.tril",
                lambda q, k, v: _gqa(q, k, v, mask_t=True)),
        Mistake("the mask is inverted: in this course True means \"may attend\" (the course's "
                "attention blocks where the mask is False), so pass the causal mask itself — True "
                "on and below the diagonal, torch.tril — not ~mask",
                lambda q, k, v: _gqa(q, k, v, invert=True)),
        Mistake("the scores are not divided by √d_k (d_k = q.shape[-1], the size of one head)",
                lambda q, k, v: _gqa(q, k, v, scale=1.0)),
        Mistake("you divided the scores by d_k; the scale is √d_k (`math.sqrt(q.shape[-1])`)",
                lambda q, k, v: _gqa(q, k, v, scale=q.shape[-1])),
        Mistake("you scaled by √(h·d_k) = √d_model; each head is scaled by its own size, "
                "√d_k (d_k = q.shape[-1])",
                lambda q, k, v: _gqa(q, k, v, scale=math.sqrt(q.shape[1] * q.shape[-1]))),
        Mistake("the softmax runs over the queries (dim=-2); each query's weights over the keys "
                "must sum to 1: softmax over the last axis",
                lambda q, k, v: _gqa(q, k, v, dim=-2)),
    ],
    alternatives=[
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
        _gqa_loop,
        lambda q, k, v: _gqa(q, k, v),
    ],
    properties=[Property(_gqa_causal)],
    small_inputs=lambda gen: [
        (torch.randn(1, h, n, 2, generator=gen), torch.randn(1, h_kv, n, 2, generator=gen),
         torch.randn(1, h_kv, n, 2, generator=gen)) for h, h_kv, n in ((2, 1, 2), (2, 1, 3), (4, 2, 3))],
)


def check_grouped_query_attention(fn):
    """Check a learner's `grouped_query_attention(q, k, v)`; prints a verdict, never raises."""
    return GROUPED_QUERY_ATTENTION.check(fn)


# ---------------------------------------------------------------- 11.5 one cached step
def cached_attention_step_reference(q, k_new, v_new, k_cache, v_cache):
    """q, k_new, v_new: (batch, h, 1, d_k); k_cache, v_cache: (batch, h, t, d_k).

    Returns (out (batch, h, 1, d_k), k_cache (batch, h, t+1, d_k), v_cache (same)).
    """
    k_cache = torch.cat((k_cache, k_new), dim=2)
    v_cache = torch.cat((v_cache, v_new), dim=2)
    out = scaled_dot_product_attention(q, k_cache, v_cache)[0]   # the newest token may see all
    return out, k_cache, v_cache


def _step(q, kn, vn, kc, vc, order="append", attend="all", scale=None, first_only=False, cat_dim=2):
    k = torch.cat((kc, kn), cat_dim) if order == "append" else torch.cat((kn, kc), cat_dim)
    v = torch.cat((vc, vn), cat_dim) if order == "append" else torch.cat((vn, vc), cat_dim)
    keys, values = {"all": (k, v), "past": (kc, vc), "new": (kn, vn)}[attend]
    scores = q @ keys.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale is None else scale)
    if first_only:   # a (1, t+1) causal triangle: the new query sees position 0 only
        scores = scores.masked_fill(~torch.ones(1, keys.shape[2], dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1) @ values, k, v


def _step_inputs(gen):
    batch, h, t, d_k = 2, _int(gen, 2, 4), _int(gen, 3, 7), 2 * _int(gen, 2, 5)
    r = lambda n: torch.randn(batch, h, n, d_k, generator=gen)   # noqa: E731
    return r(1), r(1), r(1), r(t), r(t)


def _caches_extended(args, out, again):
    """The returned caches are the old ones with the new key and value appended, in order."""
    q, k_new, v_new, k_cache, v_cache = args
    for name, got, old, new in (("k_cache", out[1], k_cache, k_new), ("v_cache", out[2], v_cache, v_new)):
        want = torch.cat((old, new), dim=2)
        if got.shape == want.shape and first_difference(got, want, 1e-6) is not None:
            return (f"your {name} is not the old cache followed by the new entry: its positions "
                    f"0 … {old.shape[2] - 1} should be the cached ones, in order, and position "
                    f"{old.shape[2]} the new one")
    return None


CACHE_AXIS_HINT = ("the cache grows along the *positions*: k_cache is (batch, h, t, d_k) and k_new "
                   "(batch, h, 1, d_k), so the new key joins on dim=2, making (batch, h, t+1, d_k). "
                   "Joined along the features (dim=-1) or the heads (dim=1), the shapes cannot fit")


CACHED_ATTENTION_STEP = Exercise(
    name="cached_attention_step",
    reference=cached_attention_step_reference,
    make_inputs=_step_inputs,
    output_names=("out", "k_cache", "v_cache"),
    mistakes=[
        Mistake("the new token attended to the past only: append k_new and v_new to the cache "
                "*before* attending — a token may attend to itself",
                lambda *a: _step(*a, attend="past")),
        Mistake("the new token attended only to itself: its query must read every cached key "
                "(the past and its own), i.e. the updated cache",
                lambda *a: _step(*a, attend="new")),
        Mistake("you put the new key and value *first*; the cache keeps positions in order, so "
                "append at the end: torch.cat((k_cache, k_new), dim=2) (the output happens to be "
                "the same, but the next step's positions would be wrong)",
                lambda *a: _step(*a, order="prepend")),
        Mistake("a causal triangle of shape (1, t+1) lets the new query see position 0 only. The "
                "newest token sits at the *last* position: it may see every cached key, no mask",
                lambda *a: _step(*a, first_only=True)),
        Mistake("the scores are not divided by √d_k (d_k = q.shape[-1])",
                lambda *a: _step(*a, scale=1.0)),
        # Concatenated along the features or the heads, the shapes do not fit (t > 1): the error,
        # "Sizes of tensors must match except in dimension 3" (or 1), names the axis.
        Mistake(CACHE_AXIS_HINT, lambda q, kn, vn, kc, vc: _step(q, kn, vn, kc, vc, cat_dim=-1), by_error=True),
        Mistake(CACHE_AXIS_HINT, lambda q, kn, vn, kc, vc: _step(q, kn, vn, kc, vc, cat_dim=1), by_error=True),
    ],
    alternatives=[
        lambda q, kn, vn, kc, vc: (F.scaled_dot_product_attention(q, torch.cat((kc, kn), 2), torch.cat((vc, vn), 2)),
                                   torch.cat((kc, kn), 2), torch.cat((vc, vn), 2)),
        lambda *a: _step(*a),
    ],
    properties=[Property(_caches_extended)],
    small_inputs=lambda gen: [
        tuple(torch.randn(1, 1, n, d, generator=gen) for n in (1, 1, 1, t, t)) for t, d in ((1, 2), (2, 2), (2, 4))],
)


def check_cached_attention_step(fn):
    """Check a learner's `cached_attention_step(q, k_new, v_new, k_cache, v_cache)`; prints a verdict."""
    return CACHED_ATTENTION_STEP.check(fn)
