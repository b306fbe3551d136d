"""Widgets for lesson 06: sample from a character model with prompt, temperature, top-k."""
from __future__ import annotations

import ipywidgets as W
import torch

from ..nn.decoding import generate_text, lm_step, next_token_probs
from ..viz.sampling import sample_panel
from ._wiring import show_figure

__all__ = ["sampling_explorer"]

CONTROL_STYLE = {"description_width": "110px"}   # one label width: the controls line up


def sampling_controls(prompt, top_k_max, top_k_value=0):
    """The controls lessons 06 and 11 share: a prompt box, temperature, top-k (0 = off), seed."""
    return dict(
        prompt=W.Textarea(value=prompt, description="prompt", rows=3, continuous_update=False, style=CONTROL_STYLE,
                          layout={"width": "600px"}),
        temperature=W.FloatSlider(value=0.8, min=0.0, max=2.0, step=0.05, description="temperature T",
                                  continuous_update=False, style=CONTROL_STYLE, layout={"width": "420px"}),
        top_k=W.IntSlider(value=top_k_value, min=0, max=top_k_max, description="top-k (0 = off)",
                          continuous_update=False, style=CONTROL_STYLE, layout={"width": "420px"}),
        seed=W.IntSlider(value=0, min=0, max=20, description="seed", continuous_update=False, style=CONTROL_STYLE,
                         layout={"width": "420px"}),
    )


def _draw_sample(model, vocab, prompt, temperature, top_k, length, seed):
    """Sample `length` characters after `prompt` and draw them with the first-step distribution."""
    prompt = "".join(c for c in prompt if c in vocab.stoi)   # drop characters the model never saw
    k = None if top_k == 0 else int(top_k)
    with torch.no_grad():
        was_training = model.training
        model.eval()
        try:
            logits = lm_step(model)(vocab.encode(prompt or "\n")[None])[0]
        finally:
            model.train(was_training)
    probs = next_token_probs(logits, temperature, k)
    text = generate_text(model, vocab, prompt, length, temperature, k, seed)
    return sample_panel(prompt, text, probs, vocab.itos, temperature, k)


def sampling_explorer(model, vocab, prompt="ROMEO:\n", length=160):
    """Sliders for temperature, top-k, length and seed, and a text box for the prompt.

    model: a decoder-only LM (tokens (1, n) -> logits (1, n, vocab)); vocab: a
    `course_lib.data.shakespeare.CharVocab`. top-k = 0 means no top-k filter; T = 0 is greedy.
    The same settings always give the same text (the seed fixes the draw).
    Returns the widget; `.draw.last_figure` is the latest figure.
    """
    draw = show_figure(lambda **kw: _draw_sample(model, vocab, **kw))
    widget = W.interactive(
        draw, **sampling_controls(prompt, top_k_max=len(vocab)),
        length=W.IntSlider(value=length, min=20, max=400, step=20, description="characters",
                           continuous_update=False, style=CONTROL_STYLE, layout={"width": "420px"}),
    )
    widget.draw = draw
    return widget
