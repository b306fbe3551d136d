"""Generating text with a KV cache (lesson 11), on lesson 06's decoding loop.

`course_lib.nn.decoding` drives any model through a *step function*
`step(tokens (batch, n)) -> logits (batch, vocab)` for token n+1. Without a cache the
step runs the whole sequence again at every new token: step t costs O(t), the whole
generation O(n²). `cached_step` keeps each layer's keys and values (`KVCache`) and feeds
the model only the tokens it has not seen: one position per step, O(n) in total — the
attention of the new token still reads all t cached keys, but nothing else is redone.
"""
from __future__ import annotations

import time

import torch

from .._checks import check_positive_int
from .decoding import _check_prompt, _check_temperature, sample

__all__ = ["cached_step", "uncached_step", "generate", "generate_text", "step_times"]


def _check_model(model):
    from .llama import LlamaLM   # local: llama imports transformers helpers lazily, keep it so

    if not isinstance(model, LlamaLM):
        raise TypeError(f"model must be a LlamaLM, got {type(model).__name__}")


def uncached_step(model):
    """The step function that recomputes the whole sequence every time (no cache)."""
    _check_model(model)

    def step(tokens):
        return model(tokens, last_only=True)[:, -1]          # (batch, vocab)

    return step


def cached_step(model, capacity=256):
    """A step function with a KV cache, for *one* growing sequence.

    The first call runs the prompt and fills the cache ("prefill"); each later call feeds
    only the tokens appended since, at the positions that follow. `step.cache` is the
    KVCache (None before the first call).
    """
    _check_model(model)

    def step(tokens):
        if step.cache is None:
            step.cache = model.new_cache(tokens.shape[0], max(capacity, tokens.shape[1]))
        seen = len(step.cache)
        if tokens.shape[1] <= seen:
            raise ValueError(f"the cache holds {seen} positions but the sequence has {tokens.shape[1]}; "
                             "a cached step function follows one growing sequence — make a new one")
        return model(tokens[:, seen:], cache=step.cache, last_only=True)[:, -1]   # (batch, vocab)

    step.cache = None
    return step


def _check_request(model, tokens, max_new_tokens, temperature, top_k):
    _check_model(model)
    _check_prompt(tokens, max_new_tokens)
    _check_temperature(temperature)
    vocab, context = model.config.vocab_size, model.config.max_len
    if top_k is not None:
        check_positive_int("top_k", top_k)
        if top_k > vocab:
            raise ValueError(f"top_k={top_k} is larger than the vocabulary ({vocab} tokens)")
    n = tokens.shape[1]
    if n > context:
        raise ValueError(f"the prompt has {n} tokens, longer than the context window of {context}")
    if n + max_new_tokens > context:
        raise ValueError(f"{n} prompt tokens + {max_new_tokens} new ones exceed the context window of "
                         f"{context}; ask for at most {context - n} new tokens")


def generate(model, tokens, max_new_tokens, temperature=0.0, top_k=None, generator=None,
             eos_id=None, use_cache=True, on_step=None):
    """Continue `tokens` (batch, n) by up to max_new_tokens; returns (batch, n + new).

    temperature 0 = greedy; T > 0 samples from softmax(top_k(logits) / T) (lesson 06),
    reproducibly with a seeded `generator`. Stops early once every row emitted eos_id.
    use_cache=False recomputes the whole sequence at each step (same tokens, slower).
    on_step(tokens so far): called before each step (see `decoding.sample`).
    """
    _check_request(model, tokens, max_new_tokens, temperature, top_k)
    step = cached_step(model, tokens.shape[1] + max_new_tokens) if use_cache else uncached_step(model)
    return sample(step, tokens, max_new_tokens, temperature, top_k, generator, eos_id, on_step=on_step)


def generate_text(model, tokenizer, prompt, max_new_tokens=40, temperature=0.0, top_k=None, seed=0,
                  use_cache=True, stop_at_eos=True, on_step=None):
    """Text in, text out: the prompt and its continuation, decoded.

    tokenizer: the model's own (`course_lib.nn.llama.load_tokenizer()`). seed fixes the draw
    when sampling. stop_at_eos: stop at the tokenizer's end-of-sequence token.
    on_step(tokens so far): called before each step (see `decoding.sample`).
    """
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
    if not prompt:
        raise ValueError("the prompt is empty: give the model at least one token to continue")
    tokens = torch.tensor([tokenizer.encode(prompt)])
    generator = torch.Generator().manual_seed(seed)
    eos = tokenizer.eos_token_id if stop_at_eos else None
    out = generate(model, tokens, max_new_tokens, temperature, top_k, generator, eos, use_cache, on_step)
    return tokenizer.decode(out[0], skip_special_tokens=True)


@torch.no_grad()
def step_times(model, tokens, n_new, use_cache=True):
    """Greedy-generate n_new tokens after `tokens` (1, n), timing every step.

    Returns (positions, seconds): the position of each new token's query (n, n+1, …)
    and the wall time of the step that produced it. With the cache the first step
    includes the prompt's prefill; time it separately if that matters.
    """
    _check_request(model, tokens, n_new, 0.0, None)
    step = cached_step(model, tokens.shape[1] + n_new) if use_cache else uncached_step(model)
    positions, seconds = [], []
    for _ in range(n_new):
        start = time.perf_counter()
        next_id = step(tokens).argmax(dim=-1)
        seconds.append(time.perf_counter() - start)
        positions.append(tokens.shape[1])
        tokens = torch.cat([tokens, next_id[:, None]], dim=1)
    return positions, seconds
