"""Figures for lesson 00."""
from __future__ import annotations

import torch

from .describe import fmt
from .live import LivePlot
from .palette import BLUE

__all__ = ["softmax_temperature_bars"]


class TemperatureBars(LivePlot):
    """Bar chart of softmax(scores / T) for fixed scores; T moves (lesson 00's explorer)."""

    figsize = (6, 2.6)

    def __init__(self, scores, labels=None):
        s = torch.as_tensor(scores, dtype=torch.float32)
        if s.ndim != 1:
            raise ValueError(f"scores must be 1-D, got shape {tuple(s.shape)}")
        labels = list(labels) if labels is not None else [str(i) for i in range(len(s))]
        if len(labels) != len(s):
            raise ValueError(f"got {len(labels)} labels for {len(s)} scores")
        self.scores, self.labels = s, labels

    def check(self, temperature):
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")

    def build(self, fig, temperature):
        ax = fig.add_subplot()
        self.bars = ax.bar(self.labels, [0.0] * len(self.labels), color=BLUE)
        ax.set_ylim(0, 1)
        ax.set_ylabel("probability")
        self.title = ax.set_title("softmax(scores / T), T = 0.00")
        self.values = [ax.text(i, 0.02, "0.00", ha="center", fontsize=9) for i in range(len(self.labels))]
        fig.tight_layout()
        return [*self.bars, *self.values, self.title]

    def update(self, temperature):
        p = torch.softmax(self.scores / temperature, dim=0).tolist()
        for bar, text, v in zip(self.bars, self.values, p):
            bar.set_height(v)
            text.set_y(v + 0.02)
            text.set_text(f"{v:.2f}")
        self.title.set_text(f"softmax(scores / T), T = {temperature:.2f}")

    def describe(self, temperature):
        p = [bar.get_height() for bar in self.bars]
        order = sorted(range(len(p)), key=lambda i: -p[i])
        said = ", ".join(f"'{self.labels[i]}' {fmt(p[i])}" for i in order[:6])
        which = "the 6 largest" if len(p) > 6 else "largest first"
        return (f"Softmax probabilities of {len(p)} scores at temperature T = {temperature:.2f}, "
                f"{which}: {said}; they sum to 1.")


def softmax_temperature_bars(scores, labels=None, temperature: float = 1.0):
    """Bar chart of softmax(scores / temperature).

    scores: 1-D sequence of n numbers. Returns the Figure.
    """
    return TemperatureBars(scores, labels).figure(temperature=temperature)
