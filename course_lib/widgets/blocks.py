"""Widgets for lesson 05: how the wiring of a block changes what reaches each layer."""
from __future__ import annotations

from functools import lru_cache

import ipywidgets as W

from ..experiments.stacks import ARRANGEMENTS, layer_profile
from ..viz.blocks import LayerProfilePlot
from ._wiring import live_figure

__all__ = ["depth_explorer"]


@lru_cache(maxsize=256)
def _profile(wiring, depth):
    residual, norm = ARRANGEMENTS[wiring]
    grads, rms = layer_profile(depth, residual, norm, batch_size=8)
    return tuple(grads), tuple(rms)


def depth_explorer(wiring="plain", depth=12, max_depth=24):
    """A wiring menu (plain, residual only, LayerNorm only, post-norm, pre-norm) and a
    depth slider; the figure shows, for a freshly initialised stack on the bindings
    task, each block's gradient norm and the size of the residual stream after it.

    Each (wiring, depth) is computed once (one forward and backward pass, well under a
    second) and remembered; the figure itself is built once and only its curves, ticks
    and title are drawn again. Returns the widget (`.draw.last_figure` for tests).
    """
    if wiring not in ARRANGEMENTS:
        raise ValueError(f"wiring must be one of {list(ARRANGEMENTS)}, got {wiring!r}")
    if not 1 <= depth <= max_depth:
        raise ValueError(f"depth must be in 1..{max_depth}, got {depth}")
    plot = LayerProfilePlot(_profile, title=lambda wiring, depth: f"{wiring}, {depth} blocks (freshly initialised)")

    style = {"description_width": "80px"}   # one label width: the controls line up
    wide = {"width": "380px"}
    return live_figure(
        plot,
        wiring=W.Dropdown(options=list(ARRANGEMENTS), value=wiring, description="wiring", style=style, layout=wide),
        depth=W.IntSlider(value=depth, min=1, max=max_depth, description="blocks", style=style, layout=wide),
    )
