"""Figures for lesson 10: the residual stream and induction heads."""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import torch

from .describe import describe, fmt
from .families import draw_attention
from .live import LivePlot
from .palette import BLACK, BLUE, CYCLE, GREY, LINESTYLES, MARKERS, VERMILLION

__all__ = [
    "induction_loss_curves",
    "position_loss_plot",
    "induction_score_grid",
    "induction_head_map",
    "ablation_bars",
    "influence_maps",
    "residual_contribution_bars",
]


def ink_on(rgba):
    """Black or white, whichever keeps more contrast (WCAG) on the colour `rgba`."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"


def _range(values):
    """"a" or "a–b": the smallest and largest of `values`, 2 decimals."""
    lo, hi = fmt(min(values)), fmt(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def _smooth(values, window):
    v = np.asarray(values, dtype=float)
    if window <= 1 or len(v) < window:
        return v
    kernel = np.ones(window) / window
    return np.convolve(v, kernel, mode="valid")


def induction_loss_curves(history, vocab_size=None, window=10):
    """Loss on the first copy and on the repeated copy, per training step.

    history: dict with lists "step", "first", "repeated" (from train_induction_model).
    vocab_size: if given, draws ln(vocab_size), the loss of a uniform guess.
    window: moving-average width. Returns the Figure.
    """
    for key in ("step", "first", "repeated"):
        if key not in history:
            raise ValueError(f"history has no {key!r} list")
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    steps = np.asarray(history["step"])
    said = []
    for key, color, ls, label in (("first", GREY, "--", "first copy (unpredictable)"),
                                  ("repeated", VERMILLION, "-", "repeated copy")):
        y = _smooth(history[key], window)
        x = steps[len(steps) - len(y):]
        ax.plot(x, y, color=color, ls=ls, label=label)
        said.append(f"on the {label.split(' (')[0]} from {fmt(y[0])} at step {x[0]} to {fmt(y[-1])} at step {x[-1]}")
    text = f"Next-token loss (nats) per training step, moving average over {window} steps: " + "; ".join(said) + "."
    if vocab_size:
        ax.axhline(math.log(vocab_size), color=BLACK, ls=":", lw=1, label=f"ln {vocab_size} (uniform guess)")
        text += f" A uniform guess over {vocab_size} tokens scores ln {vocab_size} = {fmt(math.log(vocab_size))}."
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.set_title(f"next-token loss during training (moving average over {window} steps)", fontsize=10)
    fig.tight_layout()
    return describe(fig, text)


def position_loss_plot(curves, period, vocab_size=None):
    """Mean loss at each position of [BOS, s, s].

    curves: {label: tensor (2·period,)}, entry t = loss of predicting token t+1.
    A dashed line marks where the repeated copy starts; with vocab_size, a dotted line the
    loss of the uniform guess, ln vocab_size. Returns the Figure.
    """
    if not isinstance(curves, dict) or not curves:
        raise ValueError("curves must be a non-empty dict {label: per-position losses}")
    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    said, means = [], []
    for k, (label, c) in enumerate(curves.items()):
        c = torch.as_tensor(c).detach().float()
        if c.dim() != 1 or c.numel() != 2 * period:
            raise ValueError(f"curve {label!r} must have 2·period = {2 * period} entries, got {tuple(c.shape)}")
        style = dict(color=CYCLE[k % len(CYCLE)], ls=LINESTYLES[k % len(LINESTYLES)],
                     marker=MARKERS[k % len(MARKERS)])
        ax.plot(np.arange(1, 2 * period + 1), c.numpy(), ms=3, label=label, **style)
        first, repeated = c[:period].mean().item(), c[period:].mean().item()
        means += [first, repeated]
        said.append(f"{label!r} {fmt(first)} on the first copy, {fmt(repeated)} on the repeated copy")
    uniform = ""
    if vocab_size is not None:
        ax.axhline(math.log(vocab_size), color=BLACK, ls=":", lw=1, label=f"ln {vocab_size} (uniform guess)")
        uniform = f" The uniform guess costs ln {vocab_size} = {fmt(math.log(vocab_size))}."
    ax.set_xticks(range(1, 2 * period + 1, max(1, period // 5)))
    ax.axvline(period + 0.5, color="k", ls="--", lw=1)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.08)            # room for the label above the curves
    ax.text(period + 0.7, ax.get_ylim()[1] * 0.94, "repeat starts", fontsize=9, va="top")
    ax.set_xlabel("position of the predicted token")
    ax.set_ylabel("loss (nats)")
    ax.set_title(f"mean next-token loss at each position of [BOS, s, s] (period {period})", fontsize=10)
    ax.legend(fontsize=9, loc="lower left")
    fig.tight_layout()
    return describe(fig, f"Mean loss (nats) at each of the {2 * period} positions of [BOS, s, s], period {period}; "
                         f"the repeated copy starts at position {period + 1}. Averages: " + "; ".join(said) + "."
                         + uniform, extra_values=means + ([math.log(vocab_size)] if vocab_size else []))


def induction_score_grid(scores):
    """One small (layers × heads) heatmap per score, values printed.

    scores: {name: tensor (layers, heads)} in [0, 1]. Returns the Figure.
    """
    if not isinstance(scores, dict) or not scores:
        raise ValueError("scores must be a non-empty dict {name: (layers, heads) tensor}")
    fig, axes = plt.subplots(1, len(scores), figsize=(3.0 * len(scores) + 0.6, 2.4), squeeze=False)
    said, rows = [], []
    for ax, (name, s) in zip(axes[0], scores.items()):
        s = torch.as_tensor(s).detach().float()
        if s.dim() != 2:
            raise ValueError(f"score {name!r} must be (layers, heads), got {tuple(s.shape)}")
        im = ax.imshow(s.numpy(), cmap="Purples", vmin=0, vmax=1)
        for layer in range(s.shape[0]):
            for head in range(s.shape[1]):
                v = float(s[layer, head])
                ax.text(head, layer, f"{v:.2f}", ha="center", va="center", fontsize=9,
                        color=ink_on(im.cmap(im.norm(v))))
            rows.append([f"{name}, layer {layer}", *(float(v) for v in s[layer])])
        hi, lo = divmod(int(s.argmax()), s.shape[1]), divmod(int(s.argmin()), s.shape[1])
        said.append(f"{name}: highest layer {hi[0]} head {hi[1]} at {fmt(s[hi])}, "
                    f"lowest layer {lo[0]} head {lo[1]} at {fmt(s[lo])}")
        ax.set_xticks(range(s.shape[1]))
        ax.set_yticks(range(s.shape[0]))
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_title(name, fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.88, 1))
    bar = fig.colorbar(im, cax=fig.add_axes((0.9, 0.2, 0.018, 0.65)), label="score")
    bar.ax.tick_params(labelsize=9)
    shapes = {tuple(torch.as_tensor(v).shape) for v in scores.values()}
    (layers, heads), = shapes if len(shapes) == 1 else [(None, None)]
    size = f" ({layers} layers × {heads} heads)" if layers else ""
    long = layers and len(rows) * heads > 20
    return describe(fig, f"Scores from 0 to 1 per layer and head{size}, printed in the cells. "
                         + "; ".join(said) + ".",
                    table=(["score, layer", *(f"head {h}" for h in range(heads))], rows) if long else None)


class InductionHeadMap(LivePlot):
    """One head's attention on [BOS, s, s], with the two diagonals that matter outlined
    (lesson 10's explorer): the layer, head and example move.

    attention: (layers, examples, h, n, n) with n = 1 + 2·period, computed once (the
    model is not run again for a slider step); tokens: one list of n labels per example;
    title: None, a string, or a function (layer, head) -> string. Slider values: layer,
    head, example.
    """

    figsize = (7.8, 3.55)     # 21 rows of 12 px, the legend beside: with its controls, fits a laptop screen
    redraw_on = ("example",)        # other tokens: other tick labels, laid out again

    def __init__(self, attention, tokens, period, title=None):
        a = torch.as_tensor(attention).detach().float()
        n = 1 + 2 * period
        if a.dim() != 5 or a.shape[-2:] != (n, n):
            raise ValueError(f"attention must be (layers, examples, h, {n}, {n}) for period={period}, "
                             f"got {tuple(a.shape)}")
        if len(tokens) != a.shape[1]:
            raise ValueError(f"got {len(tokens)} token lists for {a.shape[1]} examples")
        for labels in tokens:
            if len(labels) != n:
                raise ValueError(f"tokens has {len(labels)} labels for {n} positions")
        self.attention = a.numpy()      # a slider step hands an existing (n, n) array to the image
        self.tokens = [[str(t) for t in labels] for labels in tokens]
        self.period, self.title_of = period, title

    def check(self, layer, head, example):
        n_layers, n_examples, h = self.attention.shape[:3]
        if not (0 <= layer < n_layers and 0 <= head < h and 0 <= example < n_examples):
            raise ValueError(f"layer, head and example must be in 0..{n_layers - 1}, 0..{h - 1} and "
                             f"0..{n_examples - 1}, got {layer}, {head}, {example}")

    def _title(self, layer, head):
        return self.title_of(layer, head) if callable(self.title_of) else self.title_of or ""

    def build(self, fig, layer, head, example):
        fig.set_layout_engine("constrained")
        ax = self.ax = fig.add_subplot()
        period, n = self.period, 1 + 2 * self.period
        toks = self.tokens[example]
        self.image = draw_attention(ax, torch.from_numpy(self.attention[layer, example, head]), toks, toks,
                                    self._title(layer, head), vmax=1.0, cmap="Greys")
        ax.title.set_fontsize(10)       # as draw_attention sets it, for a title that starts empty
        fig.colorbar(self.image, ax=ax, fraction=0.046, pad=0.02, label="attention weight")
        i = np.arange(1, n)
        previous = ax.scatter(i - 1, i, s=26, facecolors="none", edgecolors=BLUE, lw=0.9,
                              label="previous token")
        j = np.arange(period + 1, n)
        target = ax.scatter(j - period + 1, j, s=26, marker="s", facecolors="none", edgecolors=VERMILLION,
                            lw=0.9, label="induction target")
        line = ax.axhline(period + 0.5, color=VERMILLION, lw=0.8, ls=":", label="repeated copy starts below")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside right center", fontsize=9, frameon=False)
        # Where a new figure's axes stand before its first layout: constrained layout starts
        # from the axes' current places and is no fixed point (run again on its own result,
        # it moved the colour bar ~1 px), so a redraw starts it from these again.
        self.fresh = [(a, a.get_position(original=True).frozen(), a.get_position().frozen(), a.get_in_layout())
                      for a in fig.axes]
        self.title, self.example = ax.title, example
        # The marks lie on the map, which moves: drawn after it, they move too (see LivePlot).
        return [self.image, previous, target, line, self.title]

    def update(self, layer, head, example):
        self.image.set_data(self.attention[layer, example, head])    # its scale stays 0..1
        self.title.set_text(self._title(layer, head))
        if example != self.example:
            toks = self.tokens[example]     # the frame's tick labels: drawn again (redraw_on)
            self.ax.xaxis.set_ticklabels(toks)
            self.ax.yaxis.set_ticklabels(toks)
            for a, original, active, in_layout in self.fresh:     # the layout as for a new figure
                a.set_position(original, which="original")
                a.set_position(active, which="active")
                a.set_in_layout(in_layout)        # set_position takes an axes out of the layout
            self.example = example

    def describe(self, layer, head, example):
        w, p, n = self.attention[layer, example, head], self.period, 1 + 2 * self.period
        n_layers, n_examples, h = self.attention.shape[:3]
        which = self._title(layer, head) or (f"Layer {layer}, head {head}" if n_layers * h > 1 else "One head")
        if n_examples > 1:
            which += f", example {example} of {n_examples}"
        i, j = np.arange(1, n), np.arange(p + 1, n)
        prev, ind = float(w[i, i - 1].mean()), float(w[j, j - p + 1].mean())
        q, k = np.unravel_index(int(np.argmax(w)), w.shape)
        toks = self.tokens[example]
        return dict(text=f"{which}: attention weights (0 to 1) of the {n} positions of [BOS, s, s], period {p}. "
                         f"The previous token (i → i − 1, circles) gets on average {fmt(prev)} of a row; on the "
                         f"repeated copy the induction target (i → i − {p - 1}, squares) gets {fmt(ind)}. "
                         f"Largest weight {fmt(w[q, k])}, from position {q} ({toks[q]!r}) to {k} ({toks[k]!r}).",
                    extra_values=(prev, ind, layer, head, example, p - 1))


def induction_head_map(weights, tokens, period, title=None):
    """One head's attention on [BOS, s, s], with the two diagonals that matter outlined:
    previous token (i → i-1) and induction (i → i - period + 1, repeated copy only).

    weights: (n, n) with n = 1 + 2·period; tokens: n labels. Returns the Figure.
    """
    w = torch.as_tensor(weights).detach().float()
    n = 1 + 2 * period
    if w.shape != (n, n):
        raise ValueError(f"weights must be ({n}, {n}) for period={period}, got {tuple(w.shape)}")
    if len(tokens) != n:
        raise ValueError(f"tokens has {len(tokens)} labels for {n} positions")
    return InductionHeadMap(w[None, None, None], [tokens], period, title).figure(layer=0, head=0, example=0)


def ablation_bars(table, vocab_size=None):
    """Repeated-copy loss with different heads switched off.

    table: {name: (first-copy loss, repeated-copy loss)} from `ablation_table`.
    Returns the Figure.
    """
    if not isinstance(table, dict) or not table:
        raise ValueError("table must be a non-empty dict {name: (first, repeated)}")
    names = list(table)
    first = [table[k][0] for k in names]
    repeated = [table[k][1] for k in names]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(min(9.5, 1.3 * len(names) + 2.5), 3.4))
    ax.bar(x - 0.2, first, 0.4, color=GREY, label="first copy")
    ax.bar(x + 0.2, repeated, 0.4, color=VERMILLION, hatch="//", edgecolor="white", lw=0, label="repeated copy")
    for xi, v in zip(x, repeated):
        ax.text(xi + 0.2, v + 0.05, f"{v:.2f}", ha="center", fontsize=9)
    text = ("Loss (nats) on the repeated copy with heads' outputs set to zero: "
            + ", ".join(f"{k} {fmt(v)}" for k, v in zip(names, repeated))
            + f". The first copy stays at {_range(first)}.")
    if vocab_size:
        ax.axhline(math.log(vocab_size), color=BLACK, ls=":", lw=1, label=f"ln {vocab_size}")
        text += f" A uniform guess over {vocab_size} tokens: ln {vocab_size} = {fmt(math.log(vocab_size))}."
    ax.set_xticks(x, names, fontsize=9, rotation=15 if len(names) > 4 else 0)
    ax.set_ylim(0, max(first + repeated) * 1.15)     # headroom: the labels stay inside the frame
    ax.set_ylabel("loss (nats)")
    ax.set_title("ablation: heads' outputs set to zero", fontsize=11)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    return describe(fig, text)


def influence_maps(maps, tokens=None):
    """Side-by-side (n × n) influence matrices: [t, j] = change of output t when token j
    changes. maps: {title: tensor (n, n)}. Returns the Figure."""
    if not isinstance(maps, dict) or not maps:
        raise ValueError("maps must be a non-empty dict {title: (n, n) tensor}")
    fig, axes = plt.subplots(1, len(maps), figsize=(min(9.5, 4.2 * len(maps) + 0.8), 3.9), squeeze=False,
                             layout="constrained")
    mats = {}
    for title, m in maps.items():
        m = torch.as_tensor(m).detach().float()
        if m.dim() != 2 or m.shape[0] != m.shape[1]:
            raise ValueError(f"map {title!r} must be square, got {tuple(m.shape)}")
        mats[title] = m
    # One colour scale for all panels, so "no colour" means the same everywhere. It ends at the
    # largest change a token causes at *another* position: the diagonal (a token's own output)
    # is larger still and would otherwise leave the off-diagonal changes pale.
    off = [float(m.masked_fill(torch.eye(len(m), dtype=torch.bool), 0).max()) for m in mats.values()]
    full = max(float(m.max()) for m in mats.values())
    vmax = max(max(off), 1e-6) if max(off) > 1e-6 else max(full, 1e-6)
    cmap = plt.get_cmap("magma_r").with_extremes(over=BLUE)   # beyond the scale (the diagonal): hatched too
    for ax, (title, m) in zip(axes[0], mats.items()):
        im = ax.imshow(m.numpy(), cmap=cmap, vmin=0, vmax=vmax)
        for t, j in (m > vmax * 1.001).nonzero().tolist():
            ax.add_patch(plt.Rectangle((j - 0.5, t - 0.5), 1, 1, fill=False, hatch="///", ec="white", lw=0))
        ax.set_xlabel("input position j (token changed)", fontsize=9)
        ax.set_ylabel("output position t", fontsize=9)
        ax.set_title(title, fontsize=10)
        labels = tokens if tokens is not None else [str(t) for t in range(len(m))]
        if len(labels) <= 32:          # every position labelled: no counting to find one
            ax.set_xticks(range(len(labels)), labels, fontsize=8, rotation=90 if tokens is not None else 0)
            ax.set_yticks(range(len(labels)), labels, fontsize=8)
    saturated = full > vmax * 1.001
    fig.colorbar(im, ax=axes, fraction=0.04, pad=0.02, extend="max" if saturated else "neither",
                 label="‖Δ logits at t‖ when token j changes"
                       + ("\n(blue, hatched: beyond the scale — the diagonal)" if saturated else ""))
    return _describe_influence(fig, mats, tokens, vmax)


def _describe_influence(fig, mats, tokens, vmax):
    n = len(next(iter(mats.values())))
    names = [f"{t} {tokens[t]!r}" if tokens is not None else str(t) for t in range(n)]
    said, rows = [], []
    for title, m in mats.items():
        later = m.triu(1)
        off = m.masked_fill(torch.eye(len(m), dtype=torch.bool), 0)
        t, j = divmod(int(off.argmax()), len(m))
        said.append(f"{title!r}: a token changes its own output by {_range(m.diag().tolist())}, another output "
                    f"by at most {fmt(off[t, j])} (output {t} from token {j}), an earlier output by at most "
                    f"{fmt(later.max())}")
        rows += [[f"{title}, output {names[t]}", *(float(v) for v in m[t])] for t in range(len(m))]
    return describe(fig, f"Size of the change of output t when input token j changes ({n} × {n} positions, "
                         f"colour scale 0 to {fmt(vmax)}"
                         + ("; larger changes, beyond the scale, in blue and hatched" if
                            any(float(m.max()) > vmax * 1.001 for m in mats.values()) else "")
                         + "). " + "; ".join(said) + ".",
                    table=(["output t", *(f"token {j}" for j in names)], rows), extra_values=[vmax, *range(n)])


def residual_contribution_bars(values, ylabel="mean contribution", title=None):
    """One pair of bars per residual-stream term: its value at first-copy positions and at
    repeated-copy positions (e.g. its contribution to the correct token's logit).

    values: {term: (first-copy value, repeated-copy value)}. Returns the Figure.
    """
    if not isinstance(values, dict) or not values:
        raise ValueError("values must be a non-empty dict {term: (first, repeated)}")
    names = list(values)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(min(9.5, 0.95 * len(names) + 2.5), 3.6))
    ax.bar(x - 0.2, [values[k][0] for k in names], 0.4, color=GREY, label="first-copy positions")
    ax.bar(x + 0.2, [values[k][1] for k in names], 0.4, color=VERMILLION, hatch="//", edgecolor="white", lw=0,
           label="repeated-copy positions")
    ax.axhline(0, color="k", lw=0.6)
    # upright, a long name on two lines: slanted, "LN β + unembed bias" ran into its neighbour
    ax.set_xticks(x, ["\n".join(textwrap.wrap(k, 13)) for k in names], fontsize=9)
    ax.set_ylabel("\n".join(textwrap.wrap(ylabel, 28)))       # a long label: two lines, not tiny
    if title:
        ax.set_title(title, fontsize=11)
    ax.legend(fontsize=9)
    fig.tight_layout()
    top = max(names, key=lambda k: values[k][1] - values[k][0])
    text = (f"{title + ': ' if title else ''}{ylabel} per residual-stream term, at first-copy "
            f"and at repeated-copy positions. The largest gain is {top}'s, from {fmt(values[top][0])} to "
            f"{fmt(values[top][1])}.")
    if len(names) <= 5:
        pairs = "; ".join(f"{k} {fmt(a)} → {fmt(b)}" for k, (a, b) in values.items())
        return describe(fig, f"{text} {pairs}.")
    return describe(fig, text, table=(["term", "first-copy positions", "repeated-copy positions"],
                                      [[k, float(a), float(b)] for k, (a, b) in values.items()]))
