"""Figures of training runs (lessons 06, 07, 08): loss curves from `training.History`."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt

from .describe import describe, fmt
from .palette import BLACK, CYCLE, GREY

__all__ = ["loss_curves"]


def _num(v):
    """A loss as the description prints it: 2 decimals, or 2 significant digits below 0.01."""
    return fmt(v) if v == 0 or abs(v) >= 0.01 else f"{v:.1e}"


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
    said = []
    for k, (label, h) in enumerate(histories.items()):
        if not h.train_loss:
            raise ValueError(f"history {label!r} has no training steps")
        name, color = f"{label} " if label else "", CYCLE[k % len(CYCLE)]
        ax.plot(h.steps, h.train_loss, color=color, alpha=0.25, lw=0.8)
        # A trailing mean lags behind a falling loss; draw each mean at the middle of its window.
        centers = [s - (min(i + 1, smooth) - 1) / 2 for i, s in enumerate(h.steps)]
        mean = h.smoothed(smooth)
        ax.plot(centers, mean, color=color, lw=1.8, label=f"{name}train (mean of {smooth})")
        words = f"{name}train from {_num(mean[0])} to {_num(mean[-1])} at step {h.steps[-1]}"
        if h.eval_loss:
            ax.plot(h.eval_steps, h.eval_loss, "o--", color=color, ms=4, label=f"{name}validation")
            best = min(range(len(h.eval_loss)), key=lambda i: h.eval_loss[i])
            words += f", validation {_num(h.eval_loss[-1])} at step {h.eval_steps[-1]}"
            if best != len(h.eval_loss) - 1:
                words += f" (lowest {_num(h.eval_loss[best])} at step {h.eval_steps[best]})"
        said.append(words)
    for (label, value), ls in zip((reference or {}).items(), (":", "-.", "--")):
        if not math.isfinite(value):
            raise ValueError(f"reference {label!r} must be a finite number")
        ax.axhline(value, color=GREY, ls=ls, lw=1.2)
        # Labels in black on a white patch, inside the right edge: readable over the curves and grid.
        ax.text(0.99, value, f"{label}: {_num(value)}", transform=ax.get_yaxis_transform(), va="bottom",
                ha="right", fontsize=10, color=BLACK, bbox=dict(facecolor="white", edgecolor="none",
                                                               alpha=0.85, pad=1))
        said.append(f"{label} {_num(value)}")
    if log_y:
        ax.set_yscale("log")
    elif reference:                       # room above the highest line for its label
        low, high = ax.get_ylim()
        ax.set_ylim(low, max(high, max(reference.values()) + 0.08 * (high - low)))
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss (nats / token)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return describe(fig, f"Cross-entropy loss (nats / token{', log scale' if log_y else ''}) against the step, the "
                         f"training loss as a mean of the last {smooth} steps: {'; '.join(said)}.")
