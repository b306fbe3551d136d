"""Figures for lesson 04 (multi-head attention): attention maps, cost vs heads,
how strongly each head follows each relation."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter
import torch

__all__ = ["attention_map", "head_maps", "heads_timing_plot", "relation_scores_plot"]

_MARK_STYLES = [dict(marker="o", facecolors="none", edgecolors="tab:orange", linewidths=1.6),
                dict(marker="s", facecolors="none", edgecolors="tab:green", linewidths=1.6)]


def _as_square(name, weights):
    w = torch.as_tensor(weights, dtype=torch.float32).detach()
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"{name} must be a square (n_q, n_k) matrix, got shape {tuple(w.shape)}")
    return w.numpy()


def _draw_map(ax, w, labels, title, marks):
    n = w.shape[0]
    im = ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels(labels, rotation=90, fontsize=9 if n <= 16 else 7.5)
    ax.set_yticklabels(labels, fontsize=9 if n <= 16 else 7.5)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title, fontsize=10)
    for (name, mask), style in zip((marks or {}).items(), _MARK_STYLES):
        m = torch.as_tensor(mask, dtype=torch.bool).numpy()
        if m.shape != w.shape:
            raise ValueError(f"mark {name!r} has shape {m.shape}, expected {w.shape}")
        rows, cols = np.nonzero(m)
        ax.scatter(cols, rows, s=70, label=name, **style)
    return im


def attention_map(weights, labels=None, title="", marks=None):
    """One attention map: rows are queries, columns keys, colour = weight in [0, 1].

    weights: (n, n). labels: n token strings (default 0..n-1). marks: optional
    {name: bool (n, n) mask}, at most two, drawn as rings / squares on the cells where a
    relation points (to compare with where the head actually looks). Returns the Figure.
    """
    w = _as_square("weights", weights)
    labels = [str(i) for i in range(len(w))] if labels is None else list(labels)
    if len(labels) != len(w):
        raise ValueError(f"got {len(labels)} labels for a {len(w)}x{len(w)} map")
    if marks is not None and len(marks) > len(_MARK_STYLES):
        raise ValueError(f"marks can hold at most {len(_MARK_STYLES)} relations, got {len(marks)}")
    fig, ax = plt.subplots(figsize=(4.6, 4.4))
    im = _draw_map(ax, w, labels, title, marks)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    if marks:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=9, frameon=False)
    fig.tight_layout()
    return fig


def head_maps(maps, labels=None, titles=None, marks=None, suptitle=None):
    """Several attention maps side by side (e.g. every head of a layer).

    maps: a list of (n, n) weights; titles: one per map; marks as in attention_map
    (shared by all panels). Returns the Figure.
    """
    maps = [_as_square(f"maps[{i}]", m) for i, m in enumerate(maps)]
    if not maps:
        raise ValueError("maps must hold at least one (n, n) matrix")
    n = len(maps[0])
    if any(len(m) != n for m in maps):
        raise ValueError("all maps must have the same size")
    labels = [str(i) for i in range(n)] if labels is None else list(labels)
    if len(labels) != n:
        raise ValueError(f"got {len(labels)} labels for {n}x{n} maps")
    titles = [""] * len(maps) if titles is None else list(titles)
    if len(titles) != len(maps):
        raise ValueError(f"got {len(titles)} titles for {len(maps)} maps")
    # Up to 3 per row within 9.5 in: shown unscaled in the notebook column (1366×768 screen).
    ncols = min(3, len(maps))
    nrows = -(-len(maps) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(min(9.5, 3.0 * ncols + 1.0), 3.6 * nrows + 0.6),
                             squeeze=False, layout="constrained")
    for ax, w, t in zip(axes.flat, maps, titles):
        im = _draw_map(ax, w, labels, t, marks)
    for ax in axes.flat[len(maps):]:
        ax.set_visible(False)
    fig.colorbar(im, ax=axes, fraction=0.03, pad=0.02, label="attention weight")
    if marks:
        fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=9,
                   frameon=False)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def _label_2_and_5(v, _pos):
    """Minor log-axis ticks: label only 2·10^k and 5·10^k, to keep the axis readable."""
    if v <= 0:
        return ""
    mantissa = v / 10 ** math.floor(math.log10(v))
    return f"{v:g}" if round(mantissa) in (2, 5) else ""


def heads_timing_plot(heads, times, title="multi-head attention, forward pass"):
    """Wall time vs number of heads, one line per implementation.

    heads: the h values; times: {implementation name: seconds per call, one per h}.
    Returns the Figure (milliseconds on the y axis, both axes logarithmic).
    """
    heads = list(heads)
    if not heads or not times:
        raise ValueError("heads and times must not be empty")
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for name, ts in times.items():
        ts = list(ts)
        if len(ts) != len(heads):
            raise ValueError(f"times[{name!r}] has {len(ts)} values for {len(heads)} head counts")
        ax.plot(heads, [1e3 * t for t in ts], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(_label_2_and_5))
    ax.set_xticks(heads)
    ax.set_xticklabels([str(h) for h in heads])
    ax.set_xlabel("number of heads h (d_model fixed)")
    ax.set_ylabel("time per call (ms)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def relation_scores_plot(scores, relations=("previous token", "binding of the same letter"), title=None):
    """Grouped bars: for every (model, layer, head), the mean attention weight it puts
    where each relation points.

    scores: {model name: (n_layers, h, n_relations) tensor}, e.g. from
    toy_tasks.head_relation_scores (a single tensor is also accepted). Returns the Figure.
    """
    if not isinstance(scores, dict):
        scores = {"": scores}
    if not scores:
        raise ValueError("scores must hold at least one model's scores")
    names, rows = [], []
    for model, sc in scores.items():
        s = torch.as_tensor(sc, dtype=torch.float32)
        if s.ndim != 3 or s.shape[-1] != len(relations):
            raise ValueError(f"scores[{model!r}] must be (n_layers, h, {len(relations)}), "
                             f"got shape {tuple(s.shape)}")
        for layer in range(s.shape[0]):
            for head in range(s.shape[1]):
                names.append(f"{model}\nlayer {layer} head {head}".strip())
                rows.append(s[layer, head])
    flat = torch.stack(rows).numpy()
    r = len(relations)
    x = np.arange(len(names))
    width = 0.8 / r
    fig, ax = plt.subplots(figsize=(1.35 * len(names) + 2.8, 3.3))
    colors = ["tab:orange", "tab:green", "tab:purple"]
    for j in range(r):
        ax.bar(x + (j - (r - 1) / 2) * width, flat[:, j], width, label=relations[j], color=colors[j % 3])
    ax.set_xticks(x)
    ax.set_xticklabels(names, fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("mean attention weight")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
