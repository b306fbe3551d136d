"""Widgets for lesson 09: browse the heads of the pretrained encoder."""
from __future__ import annotations

import ipywidgets as W

from ..viz.families import PretrainedHeadMap
from ._wiring import live_figure

__all__ = ["pretrained_head_explorer"]


def pretrained_head_explorer(attention, tokens, labels=None):
    """Sentence menu, layer and head sliders over precomputed attention.

    attention: {sentence name: tensor (layers, h, n, n)} for one sentence each;
    tokens: {sentence name: list of n tokens}; labels: optional (layers × heads) pattern
    labels shown in the title. A layer or head step only redraws the map and its title
    over the kept frame; a sentence change builds the figure again (other tokens).
    Returns the widget (`.draw.last_figure` for tests).
    """
    plot = PretrainedHeadMap(attention, tokens, labels)     # checks the shapes
    style = {"description_width": "80px"}   # one label width: the controls line up
    wide = {"width": "280px"}       # the three on one line of the notebook column
    names = list(plot.maps)
    return live_figure(
        plot,
        sentence=W.Dropdown(options=names, value=names[0], description="sentence", style=style, layout=wide),
        layer=W.IntSlider(value=0, min=0, max=plot.n_layers - 1, description="layer", style=style, layout=wide),
        head=W.IntSlider(value=0, min=0, max=plot.n_heads - 1, description="head", style=style, layout=wide),
    )
