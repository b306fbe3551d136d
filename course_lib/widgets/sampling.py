"""Widgets for lesson 06: sample from a character model with prompt, temperature, top-k."""
from __future__ import annotations

import time

import ipywidgets as W
import torch

from ..nn.decoding import generate_text, lm_step, next_token_probs
from ..viz.sampling import SamplePanel
from ._wiring import live_figure

__all__ = ["sampling_explorer"]

CONTROL_STYLE = {"description_width": "110px"}   # one label width: the controls line up


def sampling_controls(prompt, top_k_max, top_k_value=0):
    """The controls lessons 06 and 11 share: a prompt box, temperature, top-k (0 = off), seed."""
    return dict(
        prompt=W.Textarea(value=prompt, description="prompt", rows=2, continuous_update=False, style=CONTROL_STYLE,
                          layout={"width": "600px"}),
        temperature=W.FloatSlider(value=0.8, min=0.0, max=2.0, step=0.05, description="temperature T",
                                  continuous_update=False, style=CONTROL_STYLE, layout={"width": "420px"}),
        top_k=W.IntSlider(value=top_k_value, min=0, max=top_k_max, description="top-k (0 = off)",
                          continuous_update=False, style=CONTROL_STYLE, layout={"width": "420px"}),
        seed=W.IntSlider(value=0, min=0, max=20, description="seed", continuous_update=False, style=CONTROL_STYLE,
                         layout={"width": "420px"}),
    )


STREAM_EVERY = 0.4   # seconds between two partial figures while a sample grows


def _first_step_logits(model, vocab, prompt, memo):
    """Logits for the first new character after `prompt`, remembered for the last prompt
    (moving T, top-k or the seed does not change them)."""
    if memo.get("prompt") != prompt:
        with torch.no_grad():
            was_training = model.training
            model.eval()
            try:
                memo["logits"] = lm_step(model)(vocab.encode(prompt or "\n")[None])[0]
            finally:
                model.train(was_training)
        memo["prompt"] = prompt
    return memo["logits"]


def _draw_sample(show, model, vocab, memo, plot, prompt, temperature, top_k, length, seed):
    """Sample `length` characters after `prompt` and draw them with the first-step distribution.

    Shown at once: the distribution (one forward pass, or none for a prompt seen last time);
    then the text as it grows, every STREAM_EVERY s; `show()` drops the work when the
    learner has moved on. plot: the explorer's `SamplePanel`: each picture redraws only
    the bars and the text on the same figure.
    """
    prompt = "".join(c for c in prompt if c in vocab.stoi)   # drop characters the model never saw
    k = None if top_k == 0 else int(top_k)
    probs = next_token_probs(_first_step_logits(model, vocab, prompt, memo), temperature, k)

    def panel(text, pending):
        return plot(prompt=prompt, text=text, probs=probs, temperature=temperature, top_k=k, pending=pending)

    show(lambda: panel(prompt, True))
    last = [time.monotonic()]

    def on_step(tokens):
        if time.monotonic() - last[0] < STREAM_EVERY:
            return show()                       # only: has the learner moved on?
        text = vocab.decode(tokens[0])
        show(lambda: panel(text if prompt else text[1:], True))
        last[0] = time.monotonic()

    text = generate_text(model, vocab, prompt, length, temperature, k, seed, on_step=on_step)
    return panel(text, False)


def sampling_explorer(model, vocab, prompt="ROMEO:\n", length=160):
    """Sliders for temperature, top-k, length and seed, and a text box for the prompt.

    model: a decoder-only LM (tokens (1, n) -> logits (1, n, vocab)); vocab: a
    `course_lib.data.shakespeare.CharVocab`. top-k = 0 means no top-k filter; T = 0 is greedy.
    The same settings always give the same text (the seed fixes the draw). A change shows
    the first character's distribution at once, then the sample as it grows.
    Returns the widget; `.draw.last_figure` is the latest figure.
    """
    memo, plot = {}, SamplePanel(vocab.itos)
    return live_figure(
        lambda show, **kw: _draw_sample(show, model, vocab, memo, plot, **kw), streams=True,
        **sampling_controls(prompt, top_k_max=len(vocab)),
        length=W.IntSlider(value=length, min=20, max=400, step=20, description="characters",
                           continuous_update=False, style=CONTROL_STYLE, layout={"width": "420px"}),
    )
