"""Figures for lesson 06's sampling: the next-token distribution and a sampled text."""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import torch

__all__ = ["next_token_bars", "sample_panel"]


def _label(ch):
    return {"\n": "\\n", " ": "␣"}.get(ch, ch)


def _check_probs(probs, labels):
    p = torch.as_tensor(probs, dtype=torch.float64)
    if p.dim() != 1:
        raise ValueError(f"probs must be 1-D (vocab,), got shape {tuple(p.shape)}")
    if len(labels) != p.shape[0]:
        raise ValueError(f"got {len(labels)} labels for {p.shape[0]} probabilities")
    return p


def _bars(ax, p, labels, top, title):
    top = min(top, p.shape[0])
    # Most likely first; ties (the zeros top-k leaves) in the vocabulary's order, not topk's.
    idx = sorted(range(p.shape[0]), key=lambda i: (-float(p[i]), str(labels[i])))[:top]
    values = p[idx]
    names = [_label(labels[i]) for i in idx]
    ax.bar(range(top), values.numpy(), color=["tab:blue" if v > 0 else "tab:gray" for v in values.tolist()])
    ax.set_xticks(range(top), names, fontfamily="monospace")
    if (values == 0).any():
        ax.set_xlabel("characters with probability 0 (cut by top-k) in alphabetical order", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("probability")
    ax.set_title(title, fontsize=10)


def next_token_bars(probs, labels, top=20, title="next-token distribution"):
    """The `top` most likely next tokens as bars. probs: (vocab,), labels: vocab strings
    (newline is drawn as \\n, space as ␣). Returns the Figure."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be an int >= 1, got {top!r}")
    p = _check_probs(probs, labels)
    fig, ax = plt.subplots(figsize=(7, 2.4))
    _bars(ax, p, labels, top, title)
    fig.tight_layout()
    return fig


def sample_panel(prompt, text, probs, labels, temperature, top_k, top=20, width=72, pending=False):
    """Sampling, seen from both ends: the distribution for the first new token (top) and
    the whole sampled text (bottom, the prompt included).

    prompt: the prompt string; text: prompt + continuation; probs: (vocab,) the
    distribution the first new token was drawn from. pending: the text is still growing
    (drawn with a trailing " …"). Returns the Figure.
    """
    if not text.startswith(prompt):
        raise ValueError("text must start with the prompt")
    p = _check_probs(probs, labels)
    lines = []
    for para in (text + " …" if pending else text).split("\n"):
        lines.extend(textwrap.wrap(para, width, replace_whitespace=False, drop_whitespace=False) or [""])
    lines = lines[:16]
    text_height = 0.5 + 0.17 * len(lines)   # inches: the text panel grows with the sample
    fig, (ax_p, ax_t) = plt.subplots(2, 1, figsize=(8, 2.6 + text_height),
                                     gridspec_kw={"height_ratios": [2.4, text_height]})
    mode = "greedy (T = 0)" if temperature == 0 else f"T = {temperature:.2f}"
    k = "all" if top_k is None else str(top_k)
    _bars(ax_p, p, labels, top, f"first new character after the prompt — {mode}, top-k = {k}")
    shown = "\n".join(lines)
    ax_t.axis("off")
    ax_t.text(0.0, 1.0, shown, va="top", ha="left", family="monospace", fontsize=9, transform=ax_t.transAxes)
    so_far = " so far, sampling …" if pending else ""
    ax_t.set_title(f"sample: prompt {prompt!r} + {len(text) - len(prompt)} sampled characters{so_far}",
                   fontsize=10, loc="left")
    fig.tight_layout()
    return fig
