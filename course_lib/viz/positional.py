"""Figures for lesson 03 — positional encodings.

Each function takes plain parameters and returns a matplotlib Figure.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import MaxNLocator

from ..nn.positional import shift_matrix, sinusoidal_table
from .live import LivePlot

__all__ = [
    "sinusoidal_heatmap",
    "position_similarity",
    "sinusoidal_overview",
    "dimension_curves",
    "rotation_figure",
    "extrapolation_figure",
    "rotary_relative_figure",
]


def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < low or (high is not None and value > high):
        rng = f">= {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"{name} must be {rng}, got {name}={value}")


def _check_table_args(d_model, length, base):
    _check_int("d_model", d_model, 1)
    _check_int("length", length, 1)
    if not isinstance(base, (int, float)) or isinstance(base, bool) or base <= 1:
        raise ValueError(f"base must be a number > 1, got base={base!r}")


PE_TICKS = (-1, -0.5, 0, 0.5, 1)   # every entry of a sinusoidal table lies in [-1, 1]


def _heatmap_title(d_model, base):
    return f"sinusoidal PE (d_model={d_model}, base={base:g})"


def _heatmap_on(ax, pe, base):
    im = ax.imshow(pe.T.numpy(), aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1,
                   origin="lower", interpolation="nearest")
    ax.set(xlabel="position pos", ylabel="dimension j", title=_heatmap_title(pe.shape[1], base))
    return im


def _similarity(pe):
    """PE(p)·PE(q) / (d_model/2) for a table pe (length, d_model): (length, length), 1 on the diagonal."""
    return (pe @ pe.T / pe.shape[1] * 2).numpy()


def _similarity_on(ax, pe):
    im = ax.imshow(_similarity(pe), cmap="viridis", vmin=-0.2, vmax=1, origin="lower", interpolation="nearest")
    ax.set(xlabel="position q", ylabel="position p", title="similarity PE(p)·PE(q) / (d_model/2)")
    return im


def sinusoidal_heatmap(d_model: int = 64, length: int = 100, base: float = 10000.0):
    """The table PE (length, d_model) as an image: position across, dimension up."""
    _check_table_args(d_model, length, base)
    pe = sinusoidal_table(length, d_model, float(base))
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    im = _heatmap_on(ax, pe, base)
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02, ticks=PE_TICKS)   # the whole range, ±1 labelled
    fig.tight_layout()
    return fig


def position_similarity(d_model: int = 64, length: int = 100, base: float = 10000.0):
    """PE·PEᵀ, normalised so that the diagonal is 1: how alike two positions' encodings are."""
    _check_table_args(d_model, length, base)
    pe = sinusoidal_table(length, d_model, float(base))
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    im = _similarity_on(ax, pe)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
    fig.tight_layout()
    return fig


class SinusoidalOverviewPlot(LivePlot):
    """The table PE (length, d_model) and its similarity matrix side by side (the explorer's
    figure; values: d_model, length, base).

    The base changes only the pictures and the table's title: they move. d_model and length
    change the images' shapes, hence the axes' limits and ticks: the images take the new
    array and extent, and the frame is drawn again (cheaper than a new figure, which would
    build both colour bars again). The colour scales stay fixed (±1 and −0.2…1).
    """

    figsize = (11, 3.6)
    redraw_on = ("d_model", "length")

    def check(self, d_model, length, base):
        _check_table_args(d_model, length, base)

    def build(self, fig, d_model, length, base):
        a1, a2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
        # Fixed margins instead of tight_layout: the shapes change the tick labels, and the
        # panels must not move from one value to the next.
        fig.subplots_adjust(left=0.06, right=0.95, bottom=0.14, top=0.91, wspace=0.25)
        pe = sinusoidal_table(length, d_model, float(base))
        self.table = _heatmap_on(a1, pe, base)
        self.similarity = _similarity_on(a2, pe)
        fig.colorbar(self.table, ax=a1, fraction=0.04, pad=0.02, ticks=PE_TICKS)
        fig.colorbar(self.similarity, ax=a2, fraction=0.046, pad=0.03)
        return [self.table, self.similarity, a1.title]

    def update(self, d_model, length, base):
        pe = sinusoidal_table(length, d_model, float(base))
        # origin="lower": pixel centres at 0 … n − 1, so the image spans −0.5 … n − 0.5;
        # set_extent also sets the (autoscaled) axes' limits to it, as imshow did
        self.table.set_data(pe.T.numpy())
        self.table.set_extent((-0.5, length - 0.5, -0.5, d_model - 0.5))
        self.similarity.set_data(_similarity(pe))
        self.similarity.set_extent((-0.5, length - 0.5, -0.5, length - 0.5))
        self.table.axes.title.set_text(_heatmap_title(d_model, base))


def sinusoidal_overview(d_model: int = 64, length: int = 100, base: float = 10000.0):
    """The table and its similarity matrix side by side (what the explorer widget draws)."""
    return SinusoidalOverviewPlot().figure(d_model=d_model, length=length, base=base)


def dimension_curves(dims=(0, 1, 10, 11, 40), d_model: int = 64, length: int = 100,
                     base: float = 10000.0):
    """PE[:, j] against position for a few dimensions j, one panel each, with the wavelength."""
    _check_table_args(d_model, length, base)
    dims = list(dims)
    if not dims:
        raise ValueError("dims must name at least one dimension")
    for j in dims:
        _check_int("dims", j, 0, d_model - 1)
    pe = sinusoidal_table(length, d_model, float(base))
    fine = torch.linspace(0, length - 1, 20 * length)
    fig, axes = plt.subplots(len(dims), 1, figsize=(7.5, 1.05 * len(dims) + 0.6), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, j in zip(axes, dims):
        i = j // 2
        omega = base ** (-2 * i / d_model)
        curve = torch.sin(fine * omega) if j % 2 == 0 else torch.cos(fine * omega)
        ax.plot(fine.numpy(), curve.numpy(), color="0.75", lw=1)
        ax.plot(np.arange(length), pe[:, j].numpy(), "o", ms=2.5, color="tab:blue" if j % 2 == 0 else "tab:orange")
        fn = "sin" if j % 2 == 0 else "cos"
        ax.set_ylim(-1.2, 1.2)
        ax.set_yticks([-1, 0, 1])
        ax.text(1.01, 0.5, f"j={j}: {fn}, i={i}\nwavelength {2 * math.pi / omega:.4g}",
                transform=ax.transAxes, va="center", fontsize=8)
    axes[-1].set_xlabel("position pos (dots: the integer positions the model sees)")
    fig.suptitle(f"chosen dimensions of the sinusoidal PE (d_model={d_model}, base={base:g})", fontsize=10)
    fig.tight_layout()
    return fig


def rotation_figure(k: int = 3, d_model: int = 16, base: float = 10000.0, pair: int = 1,
                    length: int = 20):
    """Left: the block-diagonal M_k. Right: one (sin, cos) pair of PE(pos) for pos = 0 … length-1
    on the unit circle; arrows show M_k carrying PE(pos) to PE(pos + k)."""
    _check_table_args(d_model, length, base)
    if d_model % 2:
        raise ValueError(f"d_model must be even for M_k, got d_model={d_model}")
    _check_int("k", k, -length, length)
    _check_int("pair", pair, 0, d_model // 2 - 1)
    m = shift_matrix(int(k), d_model, float(base))
    pe = sinusoidal_table(length + abs(k), d_model, float(base))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.5, 4.2), gridspec_kw={"width_ratios": [1, 1]})
    lim = float(m.abs().max())
    im = a1.imshow(m.numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
    a1.set(title=f"M_k for k={k}: one 2×2 rotation per pair", xlabel="input dimension",
           ylabel="output dimension")
    a1.xaxis.set_major_locator(MaxNLocator(integer=True))
    a1.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.colorbar(im, ax=a1, fraction=0.046, pad=0.03)
    s, c = pe[:, 2 * pair].numpy(), pe[:, 2 * pair + 1].numpy()
    t = np.linspace(0, 2 * np.pi, 200)
    a2.plot(np.cos(t), np.sin(t), color="0.85")
    a2.scatter(s[:length], c[:length], c=np.arange(length), cmap="viridis", s=18, zorder=3)
    for pos in range(length):   # label each point with its position, just outside the circle
        a2.text(1.13 * s[pos], 1.13 * c[pos], str(pos), fontsize=7, ha="center", va="center",
                color="0.3")
    for pos in range(max(0, -k), length, max(1, length // 5)):   # pos + k must be a position too
        a2.annotate("", xy=(s[pos + k], c[pos + k]), xytext=(s[pos], c[pos]),
                    arrowprops=dict(arrowstyle="->", color="tab:red", lw=1))
    omega = base ** (-2 * pair / d_model)
    a2.set(aspect="equal", xlim=(-1.25, 1.25), ylim=(-1.25, 1.25),
           xlabel=f"PE[pos, {2 * pair}] (sin)", ylabel=f"PE[pos, {2 * pair + 1}] (cos)",
           title=f"pair i={pair}: each step turns by ω_i={omega:.3g} rad\n"
                 f"(numbers: positions; arrows: M_k, pos → pos {'+' if k >= 0 else '−'} {abs(k)})")
    fig.tight_layout()
    return fig


def extrapolation_figure(lengths, by_length: dict, by_position: dict, train_len: int,
                         chance: float | None = None):
    """Accuracy vs sequence length (left) and vs position in the longest sequences (right).

    by_length: {name: accuracies aligned with lengths}; by_position: {name: accuracy per
    position (NaN where there is no target)}. train_len marks the longest training length.
    """
    lengths = list(lengths)
    if not by_length or not by_position:
        raise ValueError("by_length and by_position must name at least one model")
    for name, acc in by_length.items():
        if len(acc) != len(lengths):
            raise ValueError(f"by_length[{name!r}] has {len(acc)} values for {len(lengths)} lengths")
    _check_int("train_len", train_len, 1)
    colors = {"none": "0.5", "sinusoidal": "tab:blue", "learned": "tab:orange", "rotary": "tab:green"}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    for name, acc in by_length.items():
        a1.plot(lengths, np.asarray(acc) * 100, "o-", ms=3, label=name, color=colors.get(name))
    n_pos = max(len(a) for a in by_position.values())
    for name, acc in by_position.items():
        a2.plot(np.arange(len(acc)), np.asarray(acc) * 100, "-", lw=1.5, label=name, color=colors.get(name))
    for ax, right in ((a1, max(lengths)), (a2, n_pos - 1)):
        ax.axvspan(train_len - 0.5 if ax is a2 else train_len, right + 0.5, color="0.95", zorder=0)
        if chance is not None:
            ax.axhline(chance * 100, ls=":", color="0.4", lw=1)
            ax.text(ax.get_xlim()[0] if ax is a1 else 0, chance * 100 + 1.5, " chance", fontsize=9, color="0.35")
        ax.set_ylim(-3, 103)
    a1.axvline(train_len, color="0.3", lw=1)
    a2.axvline(train_len - 0.5, color="0.3", lw=1)
    a1.set(xlabel="sequence length n", ylabel="accuracy (%)",
           title=f"trained on lengths ≤ {train_len} (shaded: longer)")
    a2.set(xlabel="position i", ylabel="accuracy (%)",
           title=f"per position, length {n_pos} (shaded: ≥ {train_len})")
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def rotary_relative_figure(scores, max_offset: int | None = None):
    """Left: a rotary score matrix S[m, n] (constant along diagonals). Right: S[m, m+Δ] vs Δ
    for up to 4 query positions m, each shifted up by one step so that all can be seen, over
    the first query's curve in grey: where the score depends on Δ alone, each lies on the grey."""
    s = torch.as_tensor(scores, dtype=torch.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1] or s.shape[0] < 3:
        raise ValueError(f"scores must be a square (n, n) matrix with n >= 3, got shape {tuple(s.shape)}")
    n = s.shape[0]
    # every curve needs queries m with m ± max_offset inside the matrix: at least one such m
    max_offset = (n - 1) // 2 if max_offset is None else max_offset
    _check_int("max_offset", max_offset, 1, max(1, (n - 1) // 2))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [1, 1.3]})
    lim = float(s.abs().max())
    im = a1.imshow(s.numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, origin="lower", interpolation="nearest")
    a1.set(xlabel="key position n", ylabel="query position m", title="rotary scores (R_m q)·(R_n k)")
    fig.colorbar(im, ax=a1, fraction=0.046, pad=0.03)
    offsets = np.arange(-max_offset, max_offset + 1)
    queries = list(range(max_offset, n - max_offset, max(1, (n - 2 * max_offset) // 6)))
    queries = [queries[round(i * (len(queries) - 1) / 3)] for i in range(4)] if len(queries) > 4 else queries
    reference = s[queries[0], queries[0] + offsets].numpy()
    step = 1.15 * float(reference.max() - reference.min()) or 1.0   # drawn on top of each other they could not be told apart
    for r, m in enumerate(queries):   # each query's row, shifted up by r steps, over the first one's shape in grey
        a2.plot(offsets, reference + r * step, color="0.75", lw=5, zorder=1)
        a2.plot(offsets, s[m, m + offsets].numpy() + r * step, "o-", ms=3.5, lw=1, zorder=2)
        a2.text(offsets[-1] + 0.6, reference[-1] + r * step, f"m = {m}", va="center", fontsize=8)
    a2.set_xlim(offsets[0] - 0.5, offsets[-1] + 0.25 * len(offsets))   # room for the labels
    a2.set_xticks([o for o in offsets if o % 5 == 0])
    a2.set(xlabel="offset Δ = n − m", ylabel="score (each row shifted up)",
           title="S[m, m+Δ] for several m (grey: the first one's curve)")
    a2.set_yticks([])
    fig.tight_layout()
    return fig
