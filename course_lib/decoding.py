"""Turning next-token scores into text: greedy decoding and sampling (lesson 06).

Every decoder here talks to the model through one small interface, a *step function*:

    step(tokens) -> logits
    tokens: (batch, n) int64, the sequence so far;  logits: (batch, vocab) for token n+1

so the same loops drive a decoder-only LM (`lm_step(model)`) or an encoder-decoder
(`lambda ys: model.decode(ys, memory, src_mask)[:, -1]`, memory encoded once). A beam
search fits the same interface: it calls `step` on its (beams, n) candidates. Lesson 08's
translator has its own greedy and beam search in `course_lib.seq2seq_decoding`.

From logits to a choice, at each step:

    greedy        next = argmax_v logits_v
    temperature   p = softmax(logits / T)        T < 1 sharpens, T > 1 flattens
    top-k         keep the k largest logits, set the rest to -inf, then softmax
"""

from contextlib import contextmanager

import torch
from torch import nn

from ._checks import check_float, check_positive_int

__all__ = [
    "lm_step",
    "top_k_filter",
    "next_token_probs",
    "greedy_decode",
    "sample",
    "generate_text",
]


def lm_step(model):
    """The step function of a decoder-only LM: the logits at the last position.

    model(tokens (batch, n)) -> logits (batch, n, vocab), like `DecoderOnlyLM`. If the
    model has a `max_len` (its context window), only the last max_len tokens are fed:
    older ones fall out of view.
    """
    if not callable(model):
        raise TypeError(f"model must be callable, got {type(model).__name__}")
    max_len = getattr(model, "max_len", None)

    def step(tokens):
        context = tokens if max_len is None else tokens[:, -max_len:]
        return model(context)[:, -1, :]  # (batch, vocab)

    return step


def _as_step(model_or_step):
    """An nn.Module is treated as a decoder-only LM; any other callable is a step."""
    return lm_step(model_or_step) if isinstance(model_or_step, nn.Module) else model_or_step


def _check_temperature(temperature):
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")


def _check_top_k(top_k):
    if top_k is not None:
        check_positive_int("top_k", top_k)


def top_k_filter(logits, k):
    """Keep the k largest logits in each row, set the others to -inf.

    logits: (..., vocab). k=None, or k ≥ vocab, keeps everything. Ties with the k-th
    largest value are kept too (so a row may keep more than k entries).
    """
    check_float("logits", logits)
    _check_top_k(k)
    if k is None or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1) the k-th largest
    return logits.masked_fill(logits < kth, float("-inf"))


def next_token_probs(logits, temperature=1.0, top_k=None):
    """The distribution the next token is drawn from.

    logits: (..., vocab). temperature T > 0: softmax(top_k(logits) / T).
    T = 0 means greedy: all the mass on the argmax (a one-hot row).
    Returns probabilities (..., vocab), each row summing to 1.
    """
    check_float("logits", logits)
    _check_temperature(temperature)
    _check_top_k(top_k)
    if temperature == 0:
        return nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(top_k_filter(logits, top_k) / temperature, dim=-1)


def _check_prompt(tokens, max_new_tokens):
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"tokens must be a torch.Tensor, got {type(tokens).__name__}")
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise TypeError(f"tokens must be integer token ids, got {tokens.dtype}")
    if tokens.dim() != 2 or tokens.shape[1] == 0:
        raise ValueError(f"tokens must be (batch, n) with n ≥ 1, got shape {tuple(tokens.shape)}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")


@torch.no_grad()
def _decode(step, tokens, max_new_tokens, choose, eos_id):
    """The loop every decoder shares: score, choose, append, repeat.

    choose(logits (batch, vocab)) -> next ids (batch,). After a row emits eos_id it
    keeps emitting eos_id (so the batch stays rectangular); the loop stops early once
    every row has.
    """
    _check_prompt(tokens, max_new_tokens)
    done = torch.zeros(tokens.shape[0], dtype=torch.bool, device=tokens.device)
    for _ in range(max_new_tokens):
        logits = step(tokens)  # (batch, vocab), scores for the next token
        next_id = choose(logits.float())  # (batch,)
        if eos_id is not None:
            next_id = next_id.masked_fill(done, eos_id)
            done = done | (next_id == eos_id)
        tokens = torch.cat([tokens, next_id[:, None]], dim=1)  # feed the choice back in
        if eos_id is not None and done.all():
            break
    return tokens


@contextmanager
def _eval_mode(model):
    """A module is put in eval mode (no dropout) while decoding, then restored."""
    module = model if isinstance(model, nn.Module) else None
    was_training = module is not None and module.training
    if module is not None:
        module.eval()
    try:
        yield
    finally:
        if module is not None:
            module.train(was_training)


def greedy_decode(model, tokens, max_new_tokens, eos_id=None):
    """Always take the most likely next token. Deterministic.

    model: a decoder-only LM (nn.Module) or a step function (see the module doc).
    tokens: (batch, n) the prompt. Returns (batch, n + new) with new ≤ max_new_tokens.
    """
    with _eval_mode(model):
        return _decode(_as_step(model), tokens, max_new_tokens, lambda logits: logits.argmax(dim=-1), eos_id)


def sample(model, tokens, max_new_tokens, temperature=1.0, top_k=None, generator=None, eos_id=None):
    """Draw each next token from softmax(top_k(logits) / temperature).

    temperature=0 is greedy decoding. Pass a seeded `torch.Generator` for a
    reproducible draw: the same generator state gives the same text.
    model: a decoder-only LM (nn.Module) or a step function. tokens: (batch, n).
    Returns (batch, n + new) with new ≤ max_new_tokens.
    """
    _check_temperature(temperature)
    _check_top_k(top_k)

    def choose(logits):
        if temperature == 0:
            return logits.argmax(dim=-1)
        probs = next_token_probs(logits, temperature, top_k)
        return torch.multinomial(probs, num_samples=1, generator=generator)[:, 0]

    with _eval_mode(model):
        return _decode(_as_step(model), tokens, max_new_tokens, choose, eos_id)


def generate_text(model, vocab, prompt, max_new_tokens=200, temperature=1.0, top_k=None, seed=0):
    """Text in, text out: encode `prompt`, sample a continuation, decode it all.

    vocab: anything with encode(str) -> 1-D ids and decode(ids) -> str (e.g.
    `course_lib.shakespeare.CharVocab`). seed fixes the draw: the same arguments give
    the same text. An empty prompt starts from a newline. Returns prompt + continuation.
    """
    ids = vocab.encode(prompt or "\n")
    device = next(model.parameters()).device if isinstance(model, nn.Module) else None
    generator = torch.Generator(device=device or "cpu").manual_seed(seed)
    out = sample(model, ids[None].to(device), max_new_tokens, temperature, top_k, generator)
    text = vocab.decode(out[0].cpu())
    return text if prompt else text[1:]
