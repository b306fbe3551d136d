"""The pieces of a Transformer block (lessons 04, 05, 07).

MultiHeadAttention, the position-wise FeedForward network, LayerNorm, and the encoder
and decoder layers that wire them together with residual connections ("Add & Norm").

All tensors are batch-first: (batch, n, d_model). Masks are bool, True = may attend,
broadcastable to the per-head scores (batch, h, n_q, n_k) — see `course_lib.nn.attention`.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    check_choice,
    check_divisible,
    check_float,
    check_last_dim,
    check_mask,
    check_ndim,
    check_positive_int,
    check_probability,
)
from .attention import scaled_dot_product_attention

__all__ = ["MultiHeadAttention", "FeedForward", "LayerNorm", "EncoderLayer", "DecoderLayer"]

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _check_activations(name, x, d_model):
    check_float(name, x)
    check_ndim(name, x, 3, "(batch, n, d_model)")
    check_last_dim(name, x, d_model)


class MultiHeadAttention(nn.Module):
    """h attention heads in parallel, each on its own d_k = d_model / h slice.

        head_i = Attention(x_q W^Q_i, x_kv W^K_i, x_kv W^V_i)
        MultiHead(x_q, x_kv) = Concat(head_1, ..., head_h) W^O

    All heads' W^Q_i side by side form one (d_model, d_model) matrix, so the projection
    is one nn.Linear (`w_q`, `w_k`, `w_v`, `w_o`); the heads are then split by a
    reshape (batch, n, d_model) -> (batch, h, n, d_k), i.e. heads become a batch axis.

    Self-attention: forward(x). Cross-attention: forward(x_q, x_kv), queries from x_q,
    keys and values from x_kv.
    """

    def __init__(self, d_model, h, dropout=0.0, bias=True):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("h", h)
        check_divisible(d_model, h)
        check_probability("dropout", dropout)
        self.d_model, self.h, self.d_k = d_model, h, d_model // h
        self.dropout = dropout  # on the attention weights, as nn.MultiheadAttention does
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        # When True (see models.collect_attention) every forward keeps its weights here.
        self.keep_weights = False
        self.last_weights = None

    def split_heads(self, x):
        """(batch, n, d_model) -> (batch, h, n, d_k): a view, no copy."""
        batch, n, _ = x.shape
        return x.view(batch, n, self.h, self.d_k).transpose(1, 2)

    def merge_heads(self, x):
        """(batch, h, n, d_k) -> (batch, n, d_model): concatenate the heads again."""
        batch, _, n, _ = x.shape
        return x.transpose(1, 2).reshape(batch, n, self.d_model)

    def forward(self, x_q, x_kv=None, mask=None, need_weights=False):
        """x_q: (batch, n_q, d_model); x_kv: (batch, n_k, d_model), default x_q.

        mask: bool, True = may attend, shape (n_q, n_k) or 4-D broadcastable to
        (batch, h, n_q, n_k), e.g. `causal_mask(n)` or `padding_mask(tokens, pad)`.
        Returns out (batch, n_q, d_model), or (out, weights) with per-head weights
        (batch, h, n_q, n_k) when need_weights=True.
        """
        x_kv = x_q if x_kv is None else x_kv
        _check_activations("x_q", x_q, self.d_model)
        _check_activations("x_kv", x_kv, self.d_model)
        batch, n_q, n_k = x_q.shape[0], x_q.shape[1], x_kv.shape[1]
        if x_kv.shape[0] != batch:
            raise ValueError(f"x_q has batch={batch} but x_kv has batch={x_kv.shape[0]}")
        if mask is not None:
            self._check_mask(mask, (batch, self.h, n_q, n_k))

        q = self.split_heads(self.w_q(x_q))  # (batch, h, n_q, d_k)
        k = self.split_heads(self.w_k(x_kv))  # (batch, h, n_k, d_k)
        v = self.split_heads(self.w_v(x_kv))  # (batch, h, n_k, d_k)
        p = self.dropout if self.training else 0.0
        weights = None
        if need_weights or self.keep_weights:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=p)
            if self.keep_weights:
                self.last_weights = weights.detach()
        else:
            # Fast path: the same softmax(q kᵀ/√d_k) v in one fused kernel that never
            # stores the (n_q, n_k) weights. Same mask polarity; fully masked rows give 0.
            # (With dropout in training the two paths draw different random masks.)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        out = self.w_o(self.merge_heads(out))  # (batch, n_q, d_model)
        return (out, weights) if need_weights else out

    @staticmethod
    def _check_mask(mask, scores_shape):
        check_mask(mask, scores_shape)
        # A 3-D mask (batch, n_q, n_k) would line its batch axis up with the heads axis.
        if mask.dim() not in (2, 4):
            raise ValueError(
                f"mask has shape {tuple(mask.shape)}; multi-head attention needs (n_q, n_k) "
                "or 4-D (batch, 1 or h, n_q or 1, n_k) — add the heads axis with mask[:, None]"
            )

    def extra_repr(self):
        return f"d_model={self.d_model}, h={self.h}, d_k={self.d_k}, dropout={self.dropout}"


class FeedForward(nn.Module):
    """FFN(x) = W_2 ReLU(W_1 x + b_1) + b_2, the same small MLP at every position.

    x: (..., d_model) -> (..., d_model); hidden size d_ff (4·d_model in the paper).
    """

    def __init__(self, d_model, d_ff, dropout=0.0, activation="relu"):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_probability("dropout", dropout)
        check_choice("activation", activation, ACTIVATIONS)
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.activation = activation
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        check_float("x", x)
        check_last_dim("x", x, self.w_1.in_features)
        return self.w_2(self.dropout(ACTIVATIONS[self.activation](self.w_1(x))))

    def extra_repr(self):
        return f"activation={self.activation!r}"


class LayerNorm(nn.Module):
    """z-score every position's feature vector, then scale by γ and shift by β.

        LN(x) = (x - mean) / √(var + eps) · γ + β      (over the last axis)

    var is the biased variance (divide by d_model), as in nn.LayerNorm; γ and β are
    named `weight` and `bias` so the state_dict matches nn.LayerNorm's.
    x: (..., d_model) -> (..., d_model).

    fused=False runs the formula step by step, as written below. fused=True (default)
    runs the same formula in PyTorch's one-kernel F.layer_norm: the step-by-step version
    makes ~6 passes over x forward and ~15 backward, which made a whole Transformer
    about 10 % slower on CPU. Tests prove the two paths equal.
    """

    def __init__(self, d_model, eps=1e-5, fused=True):
        super().__init__()
        check_positive_int("d_model", d_model)
        self.d_model, self.eps, self.fused = d_model, eps, fused
        self.weight = nn.Parameter(torch.ones(d_model))  # γ
        self.bias = nn.Parameter(torch.zeros(d_model))  # β

    def forward(self, x):
        check_float("x", x)
        check_last_dim("x", x, self.d_model)
        if self.fused:
            return F.layer_norm(x, (self.d_model,), self.weight, self.bias, self.eps)
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased: divide by d_model
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

    def extra_repr(self):
        return f"d_model={self.d_model}, eps={self.eps}, fused={self.fused}"


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each wrapped in a residual connection and a LayerNorm.

    post-norm (2017, norm_first=False):  x = LN(x + Sublayer(x))
    pre-norm  (modern, norm_first=True): x = x + Sublayer(LN(x))
    Dropout (if any) hits each sublayer's output before it is added to x.
    x: (batch, n, d_model) -> (batch, n, d_model); mask as in MultiHeadAttention.
    """

    def __init__(self, d_model, h, d_ff, dropout=0.0, norm_first=False, activation="relu", eps=1e-5):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = LayerNorm(d_model, eps)
        self.norm2 = LayerNorm(d_model, eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        _check_activations("x", x, self.self_attn.d_model)
        if self.norm_first:
            x = x + self.dropout(self.self_attn(self.norm1(x), mask=mask))
            return x + self.dropout(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, mask=mask)))
        return self.norm2(x + self.dropout(self.ffn(x)))

    def extra_repr(self):
        return f"norm_first={self.norm_first}"


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder output, then FFN; each
    with Add & Norm (post-norm by default, pre-norm with norm_first=True).

    x: (batch, n_tgt, d_model) the target so far; memory: (batch, n_src, d_model) the
    encoder output, which supplies the keys and values of cross-attention.
    self_mask: broadcastable to (batch, h, n_tgt, n_tgt) — pass a causal mask.
    cross_mask: broadcastable to (batch, h, n_tgt, n_src) — e.g. the source padding mask.
    Returns (batch, n_tgt, d_model).
    """

    def __init__(self, d_model, h, d_ff, dropout=0.0, norm_first=False, activation="relu", eps=1e-5):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h, dropout)
        self.cross_attn = MultiHeadAttention(d_model, h, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = LayerNorm(d_model, eps)
        self.norm2 = LayerNorm(d_model, eps)
        self.norm3 = LayerNorm(d_model, eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, memory, self_mask=None, cross_mask=None):
        _check_activations("x", x, self.self_attn.d_model)
        _check_activations("memory", memory, self.self_attn.d_model)
        if self.norm_first:
            x = x + self.dropout(self.self_attn(self.norm1(x), mask=self_mask))
            x = x + self.dropout(self.cross_attn(self.norm2(x), memory, mask=cross_mask))
            return x + self.dropout(self.ffn(self.norm3(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, mask=self_mask)))
        x = self.norm2(x + self.dropout(self.cross_attn(x, memory, mask=cross_mask)))
        return self.norm3(x + self.dropout(self.ffn(x)))

    def extra_repr(self):
        return f"norm_first={self.norm_first}"
