"""Positional information: sinusoidal, learned, rotary (lesson 03).

Attention by itself is permutation-equivariant: shuffle the tokens and the outputs are
shuffled the same way. Adding a vector that depends on the position breaks the tie.

Sinusoidal encoding (Vaswani et al. 2017), for position pos and pair index i:

    PE[pos, 2i]   = sin(pos / base^(2i / d_model))
    PE[pos, 2i+1] = cos(pos / base^(2i / d_model))
"""

import torch
from torch import nn

from .._checks import check_choice, check_float, check_last_dim, check_max_length, check_ndim, check_positive_int

__all__ = [
    "sinusoidal_table",
    "shift_matrix",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
    "apply_rotary",
    "rotary_cos_sin",
    "rotate_pairs",
]


def _check_base(base):
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base must be a number, got {type(base).__name__}")
    if base <= 1:
        raise ValueError(f"base must be > 1, got base={base}")


def _frequencies(d_model, base):
    """ω_i = 1 / base^(2i / d_model) for each dimension j (pair index i = j // 2), float64."""
    i = torch.arange(d_model, dtype=torch.float64) // 2  # dims 2i and 2i+1 share a frequency
    return base ** (-2 * i / d_model)


def sinusoidal_table(length, d_model, base=10000.0):
    """The sinusoidal table: sin on even dimensions, cos on odd ones.

    Returns a float32 tensor (length, d_model); row pos is the encoding of position pos.
    An odd d_model is allowed: the last dimension is then the sine of pair (d_model-1)/2,
    with no cosine partner. Computed in float64, so it matches the closed form to
    float32 precision even at large positions.
    """
    check_positive_int("length", length)
    check_positive_int("d_model", d_model)
    _check_base(base)
    pos = torch.arange(length, dtype=torch.float64)[:, None]  # (length, 1)
    angle = pos * _frequencies(d_model, base)  # (length, d_model)
    even = torch.arange(d_model) % 2 == 0
    return torch.where(even, torch.sin(angle), torch.cos(angle)).float()


def shift_matrix(k, d_model, base=10000.0):
    """The fixed matrix M_k with PE[pos + k] = M_k @ PE[pos] for *every* pos.

    Block-diagonal, one 2x2 rotation per (sin, cos) pair, by angle k·ω_i:
        [sin(a+b)]   [ cos b  sin b] [sin a]
        [cos(a+b)] = [-sin b  cos b] [cos a]
    It depends on the offset k only, which is why a linear map (like W^Q, W^K) can
    pick out relative positions. Returns float32 (d_model, d_model); d_model must be even.
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int offset, got {type(k).__name__}")
    check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model={d_model} must be even: each sine needs its cosine partner")
    _check_base(base)
    b = k * _frequencies(d_model, base)[::2]  # one angle per pair
    cos, sin = torch.cos(b), torch.sin(b)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx], m[idx, idx + 1] = cos, sin
    m[idx + 1, idx], m[idx + 1, idx + 1] = -sin, cos
    return m.float()


class SinusoidalPositionalEncoding(nn.Module):
    """x + PE[:n] with the fixed sinusoidal table (no parameters).

    x: (batch, n, d_model) -> (batch, n, d_model). n may not exceed max_len.
    """

    def __init__(self, d_model, max_len=5000, base=10000.0):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("max_len", max_len)
        self.d_model, self.max_len = d_model, max_len
        # A buffer follows .to(device) but is not a parameter; not saved in checkpoints
        # (persistent=False) because it is recomputed exactly from d_model and base.
        self.register_buffer("pe", sinusoidal_table(max_len, d_model, base), persistent=False)

    def forward(self, x):
        check_float("x", x)
        check_ndim("x", x, 3, "(batch, n, d_model)")
        check_last_dim("x", x, self.d_model)
        check_max_length("x", x.shape[1], self.max_len)
        return x + self.pe[: x.shape[1]]

    def extra_repr(self):
        return f"d_model={self.d_model}, max_len={self.max_len}"


class LearnedPositionalEmbedding(nn.Module):
    """x + P[:n] where P (max_len, d_model) is a learned table (BERT, GPT-2).

    x: (batch, n, d_model) -> (batch, n, d_model). Positions ≥ max_len have no row:
    unlike sinusoids, a learned table cannot extrapolate (lesson 03 measures this).
    """

    def __init__(self, max_len, d_model):
        super().__init__()
        check_positive_int("max_len", max_len)
        check_positive_int("d_model", d_model)
        self.d_model, self.max_len = d_model, max_len
        self.weight = nn.Parameter(torch.randn(max_len, d_model))

    def forward(self, x):
        check_float("x", x)
        check_ndim("x", x, 3, "(batch, n, d_model)")
        check_last_dim("x", x, self.d_model)
        check_max_length("x", x.shape[1], self.max_len)
        return x + self.weight[: x.shape[1]]

    def extra_repr(self):
        return f"max_len={self.max_len}, d_model={self.d_model}"


PAIRINGS = ("interleaved", "halves")


def rotary_cos_sin(n, d, base=10000.0, offset=0, dtype=torch.float32, device=None):
    """cos(pos·ω_i) and sin(pos·ω_i) for positions offset .. offset+n-1, ω_i = base^(-2i/d).

    Returns (cos, sin), each (n, d/2): row j is position offset + j, column i pair i. The
    angles are formed in float64 (exact up to large positions), then cast to `dtype`.
    Compute them once per forward pass and hand them to `rotate_pairs` in every layer.
    """
    check_positive_int("d", d)
    if d % 2:
        raise ValueError(f"d={d} is odd; rotary needs an even feature size (pairs of dims)")
    _check_base(base)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"offset must be an int position, got {type(offset).__name__} ({offset!r})")
    pos = torch.arange(offset, offset + n, dtype=torch.float64)[:, None]
    angle = (pos * _frequencies(d, base)[::2]).to(dtype).to(device)  # (n, d/2)
    return torch.cos(angle), torch.sin(angle)


def rotate_pairs(x, cos, sin, pairs="interleaved"):
    """Rotate each pair of features (x_a, x_b) of x by the angle whose cos/sin are given.

        (x_a, x_b) -> (x_a cos - x_b sin,  x_a sin + x_b cos)

    x: (..., n, d); cos, sin: (n, d/2) from `rotary_cos_sin`. Which features form pair i:
    pairs="interleaved": (x_2i, x_2i+1) — lesson 03, the RoFormer paper, llama.cpp;
    pairs="halves":      (x_i, x_i+d/2) — Hugging Face's Llama (`rotate_half`).
    The two are the same rotation with the features listed in another order.
    """
    check_choice("pairs", pairs, PAIRINGS)
    if pairs == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def apply_rotary(x, base=10000.0, offset=0, pairs="interleaved"):
    """Rotary position embedding (RoPE): rotate each pair (x_2i, x_2i+1) by pos·ω_i.

    Applied to q and k (not v) inside attention, it makes q_m · k_n depend on the
    positions only through m - n. x: (..., n, d) with d even; position of row j is
    offset + j. pairs="halves" pairs x_i with x_i+d/2 instead (Llama's layout, lesson 11).
    Returns a tensor of the same shape.
    """
    check_float("x", x)
    if x.dim() < 2:
        raise ValueError(f"x must have at least 2 dims (..., n, d), got shape {tuple(x.shape)}")
    n, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"x has d={d}; rotary needs an even feature size (pairs of dims)")
    check_choice("pairs", pairs, PAIRINGS)
    cos, sin = rotary_cos_sin(n, d, base, offset, x.dtype, x.device)
    return rotate_pairs(x, cos, sin, pairs)
