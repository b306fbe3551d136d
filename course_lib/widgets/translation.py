"""Widgets for lesson 08: a translator to type into, and a label-smoothing slider."""
from __future__ import annotations

import ipywidgets as W

from ..viz.translation import LabelSmoothingBars, translation_figure
from ._wiring import live_figure, show_figure

__all__ = ["translator_widget", "label_smoothing_explorer"]


def translator_widget(model, data, text="twenty-one"):
    """Type a number (21, 4512) or English number words; see the German and the
    cross-attention behind it. Pick a decoder layer and head (or their mean).

    Bad input (unknown words, numbers outside 0 … 999 999) prints a one-line message
    instead of a traceback. Returns the widget; `.draw.last_figure` is the last figure
    drawn (None after bad input) and `.draw.message` the last message.
    """
    draw = show_figure(translation_figure)
    draw.message = ""
    layers = len(model.decoder.layers)
    heads = model.decoder.layers[0].cross_attn.h

    def update(text, layer, head):
        from ..data.translation import parse_source

        try:
            parse_source(data, text)
        except ValueError as e:
            draw.last_figure, draw.message = None, f"⚠️ {e}"
            print(draw.message)
            return
        draw.message = ""
        draw(model=model, data=data, text=text, layer=layer, head=head)

    widget = W.interactive(
        update,
        text=W.Text(value=text, description="English or a number", continuous_update=False,
                    style={"description_width": "initial"}, layout=W.Layout(width="390px")),
        layer=W.Dropdown(options=[("mean of layers", -1)] + [(f"layer {i}", i) for i in range(layers)],
                         value=-1, description="decoder layer", style={"description_width": "initial"},
                         layout=W.Layout(width="250px")),
        head=W.Dropdown(options=[("mean of heads", -1)] + [(f"head {i}", i) for i in range(heads)],
                        value=-1, description="head", style={"description_width": "initial"},
                        layout=W.Layout(width="200px")),
    )
    # The three controls on one line, the figure under them: the map of a long number and its
    # controls fit a laptop screen (1366 × 768) beside JupyterLab's file browser.
    widget.layout.flex_flow = "row wrap"
    widget.children[-1].layout.flex = "0 0 100%"
    widget.draw = draw
    return widget


def label_smoothing_explorer(vocab_size=35, right=4):
    """A slider on ε: the smoothed target and the loss floor it implies (the figure is
    built once; a step draws again only what ε moves)."""
    return live_figure(
        LabelSmoothingBars(vocab_size=vocab_size, right=right),
        smoothing=W.FloatSlider(value=0.1, min=0.0, max=0.5, step=0.02, description="smoothing ε",
                                style={"description_width": "initial"}),
    )
