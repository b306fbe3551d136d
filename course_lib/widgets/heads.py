"""Widgets for lesson 04: pick a layer, a head and an example; see where that head looks."""
from __future__ import annotations

import ipywidgets as W
from ..experiments.toy_tasks import attention_by_layer, relation_masks, token_labels
from ..viz.heads import AttentionMaps
from ._wiring import live_figure

__all__ = ["head_explorer"]


def head_explorer(model, tokens):
    """Sliders for layer, head and example over a trained bindings model.

    tokens: (examples, n) token ids of the bindings task. The model runs once here, on
    all examples; a slider step only shows another of the (n, n) maps it produced (a new
    layer or head moves the picture, a new example draws the figure again: other tick
    labels). Rings mark the previous token, squares the binding of the query's letter.
    Returns the widget (`.draw.last_figure` for tests).
    """
    weights = attention_by_layer(model, tokens)       # per layer: (examples, h, n, n)
    prev, match = relation_masks(tokens)
    n_layers, h = len(weights), weights[0].shape[1]
    plot = AttentionMaps(weights, [token_labels(t) for t in tokens],
                         marks={"previous token": prev, "binding of the same letter": match},
                         title=lambda example, layer, head: f"layer {layer}, head {head} (example {example})")

    style = {"description_width": "80px"}   # one label width: the controls line up
    wide = {"width": "380px"}
    return live_figure(
        plot,
        example=W.IntSlider(value=0, min=0, max=len(tokens) - 1, description="example", style=style, layout=wide),
        layer=W.IntSlider(value=0, min=0, max=n_layers - 1, description="layer", style=style, layout=wide),
        head=W.IntSlider(value=0, min=0, max=h - 1, description="head", style=style, layout=wide),
    )
