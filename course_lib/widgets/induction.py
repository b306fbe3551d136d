"""Widgets for lesson 10: browse the heads of the induction model."""
from __future__ import annotations

import ipywidgets as W

from ..experiments.induction import attention_stack, induction_scores, previous_token_scores
from ..viz.induction import InductionHeadMap
from ._wiring import live_figure

__all__ = ["induction_head_browser"]


def induction_head_browser(model, tokens, period):
    """Layer, head and example sliders over one model's attention on [BOS, s, s].

    tokens: (examples, 1 + 2·period) ids (e.g. from `repeated_sequences`). The model
    runs once, here, on all examples; its attention and both scores are kept, so a
    slider step only redraws the map. The title shows the head's previous-token and
    induction scores on these examples. Returns the widget (`.draw.last_figure` for tests).
    """
    if tokens.dim() != 2 or tokens.shape[1] != 1 + 2 * period:
        raise ValueError(f"tokens must be (examples, {1 + 2 * period}) for period={period}, "
                         f"got {tuple(tokens.shape)}")
    attn = attention_stack(model, tokens)                  # (layers, examples, h, n, n)
    prev, ind = previous_token_scores(attn), induction_scores(attn, period)
    n_layers, n_examples, h = attn.shape[:3]
    bos = model.embed.num_embeddings - 1 if hasattr(model, "embed") else None
    labels = [["BOS" if int(t) == bos else str(int(t)) for t in row] for row in tokens]

    def title(layer, head):
        return (f"layer {layer}, head {head}: previous-token {prev[layer, head]:.2f}, "
                f"induction {ind[layer, head]:.2f}")

    style = {"description_width": "80px"}   # one label width: the controls line up
    wide = {"width": "280px"}       # the three on one line of the notebook column
    return live_figure(
        InductionHeadMap(attn, labels, period, title),
        layer=W.IntSlider(value=1, min=0, max=n_layers - 1, description="layer", style=style, layout=wide),
        head=W.IntSlider(value=0, min=0, max=h - 1, description="head", style=style, layout=wide),
        example=W.IntSlider(value=0, min=0, max=n_examples - 1, description="example", style=style, layout=wide),
    )
