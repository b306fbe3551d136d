"""Argument checks shared by the core modules.

Every public function in `course_lib` checks its inputs up front with these helpers,
so a mistake fails at the call that made it, with a message that names the argument,
what it got and what was expected — not three layers down as a shape error inside a
matmul. Wrong kind of value (a float where token ids belong, a non-bool mask) raises
`TypeError`; right kind but wrong value or shape raises `ValueError`.
"""

import torch

__all__ = [
    "check_tensor",
    "check_float",
    "check_ndim",
    "check_last_dim",
    "check_same_last_dim",
    "check_same_length",
    "check_mask",
    "check_divisible",
    "check_positive_int",
    "check_probability",
    "check_choice",
    "check_token_ids",
    "check_max_length",
]


def _shape(x):
    return tuple(x.shape)


def check_tensor(name, x):
    """`x` must be a torch.Tensor."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")


def check_float(name, x):
    """`x` must be a floating-point tensor (activations, q/k/v, embeddings)."""
    check_tensor(name, x)
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")


def check_same_dtype(**tensors):
    """Tensors that meet in one matmul share a dtype: "q is torch.float32 but k is torch.float64"."""
    items = list(tensors.items())
    (a, x) = items[0]
    for b, y in items[1:]:
        if x.dtype != y.dtype:
            raise TypeError(f"{a} is {x.dtype} but {b} is {y.dtype}; convert one, e.g. "
                            f"{b} = {b}.to({a}.dtype)")


def check_ndim(name, x, ndim, layout):
    """`x` must have `ndim` axes; `layout` names them, e.g. "(batch, n, d_model)"."""
    if x.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dims {layout}, got shape {_shape(x)}")


def check_last_dim(name, x, size, what="d_model"):
    """The last axis of `x` must have `size` features ("x has d_model=64, expected 128")."""
    if x.shape[-1] != size:
        raise ValueError(f"{name} has {what}={x.shape[-1]} but this module expects {what}={size}")


def check_same_last_dim(**tensors):
    """Two tensors share a feature size: check_same_last_dim(q=q, k=k) -> "q has d_k=64 but k has d_k=32"."""
    (a, x), (b, y) = tensors.items()
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"{a} has d_k={x.shape[-1]} but {b} has d_k={y.shape[-1]}; they must match")


def check_same_length(**tensors):
    """Keys and values come in pairs: check_same_length(k=k, v=v) compares axis -2."""
    (a, x), (b, y) = tensors.items()
    if x.shape[-2] != y.shape[-2]:
        raise ValueError(
            f"{a} has n_k={x.shape[-2]} positions but {b} has {y.shape[-2]}; "
            "every key needs exactly one value"
        )


def check_mask(mask, scores_shape, name="mask"):
    """A bool mask (True = may attend) that broadcasts to the scores' shape.

    Broadcasting must not *grow* the scores: a (batch, 1, 1, n_k) mask against
    (batch, n_q, n_k) scores would silently produce a 4-D result, so it is an error.
    """
    check_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor (True = may attend), got {mask.dtype}")
    scores_shape = tuple(scores_shape)
    try:
        ok = torch.broadcast_shapes(mask.shape, scores_shape) == scores_shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"{name} of shape {_shape(mask)} does not broadcast to the attention scores' "
            f"shape {scores_shape} (..., n_q, n_k)"
        )


def check_divisible(d_model, h):
    """Heads split d_model evenly: each head gets d_model / h features."""
    if d_model % h != 0:
        raise ValueError(f"d_model={d_model} is not divisible by h={h}; each head needs d_model/h features")


def check_positive_int(name, value):
    """A size or count: a positive Python int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {name}={value}")


def check_probability(name, p):
    """A dropout rate in [0, 1)."""
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        raise TypeError(f"{name} must be a float in [0, 1), got {type(p).__name__}")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {name}={p}")


def check_choice(name, value, choices):
    """`value` must be one of `choices` (e.g. an activation name)."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")


def check_token_ids(name, tokens, vocab_size):
    """Integer token ids in [0, vocab_size), shaped (batch, n)."""
    check_tensor(name, tokens)
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor of token ids, got {tokens.dtype}")
    check_ndim(name, tokens, 2, "(batch, n)")
    if tokens.numel() == 0:
        return
    lo, hi = int(tokens.min()), int(tokens.max())
    if lo < 0:
        raise ValueError(f"{name}: token ids must be >= 0, got min id {lo}")
    if hi >= vocab_size:
        raise ValueError(f"{name}: token ids must be < vocab_size={vocab_size}, got max id {hi}")


def check_max_length(name, n, max_len):
    """A sequence of n positions must fit a positional table of max_len rows."""
    if n > max_len:
        raise ValueError(
            f"{name} has length {n}, longer than the positional table (max_len={max_len}); "
            "build the model with a larger max_len"
        )
