"""Widget for lesson 11: generate with a real LLM — prompt, temperature, top-k, length, seed."""
from __future__ import annotations

import copy
import threading
import time
from contextlib import contextmanager

import ipywidgets as W
import torch

from ..nn.decoding import next_token_probs, sample
from ..nn.generation import _check_request
from ..viz.llm import GenerationPanel
from ._wiring import live_figure
from .sampling import CONTROL_STYLE, STREAM_EVERY, sampling_controls

__all__ = ["llm_generation_explorer"]

_SHOWN = 15        # bars: the most likely next tokens (those with probability > 0)
_MAX_TOKENS = 60   # the "new tokens" slider's maximum: the prompt's cache is sized for it


def _special_ids(tokenizer):
    """Ids of the tokenizer's special tokens (`<|endoftext|>`, `<reponame>` …), if it has any."""
    ids = set(getattr(tokenizer, "all_special_ids", None) or [])
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return ids | {int(i) for i, t in added.items() if getattr(t, "special", False)}


@contextmanager
def _stoppable(model, show):
    """Within: each block of `model` first calls `show()`, which raises `Superseded` once
    a newer value is wanted, so a forward pass for a value already left stops within one
    block (~3 ms) instead of at the end of the token (~90 ms on a 2-core laptop). Only in
    this thread: the learner may run the same model in a cell meanwhile."""
    me = threading.get_ident()

    def check(_module, _inputs):
        if threading.get_ident() == me:
            show()

    handles = [block.register_forward_pre_hook(check) for block in getattr(model, "blocks", ())]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _prefill(model, tokenizer, prompt, memo):
    """The prompt run through the model once, with a KV cache ("prefill"), remembered for
    the last prompt: moving T, top-k, the length or the seed needs no forward pass before
    the first picture, and the generation goes on from this cache instead of running the
    prompt again. Returns (ids (1, n), the cache, logits (vocab,) for the first new token)."""
    if memo.get("prompt") != prompt:
        ids = torch.tensor([tokenizer.encode(prompt)])
        cache = model.new_cache(1, ids.shape[1] + _MAX_TOKENS)
        with torch.no_grad():
            logits = model(ids, cache=cache, last_only=True)[0, -1]
        memo.update(prompt=prompt, ids=ids, cache=cache, logits=logits)
    return memo["ids"], memo["cache"], memo["logits"]


def _generate(model, tokenizer, prefilled, tokens, temperature, top_k, seed, on_step):
    """`course_lib.nn.generation.generate_text` (the same text for the same arguments),
    continued from the prompt's prefilled cache: the first token costs no forward pass."""
    ids, cache, first = prefilled
    _check_request(model, ids, tokens, temperature, top_k)
    cache = copy.deepcopy(cache)      # this generation's own: the prompt's stays as it is (~4 MB)
    n = ids.shape[1]

    def step(seq):                    # seq: (1, n + i) -> logits (1, vocab) for token n + i
        if seq.shape[1] == n:
            return first[None]
        return model(seq[:, len(cache):], cache=cache, last_only=True)[:, -1]

    generator = torch.Generator().manual_seed(seed)
    out = sample(step, ids, tokens, temperature, top_k, generator, tokenizer.eos_token_id, on_step=on_step)
    return tokenizer.decode(out[0], skip_special_tokens=True)


def _draw(show, model, tokenizer, memo, plot, prompt, temperature, top_k, tokens, seed):
    """Generate `tokens` new tokens after `prompt`; draw the first step's distribution and the text.

    Shown at once: the distribution; then the continuation as it grows, every
    STREAM_EVERY s; `show()` drops the work as soon as the learner has moved on (checked
    before every block of every forward pass). plot: the explorer's `GenerationPanel`:
    each picture redraws only the bars and the text on the same figure.
    """
    if not prompt:
        prompt = "Once"          # an empty box: something to continue rather than an error
    k = None if top_k == 0 else int(top_k)
    with _stoppable(model, show):      # a new prompt's forward pass, too, stops for a newer value
        prefilled = _prefill(model, tokenizer, prompt, memo)
    probs = next_token_probs(prefilled[2], temperature, k)
    top = torch.topk(probs, min(_SHOWN, int((probs > 0).sum())))          # only tokens that can be drawn
    pieces = [tokenizer.decode([i]) for i in top.indices.tolist()]
    special = _special_ids(tokenizer)
    flags = [i in special for i in top.indices.tolist()]

    def panel(text, pending):
        continuation = text[len(prompt):] if text.startswith(prompt) else text
        return plot(prompt=prompt, continuation=continuation, top_pieces=pieces, top_probs=top.values.tolist(),
                    temperature=temperature, top_k=k, special=flags, pending=pending)

    show(lambda: panel(prompt, True))
    last = [time.monotonic()]

    def on_step(ids):
        if time.monotonic() - last[0] < STREAM_EVERY:
            return show()                       # only: has the learner moved on?
        text = tokenizer.decode(ids[0], skip_special_tokens=True)
        show(lambda: panel(text, True))
        last[0] = time.monotonic()

    with _stoppable(model, show):
        text = _generate(model, tokenizer, prefilled, tokens, temperature, k, seed, on_step)
    return panel(text, False)


def llm_generation_explorer(model, tokenizer, prompt="Once upon a time", tokens=30):
    """Sliders for temperature, top-k, number of new tokens and seed, a text box for the prompt.

    model: a `course_lib.nn.llama.LlamaLM`; tokenizer: its own (`load_tokenizer()`).
    T = 0 is greedy; top-k = 0 means no filter. The same settings always give the same
    text (the seed fixes the draw). A change shows the next-token distribution at once,
    then the continuation token by token; work for a value already left is dropped.
    Returns the widget; `.draw.last_figure` is the latest figure.
    """
    memo, plot = {}, GenerationPanel()
    vocab = model.config.vocab_size
    return live_figure(
        lambda show, **kw: _draw(show, model, tokenizer, memo, plot, **kw), streams=True,
        **sampling_controls(prompt, top_k_max=min(200, vocab), top_k_value=min(50, vocab)),
        tokens=W.IntSlider(value=tokens, min=5, max=_MAX_TOKENS, step=5, description="new tokens",
                           continuous_update=False, style=CONTROL_STYLE, layout={"width": "420px"}),
    )
