"""Scaled dot-product attention and the masks that go with it (lesson 02, 06).

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

Mask polarity, everywhere in `course_lib`: **True = may attend**. A mask is a bool
tensor that broadcasts to the scores' shape `(..., n_q, n_k)`; a False entry becomes
-inf before the softmax, so that key gets weight exactly 0. This is the polarity of
`torch.nn.functional.scaled_dot_product_attention`; `nn.MultiheadAttention` uses the
opposite one (True = blocked), see `course_lib.nn.torch_compat.to_torch_mask`.
"""

import math

import torch
import torch.nn.functional as F

from .._checks import (check_float, check_mask, check_probability, check_same_dtype, check_same_last_dim,
                      check_same_length)

__all__ = ["scaled_dot_product_attention", "safe_softmax", "causal_mask", "padding_mask"]


def safe_softmax(scores, dim=-1):
    """Softmax along `dim` where a row of all -inf gives all zeros instead of NaN.

    A plain softmax of a fully masked row is 0/0 = NaN, and one NaN spreads through
    every later layer. "Attends to nothing" is better written as zero weights, which is
    also what `F.scaled_dot_product_attention` returns.

    scores: float tensor, any shape. Returns a tensor of the same shape whose slices
    along `dim` sum to 1 (or are all 0 where every score was -inf).
    """
    check_float("scores", scores)
    nothing_allowed = torch.isneginf(scores).all(dim=dim, keepdim=True)
    # Fill those rows with 0 first so the softmax itself never sees a row of -inf.
    weights = torch.softmax(scores.masked_fill(nothing_allowed, 0.0), dim=dim)
    return weights.masked_fill(nothing_allowed, 0.0)


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0):
    """softmax(q kᵀ / √d_k) v, written out so every step can be inspected.

    q: (..., n_q, d_k)   k: (..., n_k, d_k)   v: (..., n_k, d_v)
    mask: bool, broadcastable to (..., n_q, n_k); True = may attend.
    dropout_p: dropout on the attention weights (pass 0.0 at evaluation time).

    Returns (out, weights): out (..., n_q, d_v) and weights (..., n_q, n_k), the
    attention distribution *before* dropout (what you want to look at).
    Raises ValueError naming the input if a NaN (or inf) in q, k or v made the output NaN.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_float(name, t)
    check_same_dtype(q=q, k=k, v=v)
    check_same_last_dim(q=q, k=k)
    check_same_length(k=k, v=v)
    check_probability("dropout_p", dropout_p)
    d_k = q.shape[-1]
    # Dividing by √d_k keeps the scores' variance near 1 whatever d_k is, so the
    # softmax does not saturate (lesson 02 plots why).
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., n_q, n_k)
    if mask is not None:
        check_mask(mask, scores.shape)
        scores = scores.masked_fill(~mask, float("-inf"))  # masked *before* the softmax
    weights = safe_softmax(scores, dim=-1)
    attended = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    out = attended @ v
    # One reduction on the good path: a NaN anywhere in q, k or v reaches `out`, and
    # only then are the inputs searched for the culprit (NaN weights say nothing by themselves).
    if torch.isnan(out).any():
        _explain_nan(q=q, k=k, v=v)
    return out, weights


def _explain_nan(**inputs):
    """Raise a ValueError naming the input that put NaN into attention's output:
    "q holds NaN at 3 of 96 entries (the first at index (0, 2, 1))"."""
    for bad, test in (("NaN", torch.isnan), ("inf", torch.isinf)):
        for name, t in inputs.items():
            found = test(t)
            count = int(found.sum())
            if count:
                first = tuple(int(i) for i in found.nonzero()[0])
                raise ValueError(f"{name} holds {bad} at {count} of {t.numel()} entries (the first at "
                                 f"index {first}); attention turns it into NaN weights and outputs. "
                                 f"Look at where {name} was computed")
    raise ValueError("attention produced NaN from finite q, k, v: the scores q kᵀ / √d_k overflowed "
                     f"(largest |q| {float(inputs['q'].abs().max()):.3g}, largest |k| "
                     f"{float(inputs['k'].abs().max()):.3g}, dtype {inputs['q'].dtype})")


def causal_mask(n, device=None):
    """The "no peeking at the future" triangle: position i may attend to j ≤ i.

    Returns a bool tensor (n, n), True on and below the diagonal. It broadcasts
    against scores of any shape (..., n, n).
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got n={n}")
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def padding_mask(tokens, pad_id):
    """Which keys are real tokens (True) rather than padding (False).

    tokens: integer ids (batch, n_k). Returns bool (batch, 1, 1, n_k), ready for
    multi-head scores (batch, heads, n_q, n_k): every head and every query ignores the
    same padded keys. For scores without a heads axis (batch, n_q, n_k) use
    `padding_mask(tokens, pad_id)[:, 0]`, shape (batch, 1, n_k).
    Combine with `&`: `causal_mask(n) & padding_mask(tokens, pad_id)` is (batch, 1, n, n).
    """
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"tokens must be a torch.Tensor, got {type(tokens).__name__}")
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise TypeError(f"tokens must be an integer tensor of token ids, got {tokens.dtype}")
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have 2 dims (batch, n_k), got shape {tuple(tokens.shape)}")
    if isinstance(pad_id, bool) or not isinstance(pad_id, int):
        raise TypeError(f"pad_id must be an int, got {type(pad_id).__name__}")
    return (tokens != pad_id)[:, None, None, :]
