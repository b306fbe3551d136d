"""The "bindings" toy task: one task that needs two different attention relations
(lessons 04 and 05).

A sequence mixes two kinds of token:

- a **binding** such as ``c3`` — "letter c holds the digit 3" (each letter is bound at
  most once per sequence);
- a **query** such as ``c?`` — "which digit does c hold?" (only for letters already bound).

At every position the model answers two questions, each read from the residual stream
by its own linear readout:

1. ``prev``: the digit of the *previous* token (where the previous token is a binding) —
   a purely positional relation: look one step back;
2. ``recall``: at a query, the digit bound to its letter — a content relation: look for
   the earlier binding with the same letter, wherever it is.

One attention head returns one weighted average per position, so it cannot fetch both
tokens cleanly at once; two heads can, one relation each (lesson 04 shows it).

Token ids: binding (letter l, digit d) is ``l * N_DIGITS + d``; query of letter l is
``N_LETTERS * N_DIGITS + l``. Targets are digit ids, or ``IGNORE`` (-100) where a
question has no answer (cross-entropy skips those positions).
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_positive_int, check_token_ids
from ..nn.layers import MultiHeadAttention
from ..nn.models import keep_attention

__all__ = [
    "LETTERS",
    "N_DIGITS",
    "BINDING_VOCAB",
    "IGNORE",
    "BindingBatch",
    "bindings_batch",
    "token_labels",
    "relation_masks",
    "ResidualAttention",
    "BindingModel",
    "binding_loss",
    "train_binding_model",
    "binding_accuracy",
    "head_relation_scores",
    "attention_by_layer",
]

LETTERS = "abcdef"
N_LETTERS = len(LETTERS)
N_DIGITS = 5
BINDING_VOCAB = [f"{c}{d}" for c in LETTERS for d in range(N_DIGITS)] + [f"{c}?" for c in LETTERS]
IGNORE = -100
_FIRST_QUERY = N_LETTERS * N_DIGITS


@dataclass
class BindingBatch:
    """tokens (batch, n) ids; prev and recall (batch, n) digit targets or IGNORE."""

    tokens: torch.Tensor
    prev: torch.Tensor
    recall: torch.Tensor


def bindings_batch(batch, n=12, generator=None, p_bind=0.45):
    """A batch of random binding/query sequences with both targets.

    Positions 0 and 1 are always bindings; afterwards each position is a new binding with
    probability p_bind (while unbound letters remain), otherwise a query of a letter
    bound earlier. Fully vectorized: cheap enough to draw a fresh batch every step.
    """
    check_positive_int("batch", batch)
    check_positive_int("n", n)
    if not 0.0 < p_bind <= 1.0:
        raise ValueError(f"p_bind must be in (0, 1], got p_bind={p_bind}")
    g = generator
    order = torch.argsort(torch.rand(batch, N_LETTERS, generator=g), dim=1)  # binding order
    digit_of = torch.randint(N_DIGITS, (batch, N_LETTERS), generator=g)  # each letter's digit
    is_bind = torch.rand(batch, n, generator=g) < p_bind
    is_bind[:, :2] = True  # two letters bound before the first query
    is_bind &= is_bind.long().cumsum(1) <= N_LETTERS  # at most one binding per letter
    bound = is_bind.long().cumsum(1)  # letters bound so far, >= 1
    bind_letter = order.gather(1, (bound - 1).clamp(max=N_LETTERS - 1))
    pick = (torch.rand(batch, n, generator=g) * bound).long()  # one of the bound letters
    query_letter = order.gather(1, pick.clamp(max=N_LETTERS - 1))
    letter = torch.where(is_bind, bind_letter, query_letter)
    digit = digit_of.gather(1, letter)
    tokens = torch.where(is_bind, letter * N_DIGITS + digit, _FIRST_QUERY + letter)
    prev = torch.full((batch, n), IGNORE)
    prev[:, 1:] = torch.where(is_bind[:, :-1], digit[:, :-1], IGNORE)
    recall = torch.where(is_bind, IGNORE, digit)
    return BindingBatch(tokens, prev, recall)


def token_labels(tokens):
    """Token ids (n,) or a list of ids -> their strings, e.g. ['c3', 'a1', 'c?']."""
    return [BINDING_VOCAB[int(t)] for t in tokens]


def _letters(tokens):
    is_query = tokens >= _FIRST_QUERY
    return torch.where(is_query, tokens - _FIRST_QUERY, tokens // N_DIGITS), is_query


def relation_masks(tokens):
    """Where each relation points, as bool (batch, n_q, n_k) masks over key positions.

    prev[b, t, t-1] is True for every t >= 1 (the previous position). match[b, t, j] is
    True when t is a query and j is the binding of the same letter.
    """
    check_token_ids("tokens", tokens, len(BINDING_VOCAB))
    batch, n = tokens.shape
    prev = torch.zeros(batch, n, n, dtype=torch.bool)
    idx = torch.arange(1, n)
    prev[:, idx, idx - 1] = True
    letter, is_query = _letters(tokens)
    match = (letter[:, :, None] == letter[:, None, :]) & is_query[:, :, None] & ~is_query[:, None, :]
    return prev, match


class ResidualAttention(nn.Module):
    """x + MultiHead(x): one attention layer with its residual connection (no FFN, no norm).

    x: (batch, n, d_model) -> (batch, n, d_model).
    """

    def __init__(self, d_model, h):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, h)

    def forward(self, x):
        return x + self.attn(x)


class BindingModel(nn.Module):
    """Token + learned position embeddings, a stack of blocks, two linear readouts.

    blocks: an nn.ModuleList of modules (batch, n, d) -> (batch, n, d); by default
    `n_layers` ResidualAttention layers with h heads (an attention-only model).
    final_norm: a module applied before the readouts (pre-norm stacks need a LayerNorm).
    tokens (batch, n) -> (prev_logits, recall_logits), each (batch, n, N_DIGITS).
    """

    def __init__(self, d_model=32, h=2, n_layers=1, max_len=12, blocks=None, final_norm=None):
        super().__init__()
        check_positive_int("max_len", max_len)
        self.max_len = max_len
        self.embed = nn.Embedding(len(BINDING_VOCAB), d_model)
        self.pos = nn.Parameter(torch.randn(max_len, d_model) * 0.5)
        if blocks is None:
            check_positive_int("n_layers", n_layers)
            blocks = nn.ModuleList(ResidualAttention(d_model, h) for _ in range(n_layers))
        self.blocks = blocks
        self.final_norm = final_norm if final_norm is not None else nn.Identity()
        self.read_prev = nn.Linear(d_model, N_DIGITS)
        self.read_recall = nn.Linear(d_model, N_DIGITS)

    def forward(self, tokens):
        check_token_ids("tokens", tokens, len(BINDING_VOCAB))
        if tokens.shape[1] > self.max_len:
            raise ValueError(f"tokens has length {tokens.shape[1]} > max_len={self.max_len}")
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]  # (batch, n, d_model)
        for block in self.blocks:
            x = block(x)
        x = self.final_norm(x)
        return self.read_prev(x), self.read_recall(x)


def binding_loss(model, batch):
    """Sum of the two cross-entropies (each averaged over the positions that have an answer)."""
    prev_logits, recall_logits = model(batch.tokens)
    return (F.cross_entropy(prev_logits.flatten(0, 1), batch.prev.flatten(), ignore_index=IGNORE)
            + F.cross_entropy(recall_logits.flatten(0, 1), batch.recall.flatten(), ignore_index=IGNORE))


def train_binding_model(model, steps=150, lr=1e-2, batch_size=64, n=12, seed=0, progress=False, desc=None):
    """Adam on fresh random batches; returns the list of per-step losses.

    Deterministic for a given seed (batches come from their own generator). A step whose
    loss is not finite is recorded as NaN and training stops there (the model diverged).
    """
    check_positive_int("steps", steps)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    model.train()
    losses = []
    steps_iter = range(steps)
    if progress:
        from tqdm.auto import tqdm
        steps_iter = tqdm(steps_iter, desc=desc, leave=False)
    for _ in steps_iter:
        loss = binding_loss(model, bindings_batch(batch_size, n, g))
        if not torch.isfinite(loss):
            losses.append(float("nan"))
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def binding_accuracy(model, examples=1000, n=12, seed=12345):
    """Accuracy of each readout on fresh sequences: {'prev': p, 'recall': r}."""
    batch = bindings_batch(examples, n, torch.Generator().manual_seed(seed))
    prev_logits, recall_logits = model(batch.tokens)
    acc = {}
    for name, logits, target in (("prev", prev_logits, batch.prev), ("recall", recall_logits, batch.recall)):
        has = target != IGNORE
        acc[name] = (logits.argmax(-1) == target)[has].float().mean().item()
    return acc


def head_relation_scores(weights, tokens):
    """How much attention each head puts where each relation points.

    weights: a list (one per layer) of (batch, h, n, n) attention weights on `tokens`.
    Returns a (n_layers, h, 2) tensor: [..., 0] the mean weight from position t on t-1,
    [..., 1] the mean weight from a query on the binding of its letter. Positions where
    the two relations point at the same key (a query right after its own binding) are
    left out of both averages, so a head cannot score on one by doing the other.
    """
    prev, match = relation_masks(tokens)
    overlap = (prev & match).any(-1)  # (batch, n)
    prev_rows = prev.any(-1) & ~overlap
    match_rows = match.any(-1) & ~overlap
    out = []
    for w in weights:
        on_prev = (w * prev[:, None]).sum(-1)  # (batch, h, n)
        on_match = (w * match[:, None]).sum(-1)
        out.append(torch.stack([
            on_prev.transpose(0, 1)[:, prev_rows].mean(-1),
            on_match.transpose(0, 1)[:, match_rows].mean(-1),
        ], dim=-1))
    return torch.stack(out)


@torch.no_grad()
def attention_by_layer(model, tokens):
    """Run `model(tokens)` once; return one (batch, h, n, n) weight tensor per attention
    layer, in the order the layers run."""
    attn = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not attn:
        raise ValueError("model has no MultiHeadAttention layer")
    was_training = model.training
    model.eval()
    try:
        with keep_attention(model):
            model(tokens)
            return [m.last_weights for m in attn]
    finally:
        model.train(was_training)
