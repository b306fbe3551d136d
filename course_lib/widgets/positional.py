"""Widgets for lesson 03 — positional encodings."""
from __future__ import annotations

import ipywidgets as W

from ..viz.positional import SinusoidalOverviewPlot
from ._wiring import live_figure

__all__ = ["sinusoidal_explorer"]

_STYLE = {"description_width": "130px"}   # one label width: the sliders line up
D_MODEL_MAX = 128                         # ≥ 2 screen pixels per dimension (see below)


def sinusoidal_explorer(d_model: int = 64, length: int = 100, base: float = 10000.0):
    """Sliders on d_model, the number of positions and the base of the sinusoidal table.

    Draws the table PE and its similarity matrix PE·PEᵀ. Returns the widget.
    d_model stops at 128: the table's panel is about 275 px tall, so 128 dimensions get 2
    pixels each; at 256 (1 pixel each) the alternating sin/cos rows turned into a moiré.
    """
    return live_figure(
        SinusoidalOverviewPlot(),
        d_model=W.IntSlider(value=d_model, min=8, max=D_MODEL_MAX, step=8, description="d_model",
                            continuous_update=False, style=_STYLE, layout={"width": "440px"}),
        length=W.IntSlider(value=length, min=10, max=400, step=10, description="length (positions)",
                           continuous_update=False, style=_STYLE, layout={"width": "440px"}),
        base=W.FloatLogSlider(value=base, base=10, min=1, max=5, step=0.25, description="base",
                              continuous_update=False, style=_STYLE, layout={"width": "440px"}),
    )
