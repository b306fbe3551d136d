"""Figures of training runs (lessons 06, 07, 08): loss curves from `training.History`."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt

__all__ = ["loss_curves"]


def loss_curves(histories, smooth=20, reference=None, log_y=False):
    """Training loss (smoothed) and evaluation loss against the step.

    histories: a `course_lib.nn.training.History`, or {label: History} to compare runs.
    smooth: window of the moving average drawn over the raw training loss (1 = raw).
    reference: optional {label: value} horizontal lines (e.g. {"uniform guess": ln V}).
    Returns the Figure.
    """
    if hasattr(histories, "train_loss"):
        histories = {"": histories}
    if not isinstance(histories, dict) or not histories:
        raise ValueError("histories must be a History or a non-empty dict {label: History}")
    if isinstance(smooth, bool) or not isinstance(smooth, int) or smooth < 1:
        raise ValueError(f"smooth must be an int >= 1, got {smooth!r}")
    fig, ax = plt.subplots(figsize=(7, 3.4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (label, h), color in zip(histories.items(), colors):
        if not h.train_loss:
            raise ValueError(f"history {label!r} has no training steps")
        name = f"{label} " if label else ""
        ax.plot(h.steps, h.train_loss, color=color, alpha=0.25, lw=0.8)
        # A trailing mean lags behind a falling loss; draw each mean at the middle of its window.
        centers = [s - (min(i + 1, smooth) - 1) / 2 for i, s in enumerate(h.steps)]
        ax.plot(centers, h.smoothed(smooth), color=color, lw=1.8, label=f"{name}train (mean of {smooth})")
        if h.eval_loss:
            ax.plot(h.eval_steps, h.eval_loss, "o--", color=color, ms=4, label=f"{name}validation")
    for (label, value), ls in zip((reference or {}).items(), (":", "-.", "--")):
        if not math.isfinite(value):
            raise ValueError(f"reference {label!r} must be a finite number")
        ax.axhline(value, color="gray", ls=ls, lw=1)
        ax.text(ax.get_xlim()[1], value, f" {label}", va="bottom", ha="right", fontsize=8, color="gray")
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss (nats / token)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
