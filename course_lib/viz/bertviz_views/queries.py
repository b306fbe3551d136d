"""Per-head queries and keys of a course model, for bertviz's neuron view."""
from __future__ import annotations

import torch

__all__ = ["collect_queries_keys"]


def collect_queries_keys(model, *inputs, **kwargs):
    """Run `model(*inputs, **kwargs)` once and return every *self*-attention layer's
    per-head queries and keys, for the neuron view.

    Works for any model built from `course_lib.nn.layers.MultiHeadAttention` (cross-attention
    modules named `cross_attn` are skipped). Returns {"queries": [...], "keys": [...]},
    one tensor (batch, h, n, d_k) per layer, in the order the layers ran.
    """
    from ...nn.layers import MultiHeadAttention

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    found = {"queries": [], "keys": []}
    hooks = []

    def keep(kind, mha):
        def hook(module, args, out):
            found[kind].append(mha.split_heads(out).detach())   # (batch, h, n, d_k)
        return hook

    for name, m in model.named_modules():
        if isinstance(m, MultiHeadAttention) and not name.endswith("cross_attn"):
            hooks.append(m.w_q.register_forward_hook(keep("queries", m)))
            hooks.append(m.w_k.register_forward_hook(keep("keys", m)))
    if not hooks:
        raise ValueError(f"{type(model).__name__} has no self-attention MultiHeadAttention modules")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(*inputs, **kwargs)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return found
