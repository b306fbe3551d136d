"""Turning an EncoderDecoder's next-token distributions into a translation (lesson 08).

Training shows the decoder the right target (teacher forcing). At translation time
there is no right target: the decoder must read its *own* previous outputs. Starting
from <bos>, each step runs the decoder on the prefix so far and picks a next token:

- `greedy_decode`: the single most probable token, every step.
- `beam_search`: keep the `beam_size` most probable *prefixes* (sum of log-probs),
  so a token that looks second-best now can win once what follows is known.
  `beam_step` is one step of its bookkeeping.

The source is encoded once (`model.encode`); only the decoder runs per step. (Sampling
from decoder-only language models is in `course_lib.decoding`.)
"""

import torch

from ._checks import check_positive_int, check_tensor

__all__ = ["greedy_decode", "beam_step", "beam_search"]


def _prepare(model, src, max_len):
    check_tensor("src", src)
    check_positive_int("max_len", max_len)
    model.eval()
    src_mask = model.source_mask(src)
    return model.encode(src, src_mask), src_mask


def _never(logits, *ids):
    """<pad> and <bos> are inputs, never outputs: rule them out (an undertrained model may
    otherwise 'predict' padding, which would end its translation silently)."""
    logits = logits.clone()
    logits[:, list(ids)] = float("-inf")
    return logits


def _pad_id(model, pad_id):
    if pad_id is not None:
        return pad_id
    return 0 if model.pad_id is None else model.pad_id


@torch.no_grad()
def greedy_decode(model, src, bos_id, eos_id, max_len=20, pad_id=None):
    """Most probable next token at every step, until every row has produced <eos>.

    model: an EncoderDecoder. src: (batch, n_src) ids.
    Returns (batch, n) ids, n ≤ max_len + 1: <bos>, the tokens, <eos>, then pad_id
    (default model.pad_id) after a row's <eos>. <pad> and <bos> are never predicted.
    """
    pad_id = _pad_id(model, pad_id)
    memory, src_mask = _prepare(model, src, max_len)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)  # (batch, 1)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        logits = model.decode(ys, memory, src_mask)[:, -1]  # (batch, vocab): last position only
        nxt = _never(logits, pad_id, bos_id).argmax(dim=-1)
        nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == eos_id
        if done.all():
            break
    return ys


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


@torch.no_grad()
def beam_search(model, src, bos_id, eos_id, max_len=20, beam_size=4, length_penalty=1.0, pad_id=None,
                return_all=False):
    """Beam search for a batch of sources at once (the beams form a batch axis).

    Finished beams (ended with <eos>) stay in the beam with their score frozen and
    pad_id appended. At the end each beam's score is divided by length**length_penalty
    (length = tokens after <bos>, <eos> included), so longer translations are not
    punished just for having more log-probabilities to add up; the best one wins.

    Returns (batch, n) ids like greedy_decode; with return_all, also the beams
    (batch, beam_size, n) and their normalized scores (batch, beam_size), best first.
    """
    check_positive_int("beam_size", beam_size)
    pad_id = _pad_id(model, pad_id)
    memory, src_mask = _prepare(model, src, max_len)
    batch, k = src.shape[0], beam_size
    memory = memory.repeat_interleave(k, dim=0)  # (batch·k, n_src, d_model)
    if src_mask is not None:
        src_mask = src_mask.repeat_interleave(k, dim=0)
    ys = torch.full((batch * k, 1), bos_id, dtype=torch.long, device=src.device)
    scores = torch.full((batch, k), float("-inf"), device=src.device)
    scores[:, 0] = 0.0  # all beams start identical: expand only the first one
    done = torch.zeros(batch * k, dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        logits = _never(model.decode(ys, memory, src_mask)[:, -1], pad_id, bos_id)
        log_probs = logits.log_softmax(-1)  # (batch·k, vocab)
        # A finished beam can only be extended by padding, at no cost.
        frozen = torch.full_like(log_probs, float("-inf"))
        frozen[:, pad_id] = 0.0
        log_probs = torch.where(done[:, None], frozen, log_probs)
        scores, beam_idx, token_idx = beam_step(scores, log_probs.view(batch, k, -1), k)
        rows = (beam_idx + torch.arange(batch, device=src.device)[:, None] * k).flatten()
        ys = torch.cat([ys[rows], token_idx.flatten()[:, None]], dim=1)
        done = done[rows] | (token_idx.flatten() == eos_id)
        if done.all():
            break
    lengths = (ys[:, 1:] != pad_id).sum(dim=1).clamp(min=1).view(batch, k).float()
    normalized = scores / lengths**length_penalty
    normalized, order = normalized.sort(dim=-1, descending=True)
    beams = ys.view(batch, k, -1).gather(1, order[..., None].expand(-1, -1, ys.shape[1]))
    best = beams[:, 0]
    # Trim trailing columns that are padding in every row.
    keep = int((best != pad_id).sum(dim=1).max())
    best = best[:, :keep]
    return (best, beams, normalized) if return_all else best
