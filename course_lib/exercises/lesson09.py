"""Lesson 09 — transformer families and a pretrained encoder.

- `mean_pool(hidden, attention_mask)`: a sentence vector = the mean of its *real*
  tokens' hidden states (padding left out) — how all-MiniLM-L6-v2 embeds sentences.
- `previous_token_score(weights)`: how much each head attends to the previous token,
  the first statistic of the head taxonomy.
"""
import torch

from .feedback import in_range, unchanged_when
from .framework import Exercise, Mistake

__all__ = ["check_mean_pool", "check_previous_token_score"]


# ----------------------------------------------------------------------------- mean_pool
def mean_pool_reference(hidden, attention_mask):
    """hidden (batch, n, d), attention_mask (batch, n) of 0/1 -> (batch, d)."""
    m = attention_mask.to(hidden.dtype).unsqueeze(-1)            # (batch, n, 1)
    return (hidden * m).sum(dim=1) / m.sum(dim=1)


def _pool_inputs(gen):
    batch, n, d = 3, 6, 5
    hidden = torch.randn(batch, n, d, generator=gen) * 2 + 0.5
    lengths = torch.tensor([6, 4, 2])                             # sentence 0 has no padding
    mask = (torch.arange(n)[None, :] < lengths[:, None]).long()
    return hidden, mask


MEAN_POOL = Exercise(
    name="mean_pool",
    reference=mean_pool_reference,
    make_inputs=_pool_inputs,
    mistakes=[
        Mistake("you averaged over every position, padding included; multiply by the mask "
                "and divide by the number of real tokens, `mask.sum(dim=1)`",
                lambda h, m: h.mean(dim=1)),
        Mistake("you zeroed the padding but still divided by the full length n; divide by "
                "the number of real tokens, `mask.sum(dim=1, keepdim=True)`",
                lambda h, m: (h * m.unsqueeze(-1)).sum(dim=1) / h.shape[1]),
        Mistake("you summed the real tokens but did not divide: that is a sum, not a mean",
                lambda h, m: (h * m.unsqueeze(-1)).sum(dim=1)),
        Mistake("you took the [CLS] vector (position 0); this model's sentence vector is the "
                "mean of all real tokens", lambda h, m: h[:, 0]),
        # The next two crash on the checker's sizes (n ≠ d, batch ≠ d): matched, and named.
        Mistake("hidden (batch, n, d) times attention_mask (batch, n) does not line up: broadcasting "
                "matches the mask's n with hidden's last axis, d. Give the mask a feature axis first, "
                "attention_mask[..., None] — (batch, n, 1), one 0/1 per token",
                lambda h, m: (h * m).sum(dim=1) / m.sum(dim=1, keepdim=True)),
        Mistake("attention_mask.sum(dim=1) is (batch,), one count per sentence, and the sums are "
                "(batch, d): keep the summed axis, .sum(dim=1, keepdim=True) → (batch, 1), so each "
                "sentence's row is divided by its own count",
                lambda h, m: (h * m.unsqueeze(-1)).sum(dim=1) / m.sum(dim=1)),
    ],
    alternatives=[
        lambda h, m: torch.stack([h[b, m[b].bool()].mean(dim=0) for b in range(h.shape[0])]),
        lambda h, m: torch.einsum("bnd,bn->bd", h, m.to(h.dtype)) / m.sum(dim=1, keepdim=True).to(h.dtype),
    ],
    # batch = n = d: the two slips without a feature or count axis run there (wrongly), so a
    # match needs their numbers too, not only the crash both share with other slips (issue 44).
    probes=lambda gen: [(torch.randn(3, 3, 3, generator=gen) * 2 + 0.5,
                         torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0]]))],
    properties=[unchanged_when(lambda a: (torch.where(a[1][..., None].bool(), a[0], a[0] + 5.0), a[1]),
                               "your sentence vectors change when the hidden states at *padding* "
                               "positions change (where attention_mask is 0): padding must not count")],
    small_inputs=lambda gen: [
        (torch.tensor([[[1.0, 2.0], [3.0, 4.0]]]), torch.tensor([[1, 1]])),
        (torch.tensor([[[1.0, 2.0], [3.0, 4.0]]]), torch.tensor([[1, 0]])),
        (torch.tensor([[[1.0, 2.0], [3.0, 4.0], [5.0, 0.0]], [[0.0, 1.0], [2.0, 2.0], [9.0, 9.0]]]),
         torch.tensor([[1, 1, 1], [1, 1, 0]]))],
)


def check_mean_pool(fn):
    """Check a learner's `mean_pool(hidden, attention_mask)`; prints a verdict, never raises."""
    return MEAN_POOL.check(fn)


# ----------------------------------------------------------------------------- previous token
def previous_token_score_reference(weights):
    """weights (h, n, n), rows sum to 1 -> (h,): mean of A[i, i-1] over i = 1 .. n-1."""
    return torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1).mean(dim=-1)


def _score_inputs(gen):
    h, n = 3, 7
    scores = torch.randn(h, n, n, generator=gen) * 2
    return (torch.softmax(scores, dim=-1),)


PREVIOUS_TOKEN_SCORE = Exercise(
    name="previous_token_score",
    reference=previous_token_score_reference,
    make_inputs=_score_inputs,
    mistakes=[
        Mistake("you read A[i, i+1], the *next* token (the diagonal above the main one); "
                "the previous token of query i is key i-1: `offset=-1`",
                lambda w: torch.diagonal(w, offset=1, dim1=-2, dim2=-1).mean(dim=-1)),
        Mistake("you read the main diagonal A[i, i] — attention to itself; the previous "
                "token is one below it (`offset=-1`)",
                lambda w: torch.diagonal(w, dim1=-2, dim2=-1).mean(dim=-1)),
        Mistake("you divided by n instead of n-1: query 0 has no previous token, so average "
                "over the n-1 queries that do",
                lambda w: torch.diagonal(w, offset=-1, dim1=-2, dim2=-1).sum(dim=-1) / w.shape[-1]),
        Mistake("you summed A[i, i-1] over the queries; the score is their *mean*, a number "
                "between 0 and 1",
                lambda w: torch.diagonal(w, offset=-1, dim1=-2, dim2=-1).sum(dim=-1)),
        Mistake("your queries start at i = 0, whose 'previous' key i − 1 = −1 wraps around to the "
                "*last* key, A[0, n − 1]. Query 0 has no previous token: average over i = 1 .. n − 1",
                lambda w: w[:, torch.arange(w.shape[-1]), torch.arange(w.shape[-1]) - 1].mean(dim=-1)),
    ],
    alternatives=[
        lambda w: torch.stack([sum(w[hd, i, i - 1] for i in range(1, w.shape[-1])) / (w.shape[-1] - 1)
                               for hd in range(w.shape[0])]),
        lambda w: w[:, torch.arange(1, w.shape[-1]), torch.arange(w.shape[-1] - 1)].mean(dim=-1),
    ],
    properties=[in_range(0.0, 1.0, "scores", "a mean of attention weights lies between 0 and 1")],
    small_inputs=lambda gen: [(torch.tensor([[[1.0, 0.0], [0.25, 0.75]]]),),
                              (torch.tensor([[[1.0, 0.0, 0.0], [0.25, 0.75, 0.0], [0.1, 0.6, 0.3]]]),)],
)


def check_previous_token_score(fn):
    """Check a learner's `previous_token_score(weights)`; prints a verdict, never raises."""
    return PREVIOUS_TOKEN_SCORE.check(fn)
