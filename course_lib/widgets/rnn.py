"""Widgets for lesson 01: why not RNNs."""
from __future__ import annotations

import ipywidgets as W

from ..viz.rnn import GradientNormPlot
from ._wiring import live_figure

__all__ = ["gradient_explorer"]


def gradient_explorer(radius=1.0, nonlinearity="tanh", input_scale=0.5):
    """Sliders on W's spectral radius ρ, the nonlinearity σ and the input strength.

    Redraws ‖∂h_t/∂h_0‖ against t (a live plot: only the curves, their labels, the title
    and the legend are drawn again). Returns the widget; `.draw.last_figure` is the last
    figure drawn (for tests).
    """
    style = {"description_width": "170px"}   # one label width: the controls line up
    wide = {"width": "460px"}
    return live_figure(
        GradientNormPlot(),
        radius=W.FloatSlider(value=radius, min=0.3, max=3.0, step=0.05,
                             description="spectral radius ρ of W", style=style, layout=wide,
                             continuous_update=False),
        nonlinearity=W.Dropdown(options=["tanh", "relu", "linear"], value=nonlinearity,
                                description="nonlinearity σ", style=style, layout=wide),
        input_scale=W.FloatSlider(value=input_scale, min=0.0, max=2.0, step=0.1,
                                  description="input strength", style=style, layout=wide,
                                  continuous_update=False),
    )
