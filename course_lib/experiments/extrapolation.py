"""Do positional encodings work beyond the training length? A measurement (lesson 03).

The task, "previous token": given random tokens t_0 … t_{n-1}, output at every position
i ≥ 1 the token t_{i-1} (position 0 has no target). Attention without positions cannot
solve it — it sees a bag of tokens — while one attention layer with positions can: each
query attends to the key one step to its left.

We train small encoders on lengths ≤ L and measure accuracy on lengths up to 2L, for four
ways of giving positions: none, sinusoidal, learned (a table), rotary.

    model = PositionProbe(vocab_size=16, positions="sinusoidal", max_len=64)
    losses = train_probe(model, train_len=16, steps=300)
    accuracy_by_length(model, lengths=range(4, 33, 4))
"""

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_choice, check_positive_int, check_token_ids
from ..nn.layers import EncoderLayer, LayerNorm
from ..nn.models import TokenEmbedding
from ..nn.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from ..nn.rotary import RotarySelfAttention
from ..nn.training import train

__all__ = [
    "POSITION_KINDS",
    "IGNORE",
    "previous_token_batch",
    "PositionProbe",
    "train_probe",
    "accuracy_by_length",
    "accuracy_by_position",
    "first_layer_attention",
]

POSITION_KINDS = ("none", "sinusoidal", "learned", "rotary")
IGNORE = -100  # target of position 0 (no previous token); F.cross_entropy's ignore_index


def previous_token_batch(batch_size, n, vocab_size, generator=None):
    """Random tokens (batch_size, n) and targets (batch_size, n): target[:, i] = tokens[:, i-1].

    target[:, 0] is IGNORE (-100): position 0 has no previous token.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("n", n)
    check_positive_int("vocab_size", vocab_size)
    tokens = torch.randint(vocab_size, (batch_size, n), generator=generator)
    targets = torch.full_like(tokens, IGNORE)
    targets[:, 1:] = tokens[:, :-1]
    return tokens, targets


class PositionProbe(nn.Module):
    """A small pre-norm encoder whose only difference between variants is the positions.

    positions: "none" (token embeddings only), "sinusoidal" (fixed table added),
    "learned" (a trainable table of max_len rows added), "rotary" (q and k rotated inside
    every attention layer, nothing added). tokens (batch, n) -> logits (batch, n, vocab).
    """

    def __init__(self, vocab_size, positions, d_model=32, h=2, n_layers=1, max_len=64):
        super().__init__()
        check_choice("positions", positions, POSITION_KINDS)
        check_positive_int("max_len", max_len)
        self.positions, self.max_len = positions, max_len
        self.embed = TokenEmbedding(vocab_size, d_model)
        if positions == "sinusoidal":
            self.pos = SinusoidalPositionalEncoding(d_model, max_len)
        elif positions == "learned":
            self.pos = LearnedPositionalEmbedding(max_len, d_model)
        else:
            self.pos = None
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, h, 2 * d_model, norm_first=True) for _ in range(n_layers)
        )
        if positions == "rotary":
            for layer in self.layers:
                layer.self_attn = RotarySelfAttention(d_model, h)
        self.norm = LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        check_token_ids("tokens", tokens, self.embed.vocab_size)
        x = self.embed(tokens)  # (batch, n, d_model)
        if self.pos is not None:
            x = self.pos(x)  # raises for n > max_len: a table has no row to add there
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))  # (batch, n, vocab_size)

    def extra_repr(self):
        return f"positions={self.positions!r}"


def train_probe(model, train_len, steps=300, batch_size=64, lr=3e-3, seed=0, progress=False,
                description="training"):
    """Train on the previous-token task with lengths drawn uniformly from [train_len/2, train_len].

    Lesson 06's `train` loop with Adam without weight decay, so rows of a learned table that
    no training sequence reaches keep their initial values exactly. Deterministic for a given
    seed (on one machine). progress: a tqdm bar labelled `description`.
    Returns the list of training losses.
    """
    check_positive_int("train_len", train_len)
    check_positive_int("steps", steps)
    if train_len < 2:
        raise ValueError(f"train_len must be >= 2 (a previous token needs 2 positions), got {train_len}")
    gen = torch.Generator().manual_seed(seed)
    vocab = model.embed.vocab_size

    def get_batch(step):  # a fresh length and fresh tokens every step
        n = int(torch.randint(max(2, train_len // 2), train_len + 1, (1,), generator=gen))
        return previous_token_batch(batch_size, n, vocab, gen)

    def loss_fn(model, batch):
        tokens, targets = batch
        logits = model(tokens)  # (batch, n, vocab)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)

    history = train(model, get_batch, torch.optim.Adam(model.parameters(), lr=lr), steps, loss_fn=loss_fn,
                    progress=progress, description=description)
    model.eval()
    return history.train_loss


@torch.no_grad()
def _correct(model, n, n_seq, seed):
    gen = torch.Generator().manual_seed(seed)
    tokens, targets = previous_token_batch(n_seq, n, model.embed.vocab_size, gen)
    was_training = model.training
    model.eval()
    try:
        pred = model(tokens).argmax(-1)
    finally:
        model.train(was_training)
    return (pred == targets).float(), targets != IGNORE  # (n_seq, n) each


def accuracy_by_length(model, lengths, n_seq=256, seed=1234):
    """Fraction of correct previous-token predictions in sequences of each length.

    Positions 1 … n-1 count (position 0 has no target). The same seed gives the same
    test sequences to every model. Returns a float tensor (len(lengths),).
    """
    out = []
    for n in lengths:
        correct, counted = _correct(model, int(n), n_seq, seed + int(n))
        out.append(correct[counted].mean())
    return torch.stack(out)


def accuracy_by_position(model, n, n_seq=512, seed=4321):
    """Accuracy at each position of sequences of length n: a float tensor (n,), NaN at 0."""
    correct, counted = _correct(model, n, n_seq, seed)
    acc = correct.mean(0)
    acc[~counted[0]] = float("nan")
    return acc


@torch.no_grad()
def first_layer_attention(model, tokens):
    """The attention weights of the first layer's heads, (batch, h, n, n), for tokens (batch, n).

    Row m is query position m, column n key position n. Works for every kind of positions.
    """
    check_token_ids("tokens", tokens, model.embed.vocab_size)
    x = model.embed(tokens)
    if model.pos is not None:
        x = model.pos(x)
    layer = model.layers[0]
    _, weights = layer.self_attn(layer.norm1(x), need_weights=True)
    return weights
