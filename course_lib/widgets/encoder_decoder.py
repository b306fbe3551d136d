"""Widget for lesson 07: change the sizes, watch every shape in the encoder-decoder follow."""
from __future__ import annotations

import ipywidgets as W

from ..viz.shape_table import ShapeTable
from ._wiring import live_figure

__all__ = ["shapes_explorer"]


def shapes_explorer():
    """Sliders on batch, n_src, n_tgt, d_model, h and the target vocabulary size.

    Each new set of sizes runs a fresh model of those sizes (once: remembered) and shows
    the shapes it produced, as a table of the tensors lesson 07's diagram labels (the
    diagram itself, under these controls, would not fit a laptop screen); the table is
    drawn once, then only its shapes are drawn again. Returns the widget
    (`.draw.last_figure` for tests).
    """
    # one label width and one control width: the controls line up, the sliders are long enough
    look = dict(style={"description_width": "160px"}, layout={"width": "440px"})   # two on a line
    return live_figure(
        ShapeTable(d_ff=None, n_layers=2),        # d_ff = 4 · d_model
        batch=W.IntSlider(value=2, min=1, max=8, description="batch", **look),
        n_src=W.IntSlider(value=5, min=1, max=12, description="n_src (source length)", **look),
        n_tgt=W.IntSlider(value=3, min=1, max=12, description="n_tgt (target length)", **look),
        d_model=W.IntSlider(value=32, min=8, max=64, step=8, description="d_model", **look),
        h=W.Dropdown(options=[1, 2, 4, 8], value=4, description="heads h", **look),
        tgt_vocab=W.IntSlider(value=40, min=10, max=100, step=10, description="target vocabulary V", **look),
    )
