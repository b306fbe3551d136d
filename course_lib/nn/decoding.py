"""From next-token scores to a sequence: greedy, sampling, beam search (lessons 06, 08, 11).

One calling convention for both model kinds:

    greedy_decode(model, tokens, max_new_tokens, eos_id=None, *, src=None, pad_id=None)
    sample(model, tokens, max_new_tokens, temperature=1.0, top_k=None, generator=None,
           eos_id=None, *, src=None, pad_id=None)
    beam_search(model, tokens, max_new_tokens, eos_id=None, beam_size=4, length_penalty=1.0,
                *, src=None, pad_id=None, return_all=False)

- model: a decoder-only LM (`DecoderOnlyLM`: model(tokens) -> (batch, n, vocab)), an
  `EncoderDecoder` (pass `src`, the source ids (batch, n_src): it is encoded once), or any
  *step function* step(tokens (batch, n)) -> logits (batch, vocab) for token n+1.
- tokens: (batch, n) int64, the sequence to continue — an LM's prompt, or the decoder's
  start for an EncoderDecoder, where an int (the <bos> id) means that id for every source.
- Returns (batch, n + new) ids, new ≤ max_new_tokens. After a row emits eos_id it is filled
  with pad_id (default: eos_id for an LM, model.pad_id for an EncoderDecoder); the loop
  stops once every row has ended.

    greedy_decode(lm, prompt, 100)                                # lesson 06
    greedy_decode(translator, v.bos_id, 20, v.eos_id, src=src)    # lesson 08
    beam_search(translator, v.bos_id, 20, v.eos_id, beam_size=4, src=src)

Behind it are two step functions, `lm_step(model)` and `seq2seq_step(model, src)`. An
encoder-decoder never predicts <pad> or its start token: they are inputs, never outputs (an
undertrained model might otherwise 'predict' padding, which would end its translation silently).

From logits to a choice, at each step:

    greedy        next = argmax_v logits_v
    temperature   p = softmax(logits / T)        T < 1 sharpens, T > 1 flattens
    top-k         keep the k largest logits, set the rest to -inf, then softmax
    beam          keep the beam_size most probable *prefixes* (sum of log-probs), so a token
                  that looks second-best now can win once what follows is known

Lesson 11's `course_lib.nn.generation` adds a KV-cached step function for `LlamaLM`.
"""

from contextlib import contextmanager

import torch
from torch import nn

from .._checks import check_float, check_positive_int, check_tensor

__all__ = [
    "lm_step",
    "seq2seq_step",
    "top_k_filter",
    "next_token_probs",
    "greedy_decode",
    "sample",
    "beam_step",
    "beam_search",
    "generate_text",
]


# --------------------------------------------------------------------------- step functions


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


def seq2seq_step(model, src, never=()):
    """The step function of an EncoderDecoder: `src` is encoded once, each call decodes.

    src: (batch, n_src) ids. step(tokens (m·batch, n)) -> logits (m·batch, vocab) at the last
    position; m > 1 means m consecutive rows per source (beam search's beams). The ids in
    `never` get logit -inf: they are never chosen.
    """
    check_tensor("src", src)
    src_mask = model.source_mask(src)
    memory = model.encode(src, src_mask)  # (batch, n_src, d_model), once
    expanded = {1: (memory, src_mask)}
    never = list(never)

    def step(tokens):
        m = tokens.shape[0] // src.shape[0]
        if m * src.shape[0] != tokens.shape[0]:
            raise ValueError(f"tokens has {tokens.shape[0]} rows, not a multiple of src's {src.shape[0]}")
        if m not in expanded:  # beams: repeat each source's memory m times
            expanded[m] = (memory.repeat_interleave(m, dim=0),
                           None if src_mask is None else src_mask.repeat_interleave(m, dim=0))
        mem, mask = expanded[m]
        logits = model.decode(tokens, mem, mask)[:, -1]  # (m·batch, vocab): last position only
        if never:
            logits = logits.clone()
            logits[:, never] = float("-inf")
        return logits

    return step


def _is_encoder_decoder(model):
    return all(hasattr(model, a) for a in ("encode", "decode", "source_mask"))


def _setup(model, tokens, src, pad_id):
    """-> (step, tokens, fill id after <eos> or None)."""
    if src is None:
        if _is_encoder_decoder(model):
            raise TypeError("an EncoderDecoder needs its source: pass src=(batch, n_src) ids")
        step = lm_step(model) if isinstance(model, nn.Module) else model
        return step, tokens, pad_id
    if not _is_encoder_decoder(model):
        raise TypeError(f"src= is for an EncoderDecoder (with encode/decode), got {type(model).__name__}")
    check_tensor("src", src)
    if pad_id is None:
        pad_id = 0 if getattr(model, "pad_id", None) is None else model.pad_id
    if isinstance(tokens, int) and not isinstance(tokens, bool):  # a start id for every source
        tokens = torch.full((src.shape[0], 1), tokens, dtype=torch.long, device=src.device)
    if isinstance(tokens, torch.Tensor) and tokens.dim() == 2 and tokens.shape[1] > 0:
        starts = sorted(set(tokens[:, 0].tolist()))
    else:
        starts = []  # _check_prompt names the problem
    return seq2seq_step(model, src, never=[pad_id, *starts]), tokens, pad_id


# --------------------------------------------------------------------------- the distribution


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
    top_k: None (every token) or 1 .. vocab; larger raises ValueError.
    Returns probabilities (..., vocab), each row summing to 1.
    """
    check_float("logits", logits)
    _check_temperature(temperature)
    _check_top_k(top_k)
    if top_k is not None and top_k > logits.shape[-1]:
        raise ValueError(f"top_k={top_k} is larger than the vocabulary ({logits.shape[-1]} tokens, "
                         f"the last axis of logits {tuple(logits.shape)}); top_k can be at most "
                         f"{logits.shape[-1]}, or None to keep every token")
    if temperature == 0:
        return nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(top_k_filter(logits, top_k) / temperature, dim=-1)


# --------------------------------------------------------------------------- greedy and sampling


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
def _decode(step, tokens, max_new_tokens, choose, eos_id, fill_id=None):
    """The loop every decoder shares: score, choose, append, repeat.

    choose(logits (batch, vocab)) -> next ids (batch,). After a row emits eos_id it
    emits fill_id (default eos_id, so the batch stays rectangular); the loop stops early
    once every row has.
    """
    _check_prompt(tokens, max_new_tokens)
    fill_id = eos_id if fill_id is None else fill_id
    done = torch.zeros(tokens.shape[0], dtype=torch.bool, device=tokens.device)
    for _ in range(max_new_tokens):
        logits = step(tokens)  # (batch, vocab), scores for the next token
        next_id = choose(logits.float())  # (batch,)
        if eos_id is not None:
            next_id = next_id.masked_fill(done, fill_id)
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


def greedy_decode(model, tokens, max_new_tokens, eos_id=None, *, src=None, pad_id=None):
    """Always take the most likely next token. Deterministic.

    model: a decoder-only LM, an EncoderDecoder (with src) or a step function (see the module
    doc). tokens: (batch, n) to continue (an int start id with src).
    Returns (batch, n + new) with new ≤ max_new_tokens.
    """
    with torch.no_grad(), _eval_mode(model):
        step, tokens, fill = _setup(model, tokens, src, pad_id)
        return _decode(step, tokens, max_new_tokens, lambda logits: logits.argmax(dim=-1), eos_id, fill)


def sample(model, tokens, max_new_tokens, temperature=1.0, top_k=None, generator=None, eos_id=None, *,
           src=None, pad_id=None, on_step=None):
    """Draw each next token from softmax(top_k(logits) / temperature).

    temperature=0 is greedy decoding. Pass a seeded `torch.Generator` for a
    reproducible draw: the same generator state gives the same text.
    model, tokens, src: as in `greedy_decode`. Returns (batch, n + new) with new ≤ max_new_tokens.
    on_step(tokens (batch, n + i)): called before each step with the tokens so far — to show
    a continuation as it grows, or to stop it by raising (the widgets of lessons 06 and 11).
    """
    _check_temperature(temperature)
    _check_top_k(top_k)

    def choose(logits):
        if temperature == 0:
            return logits.argmax(dim=-1)
        probs = next_token_probs(logits, temperature, top_k)
        return torch.multinomial(probs, num_samples=1, generator=generator)[:, 0]

    with torch.no_grad(), _eval_mode(model):
        step, tokens, fill = _setup(model, tokens, src, pad_id)
        if on_step is not None:
            step = _watched(step, on_step)
        return _decode(step, tokens, max_new_tokens, choose, eos_id, fill)


def _watched(step, on_step):
    """`step`, calling on_step(tokens) first each time."""
    def watched(tokens):
        on_step(tokens)
        return step(tokens)
    return watched


# --------------------------------------------------------------------------- beam search


def beam_step(scores, log_probs, beam_size):
    """One step of beam search: extend every beam by every token, keep the best.

    scores: (batch, k) total log-probability of each current beam.
    log_probs: (batch, k, vocab) log p(next token | beam).
    A candidate's score is scores[b, i] + log_probs[b, i, v]; the beam_size best
    candidates of each batch row survive, whichever beams they come from.
    Returns (new_scores (batch, beam_size), beam_idx (batch, beam_size), token_idx
    (batch, beam_size)): candidate j extends beam beam_idx[b, j] by token token_idx[b, j].
    """
    vocab = log_probs.shape[-1]
    candidates = scores[..., None] + log_probs  # (batch, k, vocab)
    new_scores, flat = candidates.flatten(-2).topk(beam_size, dim=-1)  # over k·vocab candidates
    return new_scores, flat // vocab, flat % vocab


def _lengths(new, eos_id):
    """Tokens per row up to and including its first eos_id (all of them if it has none)."""
    full = torch.full((new.shape[0],), new.shape[1], dtype=torch.long, device=new.device)
    if eos_id is None or new.shape[1] == 0:
        return full
    is_eos = new == eos_id
    return torch.where(is_eos.any(dim=1), is_eos.long().argmax(dim=1) + 1, full)


def beam_search(model, tokens, max_new_tokens, eos_id=None, beam_size=4, length_penalty=1.0, *,
                src=None, pad_id=None, return_all=False):
    """Beam search for a batch at once (the beams form a batch axis).

    model, tokens, src: as in `greedy_decode`. Finished beams (ended with eos_id) stay in the
    beam with their score frozen and the fill id appended. At the end each beam's score is
    divided by length**length_penalty (length = new tokens, eos included), so longer
    sequences are not punished just for having more log-probabilities to add up; the best wins.

    Returns (batch, n + new) ids like greedy_decode; with return_all, also the beams
    (batch, beam_size, n + new) and their normalized scores (batch, beam_size), best first.
    """
    check_positive_int("beam_size", beam_size)
    with torch.no_grad(), _eval_mode(model):
        step, tokens, fill = _setup(model, tokens, src, pad_id)
        _check_prompt(tokens, max_new_tokens)
        fill = eos_id if fill is None else fill
        batch, start, k = tokens.shape[0], tokens.shape[1], beam_size
        device = tokens.device
        ys = tokens.repeat_interleave(k, dim=0)  # (batch·k, n): k copies of each row
        scores = torch.full((batch, k), float("-inf"), device=device)
        scores[:, 0] = 0.0  # all beams start identical: expand only the first one
        done = torch.zeros(batch * k, dtype=torch.bool, device=device)
        for _ in range(max_new_tokens):
            log_probs = step(ys).log_softmax(-1)  # (batch·k, vocab)
            if eos_id is not None:  # a finished beam can only be extended by the fill id, at no cost
                frozen = torch.full_like(log_probs, float("-inf"))
                frozen[:, fill] = 0.0
                log_probs = torch.where(done[:, None], frozen, log_probs)
            scores, beam_idx, token_idx = beam_step(scores, log_probs.view(batch, k, -1), k)
            rows = (beam_idx + torch.arange(batch, device=device)[:, None] * k).flatten()
            ys = torch.cat([ys[rows], token_idx.flatten()[:, None]], dim=1)
            if eos_id is not None:
                done = done[rows] | (token_idx.flatten() == eos_id)
                if done.all():
                    break
    lengths = _lengths(ys[:, start:], eos_id)
    normalized = scores / lengths.clamp(min=1).view(batch, k).float() ** length_penalty
    normalized, order = normalized.sort(dim=-1, descending=True)
    beams = ys.view(batch, k, -1).gather(1, order[..., None].expand(-1, -1, ys.shape[1]))
    best = beams[:, 0]
    keep = start + int(_lengths(best[:, start:], eos_id).max())  # drop columns every row has ended before
    best = best[:, :keep]
    return (best, beams, normalized) if return_all else best


# --------------------------------------------------------------------------- text in, text out


def generate_text(model, vocab, prompt, max_new_tokens=200, temperature=1.0, top_k=None, seed=0,
                  on_step=None):
    """Text in, text out: encode `prompt`, sample a continuation, decode it all.

    vocab: anything with encode(str) -> 1-D ids and decode(ids) -> str (e.g.
    `course_lib.data.shakespeare.CharVocab`). seed fixes the draw: the same arguments give
    the same text. An empty prompt starts from a newline. Returns prompt + continuation.
    on_step: as in `sample`.
    """
    ids = vocab.encode(prompt or "\n")
    device = next(model.parameters()).device if isinstance(model, nn.Module) else None
    generator = torch.Generator(device=device or "cpu").manual_seed(seed)
    out = sample(model, ids[None].to(device), max_new_tokens, temperature, top_k, generator, on_step=on_step)
    text = vocab.decode(out[0].cpu())
    return text if prompt else text[1:]
