"""Rotary positions inside attention (lesson 03's modern follow-up).

`course_lib.nn.positional.apply_rotary` rotates every pair of features (x_2i, x_2i+1) of a
vector at position m by the angle m·ω_i. Applied to the queries and the keys (never to
the values) it turns the score of query m and key n into

    q_m · k_n = (R_m q)ᵀ (R_n k) = qᵀ R_mᵀ R_n k = qᵀ R_{n-m} k,

a function of the content (q, k) and of the offset n - m only. This module holds the
two places the lesson uses that: the score matrix of a sequence, and a self-attention
layer with rotary positions (used in the extrapolation experiment). Lesson 11 adds the
bridge between the two ways real models lay the pairs out (`interleaved_order`).
"""

import torch

import torch.nn.functional as F

from .._checks import check_float, check_ndim, check_last_dim, check_positive_int, check_same_last_dim
from .attention import scaled_dot_product_attention
from .layers import MultiHeadAttention
from .positional import _check_base, apply_rotary

__all__ = ["rotary_scores", "RotarySelfAttention", "interleaved_order"]


def rotary_scores(q, k, base=10000.0, q_offset=0, k_offset=0):
    """Unscaled attention scores with rotary positions: S[m, n] = (R_m q_m) · (R_n k_n).

    q: (..., n_q, d), k: (..., n_k, d), d even. Query row j sits at position q_offset + j,
    key row j at k_offset + j. Returns (..., n_q, n_k). Shifting both offsets by the same
    amount leaves the result unchanged (up to rounding): only n - m matters.
    """
    check_float("q", q)
    check_float("k", k)
    check_same_last_dim(q=q, k=k)
    return apply_rotary(q, base, q_offset) @ apply_rotary(k, base, k_offset).transpose(-2, -1)


def interleaved_order(d):
    """The feature order that turns Llama's "halves" pairs into lesson 03's "interleaved" ones.

    Hugging Face's Llama rotates the pairs (x_i, x_i+d/2); lesson 03 and llama.cpp rotate
    (x_2i, x_2i+1). Listing the features as x_0, x_d/2, x_1, x_d/2+1, … turns one layout
    into the other, so for any x (..., n, d) and order = interleaved_order(d):

        apply_rotary(x[..., order], pairs="interleaved") == apply_rotary(x, pairs="halves")[..., order]

    llama.cpp's GGUF files store each head's rows of W^Q and W^K in this order; a loader
    for the "halves" layout undoes it with `order.argsort()`. Returns int64 (d,).
    """
    check_positive_int("d", d)
    if d % 2:
        raise ValueError(f"d={d} is odd; rotary needs an even feature size (pairs of dims)")
    half = torch.arange(d // 2)
    return torch.stack((half, half + d // 2), dim=1).flatten()


class RotarySelfAttention(MultiHeadAttention):
    """Multi-head self-attention with rotary positions on q and k (RoPE, Su et al. 2021).

    Same weights as `MultiHeadAttention` (w_q, w_k, w_v, w_o); the only change is that each
    head's q and k are rotated by position before the scores. No positional vector is
    added to the input, so a model built from these layers needs no positional encoding.
    Each head's d_k = d_model / h must be even.

    x: (batch, n, d_model) -> (batch, n, d_model). mask as in MultiHeadAttention.
    offset: the position of the first row (default 0). Because the scores depend on
    relative positions only, the output does not change with offset (up to rounding).
    need_weights=True returns (out, weights) with weights (batch, h, n, n).
    """

    def __init__(self, d_model, h, dropout=0.0, bias=True, base=10000.0):
        super().__init__(d_model, h, dropout, bias)
        if self.d_k % 2:
            raise ValueError(
                f"d_model/h = {self.d_k} is odd; rotary positions rotate pairs of features, "
                "so each head needs an even d_k"
            )
        _check_base(base)
        self.base = base

    def forward(self, x, mask=None, offset=0, need_weights=False):
        check_float("x", x)
        check_ndim("x", x, 3, "(batch, n, d_model)")
        check_last_dim("x", x, self.d_model)
        if mask is not None:
            self._check_mask(mask, (x.shape[0], self.h, x.shape[1], x.shape[1]))
        q = apply_rotary(self.split_heads(self.w_q(x)), self.base, offset)  # (batch, h, n, d_k)
        k = apply_rotary(self.split_heads(self.w_k(x)), self.base, offset)  # (batch, h, n, d_k)
        v = self.split_heads(self.w_v(x))  # values carry content only: no rotation
        p = self.dropout if self.training else 0.0
        if need_weights:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=p)
            return self.w_o(self.merge_heads(out)), weights
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        return self.w_o(self.merge_heads(out))

    def extra_repr(self):
        return super().extra_repr() + f", base={self.base:g}"
