"""Figures for lesson 05 (the transformer block): fits with and without a nonlinearity,
gradient norms vs depth, loss curves side by side, the residual stream's parts."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from .describe import describe, fmt
from .live import LivePlot
from .palette import BLACK, BLUE, CYCLE, GREY, LINESTYLES, MARKERS, ORANGE, VERMILLION

__all__ = ["fit_plot", "grad_norm_vs_depth_plot", "loss_curves_plot", "stream_parts_plot", "layer_profile_plot"]


def _np(name, values):
    a = torch.as_tensor(values, dtype=torch.float32).detach().flatten().numpy()
    if a.size == 0:
        raise ValueError(f"{name} must not be empty")
    return a


def _num(v):
    """A number as the descriptions print it: 2 decimals, or 2 significant digits in
    scientific notation outside 0.01..1000 (gradient norms span decades)."""
    v = float(v)
    return "0" if v == 0 else (fmt(v) if 0.01 <= abs(v) < 1000 else f"{v:.1e}")


def _cap(text):
    return text[:1].upper() + text[1:]


def fit_plot(x, target, lines=None, points=None, title="what each model computes"):
    """A 1-D function and what models make of it.

    x, target: the input grid and the true function on it. lines: {name: predictions on
    x} drawn as curves; points: {name: (x_values, predictions)} drawn as dots (for models
    whose answer depends on more than x). Returns the Figure.
    """
    x, target = _np("x", x), _np("target", target)
    if len(x) != len(target):
        raise ValueError(f"x has {len(x)} values but target has {len(target)}")
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(x, target, color=BLACK, lw=2.5, label="target |x|", zorder=1)
    order = np.argsort(x, kind="stable")
    errors, k = {}, 0           # mean |prediction − target| of each model (its points: target at their x)
    for name, (px, py) in (points or {}).items():
        px, py = _np(f"points[{name!r}] x", px), _np(f"points[{name!r}] y", py)
        if len(px) != len(py):
            raise ValueError(f"points[{name!r}] has {len(px)} x values and {len(py)} predictions")
        ax.scatter(px, py, s=6, alpha=0.35, color=CYCLE[k % 6], marker=MARKERS[k % 7], label=name, zorder=2)
        errors[name], k = float(np.abs(py - np.interp(px, x[order], target[order])).mean()), k + 1
    for j, (name, y) in enumerate((lines or {}).items()):
        y = _np(f"lines[{name!r}]", y)
        if len(y) != len(x):
            raise ValueError(f"lines[{name!r}] has {len(y)} values for {len(x)} x values")
        ax.plot(x, y, lw=2, color=CYCLE[k % 6], ls=LINESTYLES[1 + j % 6], label=name, zorder=3)
        errors[name], k = float(np.abs(y - target).mean()), k + 1
    ax.set_xlabel("x (one position's input)")
    ax.set_ylabel("output")
    ax.set_title(title)
    ax.legend(fontsize=8, markerscale=3)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    said = ", ".join(f"{name} {fmt(e)}" for name, e in errors.items())
    return describe(fig, f"{_cap(title)}: output against x from {fmt(x.min())} to {fmt(x.max())}, the target "
                         f"(thick black line, from {fmt(target.min())} to {fmt(target.max())}) and {len(errors)} "
                         f"models. Mean distance from the target: {said}.",
                    extra_values=[len(errors), *errors.values()])


def grad_norm_vs_depth_plot(depths, norms, title="gradient reaching the first block"):
    """‖∂loss/∂θ_first block‖ against the number of blocks, one line per wiring.

    depths: the depths; norms: {wiring name: one norm per depth}. Log y axis; a norm of
    exactly 0 (complete underflow, which a log axis cannot show) is drawn as a hollow
    triangle on the bottom edge, labelled "0". Returns the Figure.
    """
    depths = list(depths)
    if not depths or not norms:
        raise ValueError("depths and norms must not be empty")
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    positive = [v for vals in norms.values() for v in vals if v > 0]
    floor = min(positive) / 10 if positive else 1e-30
    said = []
    for k, (name, vals) in enumerate(norms.items()):
        vals, color = list(vals), CYCLE[k % 6]
        if len(vals) != len(depths):
            raise ValueError(f"norms[{name!r}] has {len(vals)} values for {len(depths)} depths")
        ax.plot(depths, [v if v > 0 else float("nan") for v in vals], marker=MARKERS[k % 7], ls=LINESTYLES[k % 7],
                color=color, label=name)
        zeros = [d for d, v in zip(depths, vals) if v <= 0]
        said.append(f"{name}: {_num(vals[0])} at depth {depths[0]}, {_num(vals[-1])} at depth {depths[-1]}"
                    + (f" (exactly 0, underflow, at depth {', '.join(map(str, zeros))})" if zeros else ""))
        if zeros:
            ax.plot(zeros, [floor] * len(zeros), "v", ms=11, mfc="white", mec=color, mew=1.5, zorder=3,
                    label=f"{name}: exactly 0 (underflow)")
            for d in zeros:
                ax.annotate("0", (d, floor), xytext=(0, 9), textcoords="offset points", ha="center",
                            fontsize=8, color=color)
    ax.set_yscale("log")
    ax.set_ylim(bottom=floor / 1.5)
    ax.set_xlabel("number of blocks")
    ax.set_ylabel("gradient norm, first block")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return describe(fig, f"{_cap(title)}: gradient norm of the first block (log scale) against the number of blocks "
                         f"(depth). "
                         f"{'; '.join(said)}.")


def loss_curves_plot(curves, chance=None, smooth=10, ncols=None, title=None):
    """Training losses side by side, one panel per run, same axes everywhere.

    curves: {run name: per-step losses}; chance: the loss of guessing (drawn dashed);
    smooth: moving-average window (the raw loss is drawn thinly on top of it). NaN (a run
    that diverged) ends the curve. The y axis spans the data from its lowest loss up to its
    highest — unless single steps rise far above the highest moving average (or the chance
    line), by more than half the range below it: then the axis ends there, and each such
    step is marked with a triangle on the top edge with the peak written in its panel, so
    that one early spike does not squash the range where the runs differ. Returns the Figure.
    """
    if not curves:
        raise ValueError("curves must hold at least one run")
    if smooth < 1:
        raise ValueError(f"smooth must be >= 1, got {smooth}")
    n = len(curves)
    ncols = ncols or (n if n <= 3 else 2)          # ≤ 3 panels per row: readable in the notebook column
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 2.7 * nrows + 0.5), sharey=True, squeeze=False,
                             layout="constrained")
    series = {}
    for name, losses in curves.items():
        y = np.asarray(list(losses), dtype=float)
        if y.size == 0:
            raise ValueError(f"curves[{name!r}] is empty")
        mean = np.convolve(y, np.ones(smooth) / smooth, mode="valid") if len(y) >= smooth else None
        series[name] = (y, mean)
    finite = np.concatenate([y[np.isfinite(y)] for y, _ in series.values()] or [np.zeros(0)])
    means = np.concatenate([m[np.isfinite(m)] for _, m in series.values() if m is not None] or [np.zeros(0)])
    top = max([*means, *([chance] if chance is not None else []), *([] if len(means) else finite)], default=1.0)
    low = min([*finite, *([chance] if chance is not None else [])], default=0.0)
    if len(finite) and finite.max() <= top + 0.5 * (top - low):   # no step far above: show them all
        top = float(finite.max())
    pad = 0.08 * (top - low) or 0.1
    top, bottom = top + pad, max(0.0, low - pad)
    said, clipped = [], []
    for ax, (name, (y, mean)) in zip(axes.flat, series.items()):
        steps = np.arange(1, len(y) + 1)
        # The same styles in every panel (the one legend holds for all). Draw order: the moving
        # average (thick), each step's loss (thin, dotted, on top: visible even where the two
        # coincide, as for a run that stays flat), the chance line (dashed, on top of both).
        end = f"{_num(y[-1])} (last step)"
        if mean is not None:
            ax.plot(steps[smooth - 1:], mean, color=BLUE, lw=3, zorder=2, label=f"mean of the last {smooth} steps")
            end = _num(mean[-1])
        ax.plot(steps, np.minimum(y, top), color=BLACK, lw=0.8, ls=":", marker=".", ms=3, alpha=0.8, zorder=3,
                label="loss of each step")
        above = np.flatnonzero(np.isfinite(y) & (y > top))
        if above.size:
            peak = int(above[np.argmax(y[above])])
            ax.plot(steps[above], np.full(above.size, top), "^", color=VERMILLION, ms=7, clip_on=False, zorder=5,
                    label="a step's loss above the axis")
            ax.text(0.97, 0.96, f"▲ above the axis:\nup to {_num(y[peak])} (step {steps[peak]})", transform=ax.transAxes,
                    ha="right", va="top", fontsize=9, color=BLACK,
                    bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none", alpha=0.85))
            clipped.append(f"{name} up to {_num(y[peak])} at step {steps[peak]}")
        bad = np.flatnonzero(~np.isfinite(y))
        said.append(f"{name} diverged (no finite loss) from step {bad[0] + 1}" if bad.size else
                    f"{name} {end}" + ("" if len({len(c) for c in curves.values()}) == 1 else f" after {len(y)} steps"))
        if chance is not None:
            ax.axhline(chance, color=BLACK, ls="--", lw=1, zorder=4, label="chance")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("step")
        ax.set_ylim(bottom, top)
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("training loss")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    legend = {}                                    # one entry per style, from whichever panel drew it
    for ax in axes.flat[:n]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    order = [k for k in (f"mean of the last {smooth} steps", "loss of each step", "chance",
                         "a step's loss above the axis") if k in legend]
    fig.legend([legend[k] for k in order], order, loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    if title:
        fig.suptitle(title)
    chance_words = f", chance {fmt(chance)} (dashed)" if chance is not None else ""
    steps = len(next(iter(curves.values())))
    at_end = f"after {steps} steps" if len({len(c) for c in curves.values()}) == 1 else "at the end"
    clip_words = (f" Losses of single steps above {_num(top)}, the top of the axis, are marked on its edge: "
                  + "; ".join(clipped) + "." if clipped else "")
    return describe(fig, f"{title + ': t' if title else 'T'}raining loss against the step, one panel per run, same "
                         f"axes from {_num(bottom)} to {_num(top)}{chance_words}. Mean of the last {smooth} steps "
                         f"{at_end}: {'; '.join(said)}.{clip_words}", extra_values=(bottom, top))


def stream_parts_plot(names, sizes, title="what each part adds to the residual stream"):
    """Bar chart: the RMS size of each contribution to the final residual stream.

    names: one label per part (embedding, block i attn, block i ffn, ...); sizes: one
    number per part. Returns the Figure.
    """
    names = list(names)
    sizes = _np("sizes", sizes)
    if len(names) != len(sizes):
        raise ValueError(f"got {len(names)} names for {len(sizes)} sizes")
    fig, ax = plt.subplots(figsize=(max(6.0, 0.32 * len(names) + 1.5), 3.4))
    kinds = ["embedding" if n == "embedding" else ("attention" if "attn" in n else "FFN") for n in names]
    colour = {"embedding": BLACK, "attention": BLUE, "FFN": ORANGE}
    hatch = {"embedding": "", "attention": "", "FFN": "//"}       # FFN told apart without colour too
    ax.bar(range(len(names)), sizes, color=[colour[k] for k in kinds], hatch=[hatch[k] for k in kinds],
           edgecolor="white", lw=0.5)
    # one label per block, centred under its bars, instead of a tiny rotated label per bar
    blocks = {}
    for i, n in enumerate(names):
        block = n.split(" attn")[0].split(" ffn")[0] if kinds[i] != "embedding" else "emb."
        blocks.setdefault(block.replace("block ", ""), []).append(i)
    ax.set_xticks([sum(ix) / len(ix) for ix in blocks.values()], list(blocks), fontsize=9)
    ax.set_xlabel("block")
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=colour[k], hatch=hatch[k], edgecolor="white")
               for k in colour if k in kinds]
    ax.legend(handles, [k for k in colour if k in kinds], fontsize=9, ncol=3)
    ax.set_ylabel("RMS size of the part")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    said = []
    for kind in colour:
        ix = [i for i, k in enumerate(kinds) if k == kind]
        if len(ix) == 1:
            said.append(f"{kind}{'' if names[ix[0]] == kind else f' ({names[ix[0]]})'} {_num(sizes[ix[0]])}")
        elif ix:
            big = max(ix, key=lambda i: sizes[i])
            said.append(f"{len(ix)} {kind} parts from {_num(sizes[ix].min())} to {_num(sizes[big])} "
                        f"(largest: {names[big]})")
    return describe(fig, f"{_cap(title)}: the RMS size (bar height) of each of {len(names)} parts. {'; '.join(said)}.",
                    table=(["part", "RMS size"], [[n, _num(v)] for n, v in zip(names, sizes)]),
                    extra_values=[sum(k == kind for k in kinds) for kind in colour])


class LayerProfilePlot(LivePlot):
    """Two panels over the blocks of one stack (log scales): the gradient norm of each
    block's parameters, and the RMS size of the residual stream after each block.

    profile: a function (**values) -> (grad_norms, stream_rms), each n numbers, n the
    number of blocks (lesson 05's explorer: values wiring and depth, one stack per pair,
    remembered); title: None, or a function (**values) -> the figure's title.

    What moves: both curves, the title, and the axes whose ticks follow the data (the
    blocks on both x axes). Both y axes have fixed limits, the same for every wiring and depth, so
    that two depths (or wirings) compare at a glance; a norm below GRAD_LIMITS[0] (or exactly 0)
    is drawn on the bottom edge. `tight_layout` follows the tick labels, so it is computed for
    each new set of values (once: remembered), and the frame is drawn again only when the panels
    moved.
    """

    figsize = (9, 3.2)
    # Covers every wiring of lesson 05's explorer up to 24 blocks (plain, 24 blocks: about 1e-22
    # near the input, some exactly 0) and the largest norms (about 30).
    GRAD_LIMITS = (1e-30, 1e3)

    def __init__(self, profile, title=None):
        self.profile, self.title_of = profile, title
        self._layouts = {}              # values -> the subplot parameters tight_layout chose

    def _data(self, **values):
        g, r = self.profile(**values)
        g, r = _np("grad_norms", g), _np("stream_rms", r)
        if len(g) != len(r):
            raise ValueError(f"grad_norms has {len(g)} values but stream_rms has {len(r)}")
        self._g = g
        return np.arange(1, len(g) + 1), np.maximum(g, self.GRAD_LIMITS[0]), r    # a zero norm: on the bottom edge

    def check(self, **values):
        self._data(**values)

    def build(self, fig, **values):
        blocks, shown, r = self._data(**values)
        a1, a2 = self.axes = fig.subplots(1, 2)
        (self.grad_line,) = a1.plot(blocks, shown, marker="o", color=VERMILLION, clip_on=False)
        a1.set_yscale("log")
        a1.set_ylim(*self.GRAD_LIMITS)
        a1.set_xlabel("block (1 = nearest the input)")
        a1.set_ylabel("gradient norm of its parameters")
        (self.rms_line,) = a2.plot(blocks, r, marker="s", color=BLUE)
        a2.set_yscale("log")
        a2.set_ylim(1e-3, 1e2)
        a2.set_xlabel("block")
        a2.set_ylabel("RMS of the stream after it")
        for a in (a1, a2):
            a.grid(alpha=0.3)
        self.title = fig.suptitle(self.title_of(**values)) if self.title_of else None
        self._defaults = {k: getattr(fig.subplotpars, k) for k in ("left", "right", "bottom", "top", "wspace", "hspace")}
        # An axis (ticks, tick labels, grid lines, label) is drawn before the curve on it.
        return [a1.xaxis, a1.yaxis, self.grad_line, a2.xaxis, self.rms_line] + ([self.title] if self.title else [])

    def update(self, **values):
        blocks, shown, r = self._data(**values)
        a1, a2 = self.axes
        self.grad_line.set_data(blocks, shown)
        self.rms_line.set_data(blocks, r)
        a1.set_ylim(*self.GRAD_LIMITS)      # fixed: depths and wirings compare at a glance
        for a in (a1, a2):                  # x: the blocks, with autoscale's margins
            a.relim()
            a.autoscale_view(scaley=False)
        if self.title:
            self.title.set_text(self.title_of(**values))
        fig = a1.figure
        key = tuple(sorted(values.items()))
        if key not in self._layouts:        # from the default layout, as a new figure would
            fig.subplots_adjust(**self._defaults)
            fig.tight_layout()
            self._layouts[key] = {k: getattr(fig.subplotpars, k) for k in self._defaults}
        fig.subplots_adjust(**self._layouts[key])
        where = [a.get_position().bounds for a in self.axes]
        if where != getattr(self, "_frame_where", None):
            self._frame_where = where
            self.redraw_frame()         # the panels moved: the kept frame is stale

    def describe(self, **values):
        g, r = self._g, self.rms_line.get_ydata()       # g: the norms (a zero one is drawn on the bottom edge)
        n, zeros = len(g), int((g <= 0).sum())
        low = g[g > 0].min() if zeros < n else 0.0
        title = self.title.get_text() if self.title else ""
        text = (f"{title + ': o' if title else 'O'}ver {n} blocks (1 = nearest the input; log scales), the gradient "
                f"norm of each block's parameters goes from {_num(g[0])} at block 1 to {_num(g[-1])} at block {n}"
                + (f" ({zeros} of them exactly 0, drawn at the bottom)" if zeros else "")
                + (f", smallest {_num(low)}" if 0 < low < min(g[0], g[-1]) else "")
                + f"; the RMS of the residual stream after each block from {_num(r[0])} to {_num(r[-1])}.")
        result = (f"Gradient norm from {_num(g[0])} at block 1 to {_num(g[-1])} at block {n}"
                  + (f" ({zeros} exactly 0)" if zeros else "")
                  + f"; residual stream RMS from {_num(r[0])} to {_num(r[-1])}.")
        return dict(text=text, extra_values=[zeros], result=result)


def layer_profile_plot(grad_norms, stream_rms, title=""):
    """Two panels over the blocks of one stack: the gradient norm of each block's
    parameters, and the RMS size of the residual stream after each block (log scales).
    Returns the Figure."""
    return LayerProfilePlot(lambda: (grad_norms, stream_rms), title=(lambda: title) if title else None).figure()
