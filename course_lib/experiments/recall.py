"""The long-range recall task of lesson 01, and the two small models it compares.

A sequence opens with one *symbol* (a letter A..H), then n *distractors* (digits
0..9), then a query mark "?". The answer is the opening symbol:

    C 7 1 4 4 0 9 ?   ->  C

To answer, a model must carry the symbol past n distractors. An RNN carries it in its
hidden state through n + 1 sequential steps; one attention layer lets "?" look at the
symbol directly, one step away whatever n is.

Token ids: symbols 0..7, distractors 8..17, "?" = 18 (`VOCAB_SIZE` = 19).
"""

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_positive_int, check_token_ids
from ..nn.layers import MultiHeadAttention

__all__ = ["first_symbol_share", 
    "N_SYMBOLS", "N_DISTRACTORS", "QUERY", "VOCAB_SIZE",
    "recall_batch", "decode", "RecallRNN", "RecallAttention",
    "train_recall", "recall_accuracy",
]

N_SYMBOLS = 8                      # the letters to remember: ids 0..7
N_DISTRACTORS = 10                 # digits 0..9: ids 8..17
QUERY = N_SYMBOLS + N_DISTRACTORS  # "?": id 18
VOCAB_SIZE = QUERY + 1
_NAMES = [chr(ord("A") + i) for i in range(N_SYMBOLS)] + [str(i) for i in range(N_DISTRACTORS)] + ["?"]


def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int (the number of distractors), got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"n must be >= 0 (the number of distractors), got n={n}")


def recall_batch(n, batch_size, generator=None):
    """A batch of recall sequences with n distractors each.

    Returns (tokens, targets): tokens (batch_size, n + 2) int64 ids,
    targets (batch_size,) the opening symbol's id, in 0..N_SYMBOLS-1.
    """
    _check_n(n)
    check_positive_int("batch_size", batch_size)
    first = torch.randint(0, N_SYMBOLS, (batch_size,), generator=generator)
    noise = torch.randint(N_SYMBOLS, QUERY, (batch_size, n), generator=generator)
    query = torch.full((batch_size, 1), QUERY)
    return torch.cat([first[:, None], noise, query], dim=1), first


def decode(tokens):
    """One sequence of ids (n,) -> a readable string, e.g. "C 7 1 4 ?"."""
    return " ".join(_NAMES[i] for i in torch.as_tensor(tokens).tolist())


class RecallRNN(nn.Module):
    """Embedding -> Elman RNN (tanh) -> read the answer off the last hidden state.

    The recurrence is `nn.RNN`'s, h_t = tanh(W h_{t-1} + U x_t + b), the same as
    `course_lib.nn.rnn.ElmanRNN`, with its loop in C++ so training takes seconds.
    tokens (batch, n) -> logits (batch, N_SYMBOLS).
    """

    def __init__(self, d_model=32):
        super().__init__()
        check_positive_int("d_model", d_model)
        self.embed = nn.Embedding(VOCAB_SIZE, d_model)
        self.rnn = nn.RNN(d_model, d_model, nonlinearity="tanh", batch_first=True)
        self.readout = nn.Linear(d_model, N_SYMBOLS)

    def forward(self, tokens):
        check_token_ids("tokens", tokens, VOCAB_SIZE)
        h, _ = self.rnn(self.embed(tokens))  # (batch, n, d_model): n sequential steps
        return self.readout(h[:, -1])


class RecallAttention(nn.Module):
    """Embedding -> one self-attention layer (one head) -> read the answer at "?".

    No positional information: the symbol is recognisable by its content alone, so
    the query at "?" can find it wherever it is. tokens (batch, n) -> logits (batch, N_SYMBOLS).
    """

    def __init__(self, d_model=32):
        super().__init__()
        check_positive_int("d_model", d_model)
        self.embed = nn.Embedding(VOCAB_SIZE, d_model)
        self.attn = MultiHeadAttention(d_model, h=1)
        self.readout = nn.Linear(d_model, N_SYMBOLS)

    def forward(self, tokens):
        check_token_ids("tokens", tokens, VOCAB_SIZE)
        x = self.embed(tokens)                  # (batch, n, d_model)
        return self.readout(self.attn(x)[:, -1])  # every position in one step; keep "?"'s


def train_recall(model, n, max_steps=300, batch_size=32, lr=3e-3, patience=20, seed=0, progress=None):
    """Train `model` on recall with n distractors; returns the number of steps taken.

    Adam, gradient norm clipped at 1. Stops early once `patience` consecutive training
    batches are answered 100 % right (a fresh random batch every step, so this is not
    memorisation). `progress`: an optional tqdm bar, advanced once per step.
    """
    _check_n(n)
    for name, value in (("max_steps", max_steps), ("batch_size", batch_size), ("patience", patience)):
        check_positive_int(name, value)
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got lr={lr}")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    streak = 0
    for step in range(1, max_steps + 1):
        tokens, targets = recall_batch(n, batch_size, gen)
        logits = model(tokens)
        loss = F.cross_entropy(logits, targets)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if progress is not None:
            progress.update(1)
        streak = streak + 1 if bool((logits.argmax(-1) == targets).all()) else 0
        if streak >= patience:
            break
    return step


@torch.no_grad()
def recall_accuracy(model, n, n_eval=1000, seed=12345):
    """Fraction of `n_eval` fresh sequences (n distractors) answered right, a float."""
    _check_n(n)
    check_positive_int("n_eval", n_eval)
    model.eval()
    tokens, targets = recall_batch(n, n_eval, torch.Generator().manual_seed(seed))
    return (model(tokens).argmax(-1) == targets).float().mean().item()


def first_symbol_share(model, n, count=200, seed=123):
    """How much of a RecallRNN's last hidden state h_n the opening symbol still decides.

    `count` random sequences with n distractors are each run with every possible opening
    symbol (the distractors unchanged). Returns the share, in [0, 1], of h_n's variance
    that is explained by the symbol: near 1 when h_n still holds it, near 0 when the one
    fixed-size state has lost it under the distractors (the RNN's bottleneck).
    """
    if not isinstance(model, RecallRNN):
        raise TypeError(f"first_symbol_share reads a RecallRNN's hidden state, got {type(model).__name__}")
    _check_n(n)
    check_positive_int("count", count)
    tokens, _ = recall_batch(n, count, generator=torch.Generator().manual_seed(seed))
    last = []
    with torch.no_grad():
        for symbol in range(N_SYMBOLS):
            t = tokens.clone()
            t[:, 0] = symbol                                   # only the opening symbol changes
            h, _ = model.rnn(model.embed(t))                    # (count, n + 2, d_model)
            last.append(h[:, -1])
    h_n = torch.stack(last)                                     # (symbols, count, d_model)
    between = h_n.var(dim=0, unbiased=False).sum(-1).mean()    # spread due to the symbol alone
    total = h_n.reshape(-1, h_n.shape[-1]).var(dim=0, unbiased=False).sum()
    return min(1.0, (between / total).item()) if total > 0 else 0.0   # 1 + rounding is still 1
