"""Figures for lesson 00."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch

__all__ = ["softmax_temperature_bars"]


def softmax_temperature_bars(scores, labels=None, temperature: float = 1.0):
    """Bar chart of softmax(scores / temperature).

    scores: 1-D sequence of n numbers. Returns the Figure.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    s = torch.as_tensor(scores, dtype=torch.float32)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {tuple(s.shape)}")
    labels = list(labels) if labels is not None else [str(i) for i in range(len(s))]
    if len(labels) != len(s):
        raise ValueError(f"got {len(labels)} labels for {len(s)} scores")
    p = torch.softmax(s / temperature, dim=0)
    fig, ax = plt.subplots(figsize=(6, 2.6))
    ax.bar(labels, p.numpy(), color="tab:blue")
    ax.set_ylim(0, 1)
    ax.set_ylabel("probability")
    ax.set_title(f"softmax(scores / T), T = {temperature:.2f}")
    for i, v in enumerate(p.tolist()):
        ax.text(i, v + 0.02, f"{v:.2f}", ha="center", fontsize=9)
    fig.tight_layout()
    return fig
