"""Widgets for lesson 09: browse the heads of the pretrained encoder."""
from __future__ import annotations

import ipywidgets as W
import torch

from ..viz.families import family_attention_maps
from ._wiring import live_figure

__all__ = ["pretrained_head_explorer"]


def pretrained_head_explorer(attention, tokens, labels=None):
    """Sentence menu, layer and head sliders over precomputed attention.

    attention: {sentence name: tensor (layers, h, n, n)} for one sentence each;
    tokens: {sentence name: list of n tokens}; labels: optional (layers × heads) pattern
    labels shown in the title. Moving a control only redraws. Returns the widget
    (`.draw.last_figure` for tests).
    """
    if not isinstance(attention, dict) or not attention:
        raise ValueError("attention must be a non-empty dict {sentence name: (layers, h, n, n)}")
    if set(attention) != set(tokens):
        raise ValueError("attention and tokens must have the same sentence names")
    shapes = {tuple(torch.as_tensor(a).shape[:2]) for a in attention.values()}
    if len(shapes) != 1 or any(torch.as_tensor(a).dim() != 4 for a in attention.values()):
        raise ValueError("every attention entry must be (layers, h, n, n) with the same layers and h")
    n_layers, h = shapes.pop()
    def update(sentence, layer, head):
        toks = tokens[sentence]
        kind = f" — {labels[layer][head]}" if labels is not None else ""
        return family_attention_maps(panels=[{"weights": attention[sentence][layer, head], "q_tokens": toks, "k_tokens": toks,
                      "title": f"layer {layer}, head {head}{kind}"}], figsize=(4.6, 4.4))

    style = {"description_width": "80px"}   # one label width: the controls line up
    wide = {"width": "380px"}
    names = list(attention)
    return live_figure(
        update,
        sentence=W.Dropdown(options=names, value=names[0], description="sentence", style=style, layout=wide),
        layer=W.IntSlider(value=0, min=0, max=n_layers - 1, description="layer", style=style, layout=wide),
        head=W.IntSlider(value=0, min=0, max=h - 1, description="head", style=style, layout=wide),
    )
