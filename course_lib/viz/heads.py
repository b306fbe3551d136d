"""Figures for lesson 04 (multi-head attention): attention maps, cost vs heads,
how strongly each head follows each relation."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter
import torch

from .describe import describe, fmt
from .live import LivePlot
from .palette import CYCLE, GREEN, LINESTYLES, MARKERS, ORANGE, PURPLE

__all__ = ["attention_map", "head_maps", "heads_timing_plot", "relation_scores_plot"]

# Rings and squares, in the colours of the same relations' bars in relation_scores_plot.
_MARK_STYLES = [dict(marker="o", facecolors="none", edgecolors=ORANGE, linewidths=1.6),
                dict(marker="s", facecolors="none", edgecolors=GREEN, linewidths=1.6)]
_MARK_NAMES = ("rings", "squares")


def _as_square(name, weights):
    w = torch.as_tensor(weights, dtype=torch.float32).detach()
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"{name} must be a square (n_q, n_k) matrix, got shape {tuple(w.shape)}")
    return w.numpy()


def _label_ticks(ax, labels, upright=False):
    """The tokens on both axes of a map (one tick per cell). upright: short tokens ("c3", "c?")
    stand upright under their columns (a single map: more of the figure's height for the map;
    maps side by side keep them turned, their columns are too narrow)."""
    upright = upright and len(labels) <= 16 and max(map(len, labels)) <= 2
    size = (10 if upright else 9) if len(labels) <= 16 else 7.5
    ax.set_xticklabels(labels, rotation=0 if upright else 90, fontsize=size - 1 if upright else size)
    ax.set_yticklabels(labels, fontsize=size)


def _draw_map(ax, w, labels, title, marks, upright=False):
    n = w.shape[0]
    im = ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    _label_ticks(ax, labels, upright)
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


def _map_words(w, labels, marks):
    """(phrase, derived numbers) for one map: its largest weights, and how much of a row's
    weight lies on each relation's marked cells (on average over the rows it marks)."""
    n = len(w)
    top = [divmod(int(t), n) for t in np.argsort(-w, axis=None, kind="stable")[:3]]
    words = "largest weights (query → key) " + ", ".join(f"'{labels[i]}' → '{labels[j]}' {fmt(w[i, j])}"
                                                          for i, j in top)
    shares, on = [], []
    for (name, mask), shape in zip((marks or {}).items(), _MARK_NAMES):
        m = np.asarray(torch.as_tensor(mask, dtype=torch.bool))
        if m.any():
            shares.append(float((w * m).sum(1)[m.any(1)].mean()))
            on.append(f"{shape} ({name}) {fmt(shares[-1])}")
    if on:
        words += "; a row's weight on the marked cells, on average: " + ", ".join(on)
    return words, shares


def _maps_description(maps, labels, titles, marks):
    """describe()'s arguments for attention maps: a sentence per map, every weight in a table."""
    n, many = len(labels), len(maps) > 1
    sums = "; each row sums to 1" if all(np.allclose(w.sum(1), 1, atol=5e-3) for w in maps) else ""
    said, extra, rows = [], [len(maps)], []
    for k, (w, title) in enumerate(zip(maps, titles)):
        words, shares = _map_words(w, labels, marks)
        name = title or f"map {k + 1}"
        extra += [*shares, k + 1]
        said.append(f"'{name}': {words}" if many else words[0].upper() + words[1:])
        rows += [[f"{name + ', ' if many else ''}{i}: {labels[i]}", *map(float, w[i])] for i in range(n)]
    what = f"{len(maps)} attention maps, each" if many else f"Attention map{f' {titles[0]!r}' if titles[0] else ''},"
    text = (f"{what} {n} queries (rows) × {n} keys (columns), colour = weight from 0 to 1{sums}. "
            f"{'. '.join(said)}. The table lists every weight.")
    return dict(text=text, table=(["query", *(f"{j}: {lab}" for j, lab in enumerate(labels))], rows),
                extra_values=extra)


class AttentionMaps(LivePlot):
    """One head's attention map, chosen by example, layer and head (lesson 04's explorer).

    weights: a sequence over layers of (examples, h, n, n) weights, computed once (a slider
    step runs no model); labels: one list of n token strings per example; marks: optional
    {name: bool (examples, n, n) masks}, at most two, drawn as rings / squares on the cells
    where a relation points; title: a function (example=, layer=, head=) -> the map's title.

    Slider values: example, layer, head. The image and the title move; the marks lie on
    the image, so they move with it. Another example puts other tokens on the ticks, and
    `tight_layout` follows their widths ('c?' is wider than 'a1'): the layout is computed
    again (once per example: remembered) and the frame drawn again.
    """

    # 3.25 in tall (a 12×12 map about 240 px wide, its tokens at 10 pt), the legend beside the
    # colour bar: with its controls and caption the explorer is meant to fit the 522 px a
    # 1366×768 screen shows beside the file browser (tests/test_browser.py measures it)
    figsize = (6.8, 3.25)
    redraw_on = ("example",)

    def __init__(self, weights, labels, marks=None, title=None):
        self.weights = [torch.as_tensor(w, dtype=torch.float32).detach().numpy() for w in weights]
        if not self.weights or any(w.ndim != 4 or w.shape[-1] != w.shape[-2] for w in self.weights):
            raise ValueError("weights must be a non-empty list of (examples, h, n, n) tensors, got shapes "
                             f"{[tuple(w.shape) for w in self.weights]}")
        examples, _, n, _ = self.weights[0].shape
        if any(w.shape[0] != examples or w.shape[-1] != n for w in self.weights):
            raise ValueError("all layers must hold the same examples and the same n")
        self.labels = [list(map(str, ls)) for ls in labels]
        if len(self.labels) != examples:
            raise ValueError(f"got {len(self.labels)} label lists for {examples} examples")
        for ls in self.labels:
            if len(ls) != n:
                raise ValueError(f"got {len(ls)} labels for a {n}x{n} map")
        marks = dict(marks or {})
        if len(marks) > len(_MARK_STYLES):
            raise ValueError(f"marks can hold at most {len(_MARK_STYLES)} relations, got {len(marks)}")
        self.marks = {}
        for name, mask in marks.items():
            m = torch.as_tensor(mask, dtype=torch.bool)
            if m.shape != (examples, n, n):
                raise ValueError(f"mark {name!r} has shape {tuple(m.shape[1:])}, expected {(n, n)}")
            self.marks[name] = m.numpy()
        self.title_of = title or (lambda **_: "")
        self._layouts = {}              # example -> the subplot parameters tight_layout chose

    def check(self, example, layer, head):
        examples, h = self.weights[0].shape[:2]
        if not (0 <= example < examples and 0 <= layer < len(self.weights) and 0 <= head < h):
            raise ValueError(f"example, layer and head must be in 0..{examples - 1}, 0..{len(self.weights) - 1} "
                             f"and 0..{h - 1}, got {example}, {layer}, {head}")

    def build(self, fig, example, layer, head):
        ax = self.ax = fig.add_subplot()
        marks = {name: m[example] for name, m in self.marks.items()}
        self.image = _draw_map(ax, self.weights[layer][example, head], self.labels[example],
                               self.title_of(example=example, layer=layer, head=head), marks, upright=True)
        fig.colorbar(self.image, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
        if marks:
            ax.legend(loc="upper left", bbox_to_anchor=(1.38, 1.0), ncol=1, fontsize=9, frameon=False)
        self.rings, self.title = list(ax.collections), ax.title
        self._defaults = {k: getattr(fig.subplotpars, k) for k in ("left", "right", "bottom", "top", "wspace", "hspace")}
        self.example = None             # update lays the figure out for its example
        # The rings and squares lie on the image: drawn after it, they move with it.
        return [self.image, *self.rings, self.title]

    def update(self, example, layer, head):
        self.image.set_data(self.weights[layer][example, head])     # its colour scale stays 0..1
        self.title.set_text(self.title_of(example=example, layer=layer, head=head))
        if example == self.example:
            return
        _label_ticks(self.ax, self.labels[example], upright=True)
        for ring, mask in zip(self.rings, self.marks.values()):
            rows, cols = np.nonzero(mask[example])
            ring.set_offsets(np.column_stack([cols, rows]))
        fig = self.ax.figure
        if example not in self._layouts:    # from the default layout, as a new figure would
            fig.subplots_adjust(**self._defaults)
            fig.tight_layout()
            self._layouts[example] = {k: getattr(fig.subplotpars, k) for k in self._defaults}
        fig.subplots_adjust(**self._layouts[example])
        self.example = example

    def describe(self, example, layer, head):
        return _maps_description([self.weights[layer][example, head]], self.labels[example],
                                 [self.title_of(example=example, layer=layer, head=head)],
                                 {name: m[example] for name, m in self.marks.items()})


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
    marks = {name: torch.as_tensor(m, dtype=torch.bool)[None] for name, m in (marks or {}).items()}
    return AttentionMaps([w[None, None]], [labels], marks, title=lambda **_: title).figure(example=0, layer=0, head=0)


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
    said = _maps_description(maps, labels, titles, marks)
    if suptitle:
        said["text"] = f"{suptitle}. {said['text']}"
    return describe(fig, **said)


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
    said, ratios = [], []
    for k, (name, ts) in enumerate(times.items()):
        ms = [1e3 * t for t in ts]
        if len(ms) != len(heads):
            raise ValueError(f"times[{name!r}] has {len(ms)} values for {len(heads)} head counts")
        ax.plot(heads, ms, marker=MARKERS[k % 7], ls=LINESTYLES[k % 7], color=CYCLE[k % 7], label=name)
        ratios.append(ms[-1] / ms[0] if ms[0] > 0 else float("nan"))
        said.append(f"{name} {_ms(ms[0])} ms at h = {heads[0]}, {_ms(ms[-1])} ms at h = {heads[-1]}"
                    + (f" (×{fmt(ratios[-1], 1)})" if ms[0] > 0 else ""))
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
    return describe(fig, f"{title[:1].upper() + title[1:]}: time per call in ms (log scale) against the number of "
                         f"heads h (log scale, d_model fixed): {'; '.join(said)}.", extra_values=ratios)


def _ms(v):
    """A time as the description prints it: 2 decimals, or 2 significant digits below 0.01."""
    return fmt(v) if v == 0 or abs(v) >= 0.01 else f"{v:.1e}"


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
    names, short, groups, rows = [], [], [], []    # groups: (model, first bar, last bar)
    deep = any(torch.as_tensor(sc).ndim == 3 and torch.as_tensor(sc).shape[0] > 1 for sc in scores.values())
    for model, sc in scores.items():
        s = torch.as_tensor(sc, dtype=torch.float32)
        if s.ndim != 3 or s.shape[-1] != len(relations):
            raise ValueError(f"scores[{model!r}] must be (n_layers, h, {len(relations)}), "
                             f"got shape {tuple(s.shape)}")
        first = len(names)
        for layer in range(s.shape[0]):
            for head in range(s.shape[1]):
                names.append(f"{model}\nlayer {layer} head {head}".strip())
                short.append(f"layer {layer}\nhead {head}" if deep else f"head {head}")
                rows.append(s[layer, head])
        groups.append((model, first, len(names) - 1))
    flat = torch.stack(rows).numpy()
    r = len(relations)
    x = np.arange(len(names))
    width = 0.8 / r
    # At most ~9.4 in wide, so that it is shown at full size in the notebook column (a 12 in
    # figure was shrunk to 3/4, its 8 pt labels to 6): every text is 10 pt on the page. Each
    # bar's label names only its layer and head; the model's name stands once under its group.
    fig, ax = plt.subplots(figsize=(min(9.4, 1.0 * len(names) + 1.8), 3.9), layout="constrained")
    colors, hatches = [ORANGE, GREEN, PURPLE], ["", "//", ".."]     # the rings' and squares' colours
    for j in range(r):
        ax.bar(x + (j - (r - 1) / 2) * width, flat[:, j], width, label=relations[j], color=colors[j % 3],
               hatch=hatches[j % 3], edgecolor="white", lw=0.5)
    ax.set_xticks(x, short, fontsize=10)
    ax.set_xlim(-0.6, len(names) - 0.4)
    lines = max(label.count("\n") + 1 for label in short)
    for model, first, last in groups:
        if model:
            ax.annotate(model, xy=((first + last) / 2, 0), xycoords=("data", "axes fraction"),
                        xytext=(0, -(12 * lines + 17)), textcoords="offset points", ha="center", va="top",
                        fontsize=10, fontweight="bold")
        if first:
            ax.axvline(first - 0.5, color="0.6", lw=0.8)                  # between two models
    ax.set_ylim(0, 1)
    ax.set_ylabel("mean attention weight", fontsize=10)
    ax.tick_params(axis="y", labelsize=10)
    fig.legend(loc="outside lower center", ncol=r, fontsize=10, frameon=False)
    if title:
        fig.suptitle(title, fontsize=11)
    heads = [name.replace("\n", ", ") for name in names]
    best = "; ".join(f"{rel}: highest {fmt(flat[i, j])} ({heads[i]}), lowest {fmt(flat[k, j])} ({heads[k]})"
                     for j, rel in enumerate(relations)
                     for i, k in [(int(flat[:, j].argmax()), int(flat[:, j].argmin()))])
    return describe(fig, f"{title + ': t' if title else 'T'}he mean attention weight (bars, 0 to 1) that each of "
                         f"{len(names)} heads puts where each relation points. {best}.",
                    table=(["head", *relations], [[h, *map(float, row)] for h, row in zip(heads, flat)]),
                    extra_values=[len(names)])
