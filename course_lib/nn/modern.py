"""The pieces a 2024 decoder changed in the 2017 block (lesson 11).

- `RMSNorm`: LayerNorm without the centring and without β, x / RMS(x) · γ.
- `SwiGLU`: the feed-forward network with a gate, W_2 (SiLU(W_1 x) ⊙ W_3 x).
- `repeat_kv` and `GroupedQueryAttention`: h query heads share h_kv key/value heads;
  it *is* lesson 04's `MultiHeadAttention` (same w_q, w_o, same split into heads, same
  attention function) with smaller w_k, w_v and rotary positions on q and k.
- `KVCache`: the keys and values of the positions already seen, so generating one
  more token costs one position's work instead of the whole sequence's.

All tensors are batch-first; per-head tensors are (batch, heads, n, d_k). Masks are
bool, True = may attend (see `course_lib.nn.attention`).
"""

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    check_float,
    check_last_dim,
    check_ndim,
    check_positive_int,
    check_tensor,
)
from .attention import scaled_dot_product_attention
from .layers import MultiHeadAttention
from .positional import PAIRINGS, rotate_pairs

__all__ = ["RMSNorm", "SwiGLU", "repeat_kv", "GroupedQueryAttention", "KVCache", "decoder_mask"]


class RMSNorm(nn.Module):
    """RMSNorm(x) = x / √(mean_j x_j² + ε) · γ   (Zhang & Sennrich, 2019).

    LayerNorm (lesson 05) subtracts the mean, divides by the standard deviation, then
    scales by γ and shifts by β. RMSNorm keeps only the division (by the root mean
    square) and γ: one statistic instead of two, no β — as good in practice, cheaper.
    x: (..., d_model) -> (..., d_model). γ is named `weight`, as in nn.RMSNorm.

    fused=True (default) runs torch's one-kernel F.rms_norm; fused=False the formula
    step by step. Tests prove the two equal.
    """

    def __init__(self, d_model, eps=1e-5, fused=True):
        super().__init__()
        check_positive_int("d_model", d_model)
        self.d_model, self.eps, self.fused = d_model, eps, fused
        self.weight = nn.Parameter(torch.ones(d_model))  # γ

    def forward(self, x):
        check_float("x", x)
        check_last_dim("x", x, self.d_model)
        if self.fused:
            return F.rms_norm(x, (self.d_model,), self.weight, self.eps)
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return x / rms * self.weight

    def extra_repr(self):
        return f"d_model={self.d_model}, eps={self.eps}, fused={self.fused}"


class SwiGLU(nn.Module):
    """FFN(x) = W_2 (SiLU(W_1 x) ⊙ W_3 x), no biases (Shazeer 2020; Llama).

    Lesson 05's FFN is W_2 ReLU(W_1 x + b_1) + b_2. Here a second projection W_3 x is
    multiplied element-wise by a smooth gate SiLU(W_1 x) = W_1 x · σ(W_1 x): each hidden
    unit decides, from the input, how much of its value to let through.
    w_1: gate (d_model -> d_ff), w_3: value ("up", d_model -> d_ff), w_2: down (d_ff -> d_model).
    x: (..., d_model) -> (..., d_model).
    """

    def __init__(self, d_model, d_ff):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        self.w_1 = nn.Linear(d_model, d_ff, bias=False)
        self.w_3 = nn.Linear(d_model, d_ff, bias=False)
        self.w_2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        check_float("x", x)
        check_last_dim("x", x, self.w_1.in_features)
        return self.w_2(F.silu(self.w_1(x)) * self.w_3(x))


def repeat_kv(x, n_rep):
    """(batch, h_kv, n, d_k) -> (batch, h_kv·n_rep, n, d_k): query head j uses kv head j // n_rep.

    Each key/value head is repeated n_rep times *in place* (heads 0,0,0,1,1,1,…), so
    consecutive query heads form a group that shares one key/value head. (Tiling,
    0,1,2,0,1,2,…, would pair the heads wrongly.)
    """
    check_float("x", x)
    check_ndim("x", x, 4, "(batch, h_kv, n, d_k)")
    check_positive_int("n_rep", n_rep)
    if n_rep == 1:
        return x
    batch, h_kv, n, d_k = x.shape
    # A broadcast view (no copy) made contiguous once by the reshape.
    return x[:, :, None].expand(batch, h_kv, n_rep, n, d_k).reshape(batch, h_kv * n_rep, n, d_k)


def decoder_mask(n_q, n_k, device=None):
    """Causal mask for n_q new queries after n_k - n_q cached positions: (n_q, n_k) bool.

    Query i sits at position n_k - n_q + i and may attend to keys 0 .. that position.
    With n_q == n_k it is `causal_mask(n)`; with n_q == 1 it is all True.
    """
    check_positive_int("n_q", n_q)
    if n_k < n_q:
        raise ValueError(f"n_k={n_k} keys cannot be fewer than the n_q={n_q} queries they include")
    return torch.ones(n_q, n_k, dtype=torch.bool, device=device).tril(diagonal=n_k - n_q)


class GroupedQueryAttention(MultiHeadAttention):
    """Causal self-attention where h query heads share h_kv key/value heads (GQA).

        head_j = Attention(R q_j, R k_{g(j)}, v_{g(j)}),   g(j) = j // (h / h_kv)

    R: rotary positions (lesson 03) on queries and keys. h_kv = h is lesson 04's
    multi-head attention; h_kv = 1 is multi-query attention. Only w_k and w_v shrink,
    to (d_model -> h_kv·d_k): the KV cache shrinks by h / h_kv, the outputs keep h heads.

    pairs: how rotary pairs features ("halves" for Hugging Face's Llama weights,
    "interleaved" for lesson 03's layout).
    """

    def __init__(self, d_model, h, h_kv, bias=False, pairs="halves"):
        super().__init__(d_model, h, 0.0, bias)
        check_positive_int("h_kv", h_kv)
        if h % h_kv:
            raise ValueError(f"h={h} is not a multiple of h_kv={h_kv}; each key/value head serves "
                             "h/h_kv query heads")
        if self.d_k % 2:
            raise ValueError(f"d_model/h = {self.d_k} is odd; rotary positions need an even d_k")
        if pairs not in PAIRINGS:
            raise ValueError(f"pairs must be one of {PAIRINGS}, got {pairs!r}")
        self.h_kv, self.n_rep, self.pairs = h_kv, h // h_kv, pairs
        self.w_k = nn.Linear(d_model, h_kv * self.d_k, bias=bias)
        self.w_v = nn.Linear(d_model, h_kv * self.d_k, bias=bias)

    def split_heads(self, x):
        """(batch, n, heads·d_k) -> (batch, heads, n, d_k), for h query or h_kv kv heads."""
        batch, n, _ = x.shape
        return x.view(batch, n, -1, self.d_k).transpose(1, 2)

    def forward(self, x, rope=None, cache=None, layer=0, mask=None, need_weights=False):
        """x: (batch, n, d_model) -> (batch, n, d_model), or (out, weights (batch, h, n, n_k)).

        rope: (cos, sin), each (n, d_k/2), the rotary angles of x's positions (see
            `positional.rotary_cos_sin`); None = no positional information.
        cache: a `KVCache`; the keys/values of earlier positions come from it and x's are
            appended (slot `layer`). n_k = cached positions + n.
        mask: bool (n, n_k) or broadcastable to (batch, h, n, n_k), True = may attend;
            None = causal (`decoder_mask(n, n_k)`).
        """
        check_float("x", x)
        check_ndim("x", x, 3, "(batch, n, d_model)")
        check_last_dim("x", x, self.d_model)
        q = self.split_heads(self.w_q(x))  # (batch, h, n, d_k)
        k = self.split_heads(self.w_k(x))  # (batch, h_kv, n, d_k)
        v = self.split_heads(self.w_v(x))  # (batch, h_kv, n, d_k): values get no rotation
        if rope is not None:
            cos, sin = rope
            q, k = rotate_pairs(q, cos, sin, self.pairs), rotate_pairs(k, cos, sin, self.pairs)
        if cache is not None:
            k, v = cache.update(layer, k, v)  # (batch, h_kv, n_k, d_k), the past included
        n, n_k = x.shape[1], k.shape[2]
        if mask is not None:
            self._check_mask(mask, (x.shape[0], self.h, n, n_k))
        if need_weights or self.keep_weights:
            mask = decoder_mask(n, n_k, x.device) if mask is None else mask
            out, weights = scaled_dot_product_attention(q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep), mask)
            if self.keep_weights:
                self.last_weights = weights.detach()
        else:
            # Fast path: torch's fused kernel, which shares kv heads itself (enable_gqa).
            # One new query may see every cached key: no mask at all.
            causal = mask is None and n == n_k and n > 1
            if mask is None and 1 < n < n_k:
                mask = decoder_mask(n, n_k, x.device)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                                 enable_gqa=self.n_rep > 1)
            weights = None
        out = self.w_o(self.merge_heads(out))
        return (out, weights) if need_weights else out

    def extra_repr(self):
        return f"d_model={self.d_model}, h={self.h}, h_kv={self.h_kv}, d_k={self.d_k}, pairs={self.pairs!r}"


class KVCache:
    """The keys and values of every layer for the positions a model has already seen.

    Layer i keeps two buffers (batch, h_kv, capacity, d_k) filled up to `lengths[i]`;
    `update` writes the new positions' k and v after them and returns all of them. The
    buffers double when full, so appending is O(new positions), not a copy of the past.
    len(cache) = positions stored (in layer 0; the model updates every layer once per call).
    """

    def __init__(self, n_layers, batch, h_kv, d_k, capacity=256, dtype=torch.float32, device=None):
        for name, value in (("n_layers", n_layers), ("batch", batch), ("h_kv", h_kv), ("d_k", d_k),
                            ("capacity", capacity)):
            check_positive_int(name, value)
        self.shape = (batch, h_kv, d_k)
        shape = (batch, h_kv, capacity, d_k)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.lengths = [0] * n_layers

    def __len__(self):
        return self.lengths[0]

    @property
    def n_layers(self):
        return len(self.k)

    def update(self, layer, k, v):
        """Append k, v (batch, h_kv, n, d_k) to `layer`; return its keys and values so far,
        each (batch, h_kv, length, d_k) (views into the buffers)."""
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < self.n_layers:
            raise ValueError(f"layer must be an int in [0, {self.n_layers}), got {layer!r}")
        for name, t in (("k", k), ("v", v)):
            check_tensor(name, t)
            if t.dim() != 4 or (t.shape[0], t.shape[1], t.shape[3]) != self.shape:
                b, h_kv, d_k = self.shape
                raise ValueError(f"{name} must be (batch={b}, h_kv={h_kv}, n, d_k={d_k}), got {tuple(t.shape)}")
        start, n = self.lengths[layer], k.shape[2]
        end = start + n
        if end > self.k[layer].shape[2]:   # full: double (or more), keep what is there
            grow = max(end, 2 * self.k[layer].shape[2]) - self.k[layer].shape[2]
            pad = torch.zeros(*self.k[layer].shape[:2], grow, self.shape[2],
                              dtype=self.k[layer].dtype, device=self.k[layer].device)
            self.k[layer] = torch.cat((self.k[layer], pad), dim=2)
            self.v[layer] = torch.cat((self.v[layer], pad), dim=2)
        self.k[layer][:, :, start:end] = k
        self.v[layer][:, :, start:end] = v
        self.lengths[layer] = end
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]

    @property
    def nbytes(self):
        """Bytes held by the stored keys and values (all layers, positions filled so far)."""
        return sum(2 * k[:, :, :n].numel() * k.element_size() for k, n in zip(self.k, self.lengths))

    def __repr__(self):
        batch, h_kv, d_k = self.shape
        return (f"KVCache({self.n_layers} layers, batch={batch}, h_kv={h_kv}, d_k={d_k}, "
                f"{len(self)} positions, {self.nbytes / 1e6:.2f} MB)")
