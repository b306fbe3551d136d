"""Three transformer families on one small task (lesson 09).

The task: reverse a sequence of n digits. Each family meets it in its own way:

- **encoder-only** (BERT): all n positions are read at once with *bidirectional*
  attention and each position's output is classified — output i must be input n-1-i,
  so position 0 has to look at the *last* token. `EncoderTagger`.
- the same tagger with a **causal** mask cannot: position i sees only tokens 0..i, so
  the first half of the answer is out of its reach (a measured failure, not a claim).
- **decoder-only** (GPT): one causal stream [s, SEP, reversed s]; the answer is
  generated token by token after the prompt. `course_lib.nn.models.DecoderOnlyLM`.
- **encoder-decoder** (the 2017 Transformer, T5): the encoder reads s, the decoder
  generates the answer and reads s through cross-attention.
  `course_lib.nn.models.EncoderDecoder`.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_choice, check_max_length, check_positive_int, check_token_ids
from ..nn.attention import causal_mask
from ..nn.models import DecoderOnlyLM, Encoder, EncoderDecoder, TokenEmbedding
from ..nn.positional import LearnedPositionalEmbedding

__all__ = ["EncoderTagger", "reversal_batch", "KINDS", "make_reverser", "train_reverser", "reverse_with",
           "needed_positions"]

KINDS = ("encoder-only", "causal encoder", "decoder-only", "encoder-decoder")


class EncoderTagger(nn.Module):
    """Encoder-only model: embeddings + positions -> N encoder layers -> a label per position.

    tokens (batch, n) -> logits (batch, n, n_labels). causal=True adds the decoder's
    triangle mask (for the comparison in lesson 09); BERT-style models use causal=False.
    """

    def __init__(self, vocab_size, n_labels, d_model=32, h=2, d_ff=64, n_layers=2, max_len=32, causal=False):
        super().__init__()
        check_positive_int("n_labels", n_labels)
        self.causal, self.max_len = causal, max_len
        self.embed = TokenEmbedding(vocab_size, d_model)
        self.pos = LearnedPositionalEmbedding(max_len, d_model)
        self.encoder = Encoder(d_model, h, d_ff, n_layers, norm_first=True)
        self.head = nn.Linear(d_model, n_labels)

    def forward(self, tokens):
        check_token_ids("tokens", tokens, self.embed.vocab_size)
        check_max_length("tokens", tokens.shape[1], self.max_len)
        mask = causal_mask(tokens.shape[1], device=tokens.device) if self.causal else None
        return self.head(self.encoder(self.pos(self.embed(tokens)), mask=mask))


def reversal_batch(batch, n=6, vocab=10, generator=None):
    """(src, target): src (batch, n) random digits 0..vocab-1, target = src reversed."""
    check_positive_int("batch", batch)
    check_positive_int("n", n)
    src = torch.randint(0, vocab, (batch, n), generator=generator)
    return src, src.flip(1)


def make_reverser(kind, n=6, vocab=10, d_model=32, h=2, d_ff=64, n_layers=2):
    """An untrained model of one family, sized for reversing n digits.

    Token vocab + 1: the extra id `vocab` is the separator (decoder-only) or the
    start token (encoder-decoder).
    """
    check_choice("kind", kind, KINDS)
    if kind in ("encoder-only", "causal encoder"):
        return EncoderTagger(vocab, vocab, d_model, h, d_ff, n_layers, max_len=n,
                             causal=kind == "causal encoder")
    if kind == "decoder-only":
        return DecoderOnlyLM(vocab + 1, d_model, h, d_ff, n_layers, max_len=2 * n + 1)
    return EncoderDecoder(vocab, vocab + 1, d_model, h, d_ff, n_enc=max(1, n_layers // 2),
                          n_dec=max(1, n_layers // 2), dropout=0.0, max_len=n + 1)


def _loss(kind, model, src, target, vocab):
    b = src.shape[0]
    start = torch.full((b, 1), vocab, dtype=torch.long)
    if kind in ("encoder-only", "causal encoder"):
        logits = model(src)
    elif kind == "decoder-only":
        x = torch.cat([src, start, target], dim=1)          # [s, SEP, reversed s]
        logits = model(x[:, :-1])[:, src.shape[1]:]         # the positions that predict the answer
    else:
        logits = model(src, torch.cat([start, target[:, :-1]], dim=1))   # teacher forcing
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def train_reverser(kind, n=6, vocab=10, steps=150, batch_size=64, lr=3e-3, seed=0, **sizes):
    """Build and train one family's model on digit reversal. Returns (model in eval mode, losses)."""
    check_positive_int("steps", steps)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = make_reverser(kind, n, vocab, **sizes)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        src, target = reversal_batch(batch_size, n, vocab, gen)
        loss = _loss(kind, model, src, target, vocab)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.eval(), losses


@torch.no_grad()
def reverse_with(kind, model, src, vocab=10):
    """The model's answer for src (batch, n): (batch, n) predicted digits.

    Encoder-only: one forward pass, every position at once. Decoder-only and
    encoder-decoder: greedy generation, one token per forward pass.
    """
    check_choice("kind", kind, KINDS)
    model.eval()
    b, n = src.shape
    start = torch.full((b, 1), vocab, dtype=torch.long)
    if kind in ("encoder-only", "causal encoder"):
        return model(src).argmax(-1)
    if kind == "decoder-only":
        x = torch.cat([src, start], dim=1)
        for _ in range(n):
            x = torch.cat([x, model(x)[:, -1:].argmax(-1)], dim=1)
        return x[:, n + 1:]
    memory = model.encode(src)
    y = start
    for _ in range(n):
        y = torch.cat([y, model.decode(y, memory)[:, -1:].argmax(-1)], dim=1)
    return y[:, 1:]


def needed_positions(kind, n=6):
    """For each output step, (query position, key position holding the digit it needs).

    Returns two int64 tensors (queries, keys) of length n, indexing the attention of
    `kind`'s model on reversing n digits: the tagger's self-attention (query i needs
    key n-1-i), the decoder-only model's attention on [s, SEP, reversed s] (the query
    that predicts answer digit k is position n+k; the digit is at n-1-k), or the
    encoder-decoder's cross-attention (decoder step k needs source position n-1-k).
    """
    check_choice("kind", kind, KINDS)
    k = torch.arange(n)
    if kind in ("encoder-only", "causal encoder", "encoder-decoder"):
        return k, n - 1 - k
    return n + k, n - 1 - k
