"""Whole models built from `layers` (lessons 06, 07, 08, 10).

- `Encoder`, `Decoder`: stacks of N layers (plus a final LayerNorm, see `final_norm`).
- `EncoderDecoder`: the 2017 translation model — token embeddings × √d_model,
  sinusoidal positions, encoder, decoder, output projection to logits.
- `DecoderOnlyLM`: a GPT-style language model — causal self-attention blocks only.
- `collect_attention`: every layer's and head's attention weights, for plots.

Token ids are integer tensors (batch, n); masks are bool, True = may attend.
"""

from contextlib import contextmanager

import torch
from torch import nn

from .._checks import check_choice, check_max_length, check_positive_int, check_probability, check_token_ids
from .attention import causal_mask, padding_mask
from .layers import DecoderLayer, EncoderLayer, LayerNorm, MultiHeadAttention
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding

__all__ = [
    "TokenEmbedding",
    "Encoder",
    "Decoder",
    "EncoderDecoder",
    "DecoderOnlyLM",
    "keep_attention",
    "collect_attention",
]


class TokenEmbedding(nn.Module):
    """Token ids -> vectors: row `id` of E (vocab_size, d_model), times √d_model.

    A row lookup is the same as one-hot(id) @ E, without building the one-hot.
    E starts as N(0, 1/d_model), so after the √d_model scaling (as in the paper)
    embeddings have unit-size entries, like the positional encodings added to them.
    tokens: (batch, n) integer ids -> (batch, n, d_model).
    """

    def __init__(self, vocab_size, d_model):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model)
        self.vocab_size, self.d_model = vocab_size, d_model
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) * d_model**-0.5)

    def forward(self, tokens):
        check_token_ids("tokens", tokens, self.vocab_size)
        return self.weight[tokens] * self.d_model**0.5

    def extra_repr(self):
        return f"vocab_size={self.vocab_size}, d_model={self.d_model}"


def _final_norm(d_model, norm_first, final_norm):
    # Pre-norm stacks end on an un-normalized residual stream, so they need one more
    # LayerNorm; post-norm layers already end with one. nn.Transformer adds the final
    # norm in both cases: pass final_norm=True to match it exactly.
    final_norm = norm_first if final_norm is None else final_norm
    return LayerNorm(d_model) if final_norm else None


class Encoder(nn.Module):
    """N encoder layers. x: (batch, n, d_model) -> (batch, n, d_model).

    mask: bool, True = may attend, broadcastable to (batch, h, n, n) — typically the
    source padding mask (batch, 1, 1, n). final_norm: None = "when norm_first".
    """

    def __init__(self, d_model, h, d_ff, n_layers, dropout=0.0, norm_first=False, final_norm=None, activation="relu"):
        super().__init__()
        check_positive_int("n_layers", n_layers)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, h, d_ff, dropout, norm_first, activation) for _ in range(n_layers)
        )
        self.norm = _final_norm(d_model, norm_first, final_norm)

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask=mask)
        return x if self.norm is None else self.norm(x)


class Decoder(nn.Module):
    """N decoder layers. x: (batch, n_tgt, d_model), memory: (batch, n_src, d_model)
    -> (batch, n_tgt, d_model). Masks as in DecoderLayer (self_mask should be causal).
    """

    def __init__(self, d_model, h, d_ff, n_layers, dropout=0.0, norm_first=False, final_norm=None, activation="relu"):
        super().__init__()
        check_positive_int("n_layers", n_layers)
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, h, d_ff, dropout, norm_first, activation) for _ in range(n_layers)
        )
        self.norm = _final_norm(d_model, norm_first, final_norm)

    def forward(self, x, memory, self_mask=None, cross_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask=self_mask, cross_mask=cross_mask)
        return x if self.norm is None else self.norm(x)


class EncoderDecoder(nn.Module):
    """The Transformer of "Attention Is All You Need".

        memory = Encoder(PE + √d·E_src[src])
        logits = W_out · Decoder(PE + √d·E_tgt[tgt], memory)

    src: (batch, n_src), tgt: (batch, n_tgt) integer ids -> logits (batch, n_tgt, tgt_vocab).
    With pad_id set (the same id in both vocabularies), padding masks are built from
    the tokens; the decoder's causal mask is always applied. Explicit masks (True = may
    attend) replace the padding masks: src_mask broadcastable to (batch, h, n_q, n_src),
    tgt_mask to (batch, h, n_tgt, n_tgt).
    final_norm: a LayerNorm after each stack; None = only when norm_first (pass True
    to match nn.Transformer, which always has one).
    """

    def __init__(self, src_vocab, tgt_vocab, d_model=512, h=8, d_ff=2048, n_enc=6, n_dec=6,
                 dropout=0.1, norm_first=False, max_len=512, pad_id=None, final_norm=None):
        super().__init__()
        check_probability("dropout", dropout)
        if pad_id is not None and (isinstance(pad_id, bool) or not isinstance(pad_id, int)):
            raise TypeError(f"pad_id must be an int or None, got {type(pad_id).__name__}")
        self.pad_id = pad_id
        self.src_embed = TokenEmbedding(src_vocab, d_model)
        self.tgt_embed = TokenEmbedding(tgt_vocab, d_model)
        self.pos = SinusoidalPositionalEncoding(d_model, max_len)
        self.dropout = nn.Dropout(dropout)
        self.encoder = Encoder(d_model, h, d_ff, n_enc, dropout, norm_first, final_norm)
        self.decoder = Decoder(d_model, h, d_ff, n_dec, dropout, norm_first, final_norm)
        self.out = nn.Linear(d_model, tgt_vocab)  # hidden state -> one score per target token

    def _check_tokens(self, name, tokens):
        embed = self.src_embed if name == "src" else self.tgt_embed
        check_token_ids(name, tokens, embed.vocab_size)
        check_max_length(name, tokens.shape[1], self.pos.max_len)

    def source_mask(self, src):
        """(batch, 1, 1, n_src) padding mask from pad_id, or None without one."""
        return None if self.pad_id is None else padding_mask(src, self.pad_id)

    def encode(self, src, src_mask=None):
        """src: (batch, n_src) ids -> memory (batch, n_src, d_model)."""
        self._check_tokens("src", src)
        src_mask = self.source_mask(src) if src_mask is None else src_mask
        x = self.dropout(self.pos(self.src_embed(src)))
        return self.encoder(x, mask=src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        """tgt: (batch, n_tgt) ids, memory: (batch, n_src, d_model) -> logits (batch, n_tgt, tgt_vocab).

        src_mask is the *source* padding mask again (memory has no token ids to build
        it from): it hides padded source positions from cross-attention. Pass
        `model.source_mask(src)`, or None if the source has no padding.
        """
        self._check_tokens("tgt", tgt)
        n = tgt.shape[-1]
        self_mask = causal_mask(n, device=tgt.device)  # (n_tgt, n_tgt): never look ahead
        if tgt_mask is None and self.pad_id is not None:
            tgt_mask = padding_mask(tgt, self.pad_id)
        if tgt_mask is not None:
            self_mask = self_mask & tgt_mask
        y = self.dropout(self.pos(self.tgt_embed(tgt)))
        return self.out(self.decoder(y, memory, self_mask=self_mask, cross_mask=src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        self._check_tokens("src", src)
        src_mask = self.source_mask(src) if src_mask is None else src_mask
        return self.decode(tgt, self.encode(src, src_mask), src_mask, tgt_mask)


class DecoderOnlyLM(nn.Module):
    """A GPT-style language model: predict token t+1 from tokens 0..t.

    A GPT block is an encoder layer run with a causal mask (no cross-attention), so the
    stack is an `Encoder` whose every layer gets `causal_mask(n)`. Pre-norm by default,
    as in GPT-2. Sampling lives in `course_lib.nn.decoding`.
    tokens: (batch, n) integer ids, n ≤ max_len -> logits (batch, n, vocab_size).
    """

    def __init__(self, vocab_size, d_model=128, h=4, d_ff=512, n_layers=4, max_len=256,
                 dropout=0.0, norm_first=True, positions="learned"):
        super().__init__()
        check_probability("dropout", dropout)
        check_choice("positions", positions, {"learned", "sinusoidal"})
        self.max_len = max_len
        self.embed = TokenEmbedding(vocab_size, d_model)
        if positions == "learned":
            self.pos = LearnedPositionalEmbedding(max_len, d_model)
        else:
            self.pos = SinusoidalPositionalEncoding(d_model, max_len)
        self.dropout = nn.Dropout(dropout)
        self.blocks = Encoder(d_model, h, d_ff, n_layers, dropout, norm_first)
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        check_token_ids("tokens", tokens, self.embed.vocab_size)
        check_max_length("tokens", tokens.shape[1], self.max_len)
        x = self.dropout(self.pos(self.embed(tokens)))  # (batch, n, d_model)
        x = self.blocks(x, mask=causal_mask(tokens.shape[1], device=tokens.device))
        return self.lm_head(x)  # (batch, n, vocab_size)


@contextmanager
def keep_attention(model):
    """Inside the `with` block, every MultiHeadAttention in `model` stores the weights
    of its latest forward in `.last_weights` (batch, h, n_q, n_k). Switched off and
    cleared on exit. Storing weights takes the explicit (slower) attention path.
    """
    heads = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    for m in heads:
        m.keep_weights = True
    try:
        yield model
    finally:
        for m in heads:
            m.keep_weights, m.last_weights = False, None


def collect_attention(model, *inputs, **kwargs):
    """Run `model(*inputs, **kwargs)` once (eval mode, no grad); return all attention.

    Returns {"encoder": [...], "decoder": [...], "cross": [...]}, one tensor
    (batch, h, n_q, n_k) per layer, first layer first; only the kinds the model has.
    Encoder layers of a DecoderOnlyLM count as "decoder" (they are causal).
    Works for EncoderDecoder, DecoderOnlyLM, Encoder, Decoder and single layers.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    was_training = model.training
    model.eval()  # dropout would change what later layers see
    found = {"encoder": [], "decoder": [], "cross": []}
    try:
        with torch.no_grad(), keep_attention(model):
            model(*inputs, **kwargs)
            for layer in model.modules():
                if isinstance(layer, DecoderLayer):
                    found["decoder"].append(layer.self_attn.last_weights)
                    found["cross"].append(layer.cross_attn.last_weights)
                elif isinstance(layer, EncoderLayer):
                    kind = "decoder" if isinstance(model, DecoderOnlyLM) else "encoder"
                    found[kind].append(layer.self_attn.last_weights)
    finally:
        model.train(was_training)
    return {kind: weights for kind, weights in found.items() if weights}
