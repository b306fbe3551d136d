"""How a check writes numbers and tensors into its messages: to 3 significant digits, a small
input written out whole, a big one by its first entry that differs (used by feedback.py, and by
the checkers through it)."""
from __future__ import annotations

import math

import torch

_SHOWN = 24             # a tensor of at most this many numbers is printed whole


def fmt(x) -> str:
    """A number, or a small tensor as nested lists, to 3 significant digits."""
    if isinstance(x, torch.Tensor):
        if x.dim() == 0:
            return fmt(x.item())
        return "[" + ", ".join(fmt(r) for r in x) + "]"
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return str(x)
        s = f"{x:.3g}"
        return "0" if s == "-0" else s
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(fmt(r) for r in x) + "]"
    return type(x).__name__


def _index(idx) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def _which(idx) -> str:
    """'0' for a one-axis index, '(0, 2)' for more."""
    idx = [int(i) for i in idx]
    return str(idx[0]) if len(idx) == 1 else "(" + ", ".join(map(str, idx)) + ")"


def first_difference(got, want, atol: float, rtol: float = 1e-4):
    """(index, got entry, wanted entry, how many differ) of the first entry of `got` that is not
    close to `want` (same shape assumed), or None."""
    g, w = got.detach().double(), want.detach().double()
    bad = ~torch.isclose(g, w, atol=atol, rtol=rtol, equal_nan=True)
    if not bad.any():
        return None
    idx = tuple(int(i) for i in bad.nonzero()[0])
    return idx, g[idx].item(), w[idx].item(), int(bad.sum())


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _same_kind(got, want) -> bool:
    got, want = _as_tuple(got), _as_tuple(want)
    return len(got) == len(want) and all(
        isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor) and g.shape == w.shape
        for g, w in zip(got, want))


def describe_small(names, args) -> str:
    """'scores = [[0, 1, 2]], temperature = 0.5' — a small input written out in full."""
    names = list(names) + [f"argument {i + 1}" for i in range(len(names), len(args))]
    parts = []
    for n, a in zip(names, args):
        if isinstance(a, torch.Tensor) and a.numel() > _SHOWN:
            parts.append(f"{n} of shape {tuple(a.shape)}")
        elif isinstance(a, torch.nn.Module):
            params = list(a.named_parameters())
            if params and sum(p.numel() for _, p in params) <= _SHOWN:
                parts.append(f"{n}: {type(a).__name__} with "
                             + ", ".join(f"{k} = {fmt(p.detach())}" for k, p in params))
            else:
                parts.append(f"{n}: {type(a).__name__}")
        elif isinstance(a, (torch.Tensor, int, float, bool, list, tuple)) or a is None:
            odd = ", an odd size" if (isinstance(a, int) and not isinstance(a, bool)
                                      and n.startswith("d_") and a % 2) else ""
            parts.append(f"{n} = {fmt(a)}{odd}")
    return ", ".join(parts)


def _not_finite(t) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point() and not torch.isfinite(t).all()


def side_by_side(got, want, names, atol: float) -> str:
    """'expected weights [[0.269, 0.731]], yours [[-1, 0]]' for the first output that differs;
    a big tensor is shown by its first differing entry."""
    for name, g, w in zip(names, _as_tuple(got), _as_tuple(want)):
        if not (isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor)):
            continue
        if g.shape != w.shape:
            return f"expected {name} of shape {tuple(w.shape)}, yours has shape {tuple(g.shape)}"
        diff = first_difference(g, w, atol)
        if diff is None:
            continue
        if w.numel() <= _SHOWN:
            return f"expected {name} = {fmt(w)}, yours {fmt(g)}"
        idx, gv, wv, n_bad = diff
        return (f"expected {name}{_index(idx)} = {fmt(wv)}, yours {fmt(gv)} "
                f"({n_bad} of its {w.numel()} entries differ)")
    return "the outputs differ"


def _raised(res) -> str:
    """'RuntimeError: The size of tensor a (3) … (line 2 in rms_norm — `return …`)'."""
    where = f" ({res.where})" if getattr(res, "where", "") else ""
    return f"{type(res.error).__name__}: {res.error}{where}"
