"""Widget for lesson 11: generate with a real LLM — prompt, temperature, top-k, length, seed."""
from __future__ import annotations

import ipywidgets as W
import torch

from ..nn.decoding import next_token_probs
from ..nn.generation import generate_text
from ..viz.llm import generation_panel
from ._wiring import show_figure
from .sampling import CONTROL_STYLE, sampling_controls

__all__ = ["llm_generation_explorer"]

_SHOWN = 15   # bars: the most likely next tokens (those with probability > 0)


def _special_ids(tokenizer):
    """Ids of the tokenizer's special tokens (`<|endoftext|>`, `<reponame>` …), if it has any."""
    ids = set(getattr(tokenizer, "all_special_ids", None) or [])
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return ids | {int(i) for i, t in added.items() if getattr(t, "special", False)}


def _draw(model, tokenizer, prompt, temperature, top_k, tokens, seed):
    """Generate `tokens` new tokens after `prompt`; draw the first step's distribution and the text."""
    if not prompt:
        prompt = "Once"          # an empty box: something to continue rather than an error
    k = None if top_k == 0 else int(top_k)
    ids = torch.tensor([tokenizer.encode(prompt)])
    with torch.no_grad():
        logits = model(ids, last_only=True)[0, -1]
    probs = next_token_probs(logits, temperature, k)
    top = torch.topk(probs, min(_SHOWN, int((probs > 0).sum())))          # only tokens that can be drawn
    pieces = [tokenizer.decode([i]) for i in top.indices.tolist()]
    special = _special_ids(tokenizer)
    text = generate_text(model, tokenizer, prompt, tokens, temperature, k, seed)
    continuation = text[len(prompt):] if text.startswith(prompt) else text
    return generation_panel(prompt, continuation, pieces, top.values.tolist(), temperature, k,
                            special=[i in special for i in top.indices.tolist()])


def llm_generation_explorer(model, tokenizer, prompt="Once upon a time", tokens=30):
    """Sliders for temperature, top-k, number of new tokens and seed, a text box for the prompt.

    model: a `course_lib.nn.llama.LlamaLM`; tokenizer: its own (`load_tokenizer()`).
    T = 0 is greedy; top-k = 0 means no filter. The same settings always give the same
    text (the seed fixes the draw). Returns the widget; `.draw.last_figure` is the latest figure.
    """
    draw = show_figure(lambda **kw: _draw(model, tokenizer, **kw))
    vocab = model.config.vocab_size
    widget = W.interactive(
        draw, **sampling_controls(prompt, top_k_max=min(200, vocab), top_k_value=min(50, vocab)),
        tokens=W.IntSlider(value=tokens, min=5, max=60, step=5, description="new tokens",
                           continuous_update=False, style=CONTROL_STYLE, layout={"width": "420px"}),
    )
    widget.draw = draw
    return widget
