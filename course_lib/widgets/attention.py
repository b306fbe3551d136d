"""Widgets for lesson 02: attention and self-attention."""
from __future__ import annotations

import ipywidgets as W
import torch

from ..viz.attention import D_K_CHOICES, AttentionExplorerPlot, ScalingPlot
from ._wiring import live_figure

__all__ = ["scaling_explorer", "attention_explorer"]

_STYLE = {"description_width": "initial"}


def scaling_explorer(d_k=64, scaled=False):
    """A slider on d_k and a toggle for the ÷√d_k scaling; redraws one query's softmax
    weights and where d_k sits on the saturation curves. Returns the widget."""
    return live_figure(
        ScalingPlot(),
        d_k=W.SelectionSlider(options=list(D_K_CHOICES), value=d_k, description="d_k",
                              style=_STYLE, continuous_update=False),
        scaled=W.Checkbox(value=scaled, description="divide the scores by √d_k", style=_STYLE),
    )


def attention_explorer(tokens, scores, query=0, temperature=1.0):
    """Pick a query token and a temperature; see its weights as bars and the whole
    matrix softmax(scores / T) as a heatmap.

    tokens: n labels; scores: (n, n) attention scores, e.g. Q Kᵀ / √d_k. Returns the widget.
    """
    tokens = list(tokens)
    scores = torch.as_tensor(scores, dtype=torch.float32).detach().clone()
    if scores.shape != (len(tokens), len(tokens)):
        raise ValueError(f"scores must be ({len(tokens)}, {len(tokens)}) for {len(tokens)} tokens, "
                         f"got shape {tuple(scores.shape)}")
    return live_figure(
        AttentionExplorerPlot(tokens, scores),
        query=W.Dropdown(options=[(f"{i}: {t}", i) for i, t in enumerate(tokens)], value=query,
                         description="query token", style=_STYLE),
        temperature=W.FloatLogSlider(value=temperature, base=10, min=-1, max=1, step=0.05,
                                     description="temperature T", style=_STYLE,
                                     continuous_update=False),
    )
