"""Widget for lesson 11: generate with a real LLM — prompt, temperature, top-k, length, seed."""
from __future__ import annotations

import time

import ipywidgets as W
import torch

from ..nn.decoding import next_token_probs
from ..nn.generation import generate_text
from ..viz.llm import generation_panel
from ._wiring import live_figure
from .sampling import CONTROL_STYLE, STREAM_EVERY, sampling_controls

__all__ = ["llm_generation_explorer"]

_SHOWN = 15   # bars: the most likely next tokens (those with probability > 0)


def _special_ids(tokenizer):
    """Ids of the tokenizer's special tokens (`<|endoftext|>`, `<reponame>` …), if it has any."""
    ids = set(getattr(tokenizer, "all_special_ids", None) or [])
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return ids | {int(i) for i, t in added.items() if getattr(t, "special", False)}


def _first_step_logits(model, tokenizer, prompt, memo):
    """Logits for the first new token after `prompt` (vocab,), remembered for the last
    prompt: moving T, top-k, the length or the seed needs no forward pass."""
    if memo.get("prompt") != prompt:
        ids = torch.tensor([tokenizer.encode(prompt)])
        with torch.no_grad():
            memo["logits"] = model(ids, last_only=True)[0, -1]
        memo["prompt"] = prompt
    return memo["logits"]


def _draw(show, model, tokenizer, memo, prompt, temperature, top_k, tokens, seed):
    """Generate `tokens` new tokens after `prompt`; draw the first step's distribution and the text.

    Shown at once: the distribution; then the continuation as it grows, every
    STREAM_EVERY s; `show()` drops the work as soon as the learner has moved on.
    """
    if not prompt:
        prompt = "Once"          # an empty box: something to continue rather than an error
    k = None if top_k == 0 else int(top_k)
    probs = next_token_probs(_first_step_logits(model, tokenizer, prompt, memo), temperature, k)
    top = torch.topk(probs, min(_SHOWN, int((probs > 0).sum())))          # only tokens that can be drawn
    pieces = [tokenizer.decode([i]) for i in top.indices.tolist()]
    special = _special_ids(tokenizer)
    flags = [i in special for i in top.indices.tolist()]

    def panel(text, pending):
        continuation = text[len(prompt):] if text.startswith(prompt) else text
        return generation_panel(prompt, continuation, pieces, top.values.tolist(), temperature, k,
                                special=flags, pending=pending)

    show(lambda: panel(prompt, True))
    last = [time.monotonic()]

    def on_step(ids):
        if time.monotonic() - last[0] < STREAM_EVERY:
            return show()                       # only: has the learner moved on?
        text = tokenizer.decode(ids[0], skip_special_tokens=True)
        show(lambda: panel(text, True))
        last[0] = time.monotonic()

    text = generate_text(model, tokenizer, prompt, tokens, temperature, k, seed, on_step=on_step)
    return panel(text, False)


def llm_generation_explorer(model, tokenizer, prompt="Once upon a time", tokens=30):
    """Sliders for temperature, top-k, number of new tokens and seed, a text box for the prompt.

    model: a `course_lib.nn.llama.LlamaLM`; tokenizer: its own (`load_tokenizer()`).
    T = 0 is greedy; top-k = 0 means no filter. The same settings always give the same
    text (the seed fixes the draw). A change shows the next-token distribution at once,
    then the continuation token by token; work for a value already left is dropped.
    Returns the widget; `.draw.last_figure` is the latest figure.
    """
    memo = {}
    vocab = model.config.vocab_size
    return live_figure(
        lambda show, **kw: _draw(show, model, tokenizer, memo, **kw), streams=True,
        **sampling_controls(prompt, top_k_max=min(200, vocab), top_k_value=min(50, vocab)),
        tokens=W.IntSlider(value=tokens, min=5, max=60, step=5, description="new tokens",
                           continuous_update=False, style=CONTROL_STYLE, layout={"width": "420px"}),
    )
