"""Widgets for lesson 00."""
from __future__ import annotations

import ipywidgets as W

__all__ = ["temperature_explorer"]

from ..viz.basics import TemperatureBars
from ._wiring import live_figure

EXAMPLE_SCORES = [2.0, 1.0, 0.5, -1.0]
EXAMPLE_LABELS = ["cat", "dog", "car", "sky"]


def temperature_explorer(scores=EXAMPLE_SCORES, labels=EXAMPLE_LABELS):
    """A slider on the softmax temperature over fixed scores. Returns the widget."""
    return live_figure(
        TemperatureBars(scores, labels),
        temperature=W.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05,
                                     description="temperature T",
                                     style={"description_width": "initial"}),
    )
