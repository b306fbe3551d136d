"""What attention heads do, measured: pattern statistics over heads (lessons 09, 10).

Every score reads attention weights `A[i, j]` (query i, key j; rows sum to 1) and
averages one kind of entry over the query positions:

- offset score  A[i, i + o]: o = -1 previous token, o = +1 next token, o = 0 itself;
- column score  A[i, j₀]: how much every token attends to one fixed position, e.g.
  [CLS] (j₀ = 0) or [SEP] (the last real token) — "delimiter" heads that park attention
  where it changes little;
- normalized entropy  H(A[i]) / log n ∈ [0, 1]: 1 is uniform attention over the whole
  sentence ("bag of words"), 0 is attention on one token.

`classify_heads` gives each head the label of its strongest pattern.
"""
from __future__ import annotations

import math

import torch

__all__ = ["offset_score", "stack_layers", "pattern_scores", "classify_heads", "PATTERNS"]

# label -> what it means; the order is the order of the legend in lesson 09.
PATTERNS = {
    "previous": "attends to the previous token (A[i, i-1])",
    "next": "attends to the next token (A[i, i+1])",
    "self": "attends to itself (A[i, i])",
    "[CLS]": "attends to the first token, [CLS]",
    "[SEP]": "attends to the last token, [SEP]",
    "broad": "spreads attention over the whole sentence (normalized entropy high)",
    "mixed": "none of the above dominates",
}


def offset_score(weights, offset, queries=None):
    """Mean of A[i, i + offset] over query positions i (where i + offset is a key).

    weights: (..., n, n). queries: optional 1-D index tensor or slice of the query
    positions to average over (default: every i for which i + offset exists).
    Returns a tensor (...) — e.g. (layers, heads) for stacked weights.
    """
    if not isinstance(weights, torch.Tensor) or weights.dim() < 2:
        raise ValueError("weights must be a tensor (..., n_q, n_k)")
    n_q, n_k = weights.shape[-2:]
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise TypeError(f"offset must be an int, got {type(offset).__name__}")
    i = torch.arange(n_q)
    if queries is not None:
        i = i[queries]
    i = i[(i + offset >= 0) & (i + offset < n_k)]
    if i.numel() == 0:
        raise ValueError(f"no query position has a key at offset {offset} (n_q={n_q}, n_k={n_k})")
    return weights[..., i, i + offset].mean(dim=-1)


def stack_layers(attention):
    """A list of per-layer tensors (batch, h, n, n) -> one tensor (layers, batch, h, n, n)."""
    if isinstance(attention, torch.Tensor):
        if attention.dim() != 5:
            raise ValueError(f"stacked attention must be (layers, batch, h, n, n), got {tuple(attention.shape)}")
        return attention
    if not isinstance(attention, (list, tuple)) or not attention:
        raise ValueError("attention must be a non-empty list of per-layer tensors (batch, h, n, n)")
    return torch.stack([a.detach() for a in attention])


def pattern_scores(attention, lengths=None):
    """Every head's pattern scores, averaged over the examples of a batch.

    attention: list of per-layer tensors (batch, h, n, n) (or stacked
        (layers, batch, h, n, n)) for BERT-style inputs `[CLS] ... [SEP] [PAD]...`.
    lengths: real length of each example (padding comes last); default all n.
    Scores average over the *inner* query tokens 1 .. len-2 (not [CLS] or [SEP]).
    Returns {"previous", "next", "self", "[CLS]", "[SEP]", "broad"}: each (layers, h);
    "broad" is the mean normalized entropy of the inner queries' rows.
    """
    a = stack_layers(attention).float()
    n_layers, batch, h, n, _ = a.shape
    lengths = [n] * batch if lengths is None else [int(x) for x in lengths]
    if len(lengths) != batch:
        raise ValueError(f"lengths has {len(lengths)} entries for a batch of {batch}")
    if min(lengths) < 4 or max(lengths) > n:
        raise ValueError(f"every length must be between 4 and n={n}, got {lengths}")
    total = {k: torch.zeros(n_layers, h) for k in ("previous", "next", "self", "[CLS]", "[SEP]", "broad")}
    for b, length in enumerate(lengths):
        w = a[:, b, :, :length, :length]            # (layers, h, len, len)
        inner = slice(1, length - 1)
        total["previous"] += offset_score(w, -1, inner)
        total["next"] += offset_score(w, +1, inner)
        total["self"] += offset_score(w, 0, inner)
        total["[CLS]"] += w[..., inner, 0].mean(-1)
        total["[SEP]"] += w[..., inner, length - 1].mean(-1)
        rows = w[..., inner, :]
        entropy = -(rows * rows.clamp_min(1e-12).log()).sum(-1) / math.log(length)
        total["broad"] += entropy.mean(-1)
    return {k: v / batch for k, v in total.items()}


def classify_heads(scores, threshold=0.5, broad=0.75):
    """Label every head with its dominant pattern.

    A head whose largest positional/delimiter score is ≥ threshold gets that label;
    otherwise "broad" if its mean normalized entropy is ≥ broad; otherwise "mixed".
    scores: the dict from `pattern_scores`. Returns a list (layers) of lists (heads).
    """
    if not 0 < threshold <= 1 or not 0 < broad <= 1:
        raise ValueError(f"threshold and broad must be in (0, 1], got {threshold}, {broad}")
    kinds = ["previous", "next", "self", "[CLS]", "[SEP]"]
    stacked = torch.stack([scores[k] for k in kinds])   # (5, layers, h)
    best, which = stacked.max(dim=0)
    labels = []
    for layer in range(best.shape[0]):
        row = []
        for head in range(best.shape[1]):
            if best[layer, head] >= threshold:
                row.append(kinds[which[layer, head]])
            elif scores["broad"][layer, head] >= broad:
                row.append("broad")
            else:
                row.append("mixed")
        labels.append(row)
    return labels
