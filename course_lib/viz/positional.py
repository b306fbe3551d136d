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
from .describe import describe, fmt
from .live import LivePlot
from .palette import BLUE, CYCLE, GREEN, GREY, LINESTYLES, MARKERS, ORANGE, VERMILLION

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


def _num(x):
    """2 decimals, or 2 significant digits where the value is far from 1 (0.00032, 3.4e+03):
    plain decimals down to 1e-4, where e-notation would read as float rounding noise."""
    if x == 0 or 0.01 <= abs(x) < 1000:
        return fmt(x)
    return f"{x:.2g}" if abs(x) >= 1e-4 and abs(x) < 1000 else f"{x:.1e}"


def _table_words(pe, base):
    """describe()'s arguments for the table pe (length, d_model): the wavelengths, and a sample
    of its values (a few dimensions at a few positions)."""
    length, d = pe.shape
    pos = sorted({p for p in (0, 1, 2, 5, 10, 20, 50, length - 1) if p < length})
    dims = sorted({j for i in {0, d // 8, d // 4, (d - 1) // 2} for j in (2 * i, 2 * i + 1) if j < d})
    waves = [2 * math.pi * base ** (2 * (j // 2) / d) for j in dims]
    rows = [[f"dimension {j} ({'cos' if j % 2 else 'sin'})", _num(w), *pe[pos, j].tolist()]
            for j, w in zip(dims, waves)]
    text = (f"Sinusoidal positional encoding table, d_model = {d}, base {base:g}: position 0 … {length - 1} across, "
            f"dimension 0 … {d - 1} up, colour from −1 (blue) to 1 (red); sin on even, cos on odd dimensions. The "
            f"wavelength grows from {_num(waves[0])} positions (dimension 0) to {_num(waves[-1])} "
            f"(dimension {dims[-1]}).")
    return dict(text=text, table=(["dimension", "wavelength", *(f"pos {p}" for p in pos)], rows),
                extra_values=(length - 1, d - 1, *dims, *waves)), pos


def _similarity_words(pe):
    """The similarity matrix in words: its values with position 0 at a few distances."""
    sim = _similarity(pe)
    dist = [k for k in (1, 2, 5, 10, 20, 50, len(sim) - 1) if 0 < k < len(sim)]
    only = ", depending only on the distance |p − q|" if np.allclose(sim[1:, 1:], sim[:-1, :-1], atol=1e-3) else ""
    at = ("; with position 0: " + ", ".join(f"{fmt(sim[0, k])} at distance {k}" for k in dict.fromkeys(dist))
          if dist else "")
    return (f"similarity PE(p)·PE(q)/(d_model/2) of {len(sim)} positions, 1 on the diagonal{only}{at}; "
            f"smallest {fmt(sim.min())}."), dist, sim


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
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02, ticks=PE_TICKS, label="PE value")   # ±1 labelled
    fig.tight_layout()
    return describe(fig, **_table_words(pe, base)[0])


def position_similarity(d_model: int = 64, length: int = 100, base: float = 10000.0):
    """PE·PEᵀ, normalised so that the diagonal is 1: how alike two positions' encodings are."""
    _check_table_args(d_model, length, base)
    pe = sinusoidal_table(length, d_model, float(base))
    fig, ax = plt.subplots(figsize=(4.4, 3.6))
    im = _similarity_on(ax, pe)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03, label="similarity")
    fig.tight_layout()
    text, dist, _ = _similarity_words(pe)
    return describe(fig, f"For d_model = {d_model} and base {base:g}, the {text}", extra_values=(d_model, base, *dist))


class SinusoidalOverviewPlot(LivePlot):
    """The table PE (length, d_model) and its similarity matrix side by side (the explorer's
    figure; values: d_model, length, base).

    The base changes only the pictures and the table's title: they move. d_model and length
    change the images' shapes, hence the axes' limits and ticks: the images take the new
    array and extent, and the frame is drawn again (cheaper than a new figure, which would
    build both colour bars again). The colour scales stay fixed (±1 and −0.2…1).
    """

    figsize = (9.1, 3.3)      # ≤ 913 px wide; the table keeps 2 px per dimension at the explorer's largest d_model; 3.3 in tall: with its caption, fits a laptop screen (3.4 was 4 px over)
    redraw_on = ("d_model", "length")

    def check(self, d_model, length, base):
        _check_table_args(d_model, length, base)

    def build(self, fig, d_model, length, base):
        a1, a2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
        # Fixed margins instead of tight_layout: the shapes change the tick labels, and the
        # panels must not move from one value to the next.
        # wspace: the gap holds the table's colour bar and its label "PE value", then the
        # similarity's "position p" — at 0.35 the two labels touched (issue 45)
        fig.subplots_adjust(left=0.07, right=0.93, bottom=0.14, top=0.92, wspace=0.5)
        pe = sinusoidal_table(length, d_model, float(base))
        self.table = _heatmap_on(a1, pe, base)
        self.similarity = _similarity_on(a2, pe)
        fig.colorbar(self.table, ax=a1, fraction=0.04, pad=0.02, ticks=PE_TICKS, label="PE value")
        fig.colorbar(self.similarity, ax=a2, fraction=0.046, pad=0.03, label="similarity")
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

    def describe(self, d_model, length, base):
        pe = sinusoidal_table(length, d_model, float(base))
        said, pos = _table_words(pe, base)
        text, dist, sim = _similarity_words(pe)
        header, rows = said["table"]
        near = [k for k in (1, 10, len(pe) - 1) if 0 < k < len(pe)]
        result = (f"Similarity with position 0: " + ", ".join(f"{fmt(sim[0, k])} at distance {k}" for k in near)
                  + f"; smallest {fmt(sim.min())} (d_model = {d_model}, base {base:g}).")
        return dict(text="Left: " + said["text"] + " Right: the " + text, result=result,
                    table=(header, [*rows, ["similarity with position 0", "", *sim[0, pos].tolist()]]),
                    extra_values=(*said["extra_values"], *dist))


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
    axes, said = np.atleast_1d(axes), []
    for ax, j in zip(axes, dims):
        i = j // 2
        omega = base ** (-2 * i / d_model)
        curve = torch.sin(fine * omega) if j % 2 == 0 else torch.cos(fine * omega)
        ax.plot(fine.numpy(), curve.numpy(), color="0.75", lw=1)
        ax.plot(np.arange(length), pe[:, j].numpy(), "o", ms=2.5, color=BLUE if j % 2 == 0 else ORANGE)
        fn = "sin" if j % 2 == 0 else "cos"
        said.append(f"dimension {j} ({fn}) {2 * math.pi / omega:.4g}")
        ax.set_ylim(-1.2, 1.2)
        ax.set_yticks([-1, 0, 1])
        ax.text(1.01, 0.5, f"j={j}: {fn}, i={i}\nwavelength {2 * math.pi / omega:.4g}",
                transform=ax.transAxes, va="center", fontsize=9)
    axes[-1].set_xlabel("position pos (dots: the integer positions the model sees)")
    fig.suptitle(f"chosen dimensions of the sinusoidal PE (d_model={d_model}, base={base:g})", fontsize=10)
    fig.tight_layout()
    return describe(fig, f"Sinusoidal PE values between −1 and 1 against position 0 … {length - 1} (d_model = "
                         f"{d_model}, base {base:g}), one panel per dimension, with its wavelength in positions: "
                         + "; ".join(said) + ".")


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
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8.6, 4.4), gridspec_kw={"width_ratios": [1, 1]})
    lim = float(m.abs().max())
    im = a1.imshow(m.numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
    a1.set(title=f"M_k for k={k}: one 2×2 rotation per pair", xlabel="input dimension",
           ylabel="output dimension")
    if d_model <= 32:                # every dimension labelled: no counting to find one
        a1.set_xticks(range(d_model), [str(j) for j in range(d_model)], fontsize=8)
        a1.set_yticks(range(d_model), [str(j) for j in range(d_model)], fontsize=8)
    else:
        a1.xaxis.set_major_locator(MaxNLocator(integer=True))
        a1.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.colorbar(im, ax=a1, fraction=0.046, pad=0.03, label="entry of M_k")
    s, c = pe[:, 2 * pair].numpy(), pe[:, 2 * pair + 1].numpy()
    t = np.linspace(0, 2 * np.pi, 200)
    a2.plot(np.cos(t), np.sin(t), color="0.85")
    a2.scatter(s[:length], c[:length], c=np.arange(length), cmap="viridis", s=18, zorder=3)
    for pos in range(length):   # label each point with its position, just outside the circle
        a2.text(1.13 * s[pos], 1.13 * c[pos], str(pos), fontsize=8, ha="center", va="center",
                color="0.3")
    for pos in range(max(0, -k), length, max(1, length // 5)):   # pos + k must be a position too
        a2.annotate("", xy=(s[pos + k], c[pos + k]), xytext=(s[pos], c[pos]),
                    arrowprops=dict(arrowstyle="->", color=VERMILLION, lw=1))
    omega = base ** (-2 * pair / d_model)
    a2.set(aspect="equal", xlim=(-1.25, 1.25), ylim=(-1.25, 1.25),
           xlabel=f"PE[pos, {2 * pair}] (sin)", ylabel=f"PE[pos, {2 * pair + 1}] (cos)",
           title=f"pair i={pair}: each step turns by ω_i={omega:.3g} rad\n"
                 f"(numbers: positions; arrows: M_k, pos → pos {'+' if k >= 0 else '−'} {abs(k)})")
    a2.title.set_fontsize(10)
    a2.set_xticks([-1, -0.5, 0, 0.5, 1])
    a2.set_yticks([-1, -0.5, 0, 0.5, 1])
    fig.tight_layout()
    omegas = [base ** (-2 * i / d_model) for i in range(d_model // 2)]
    rows = [[f"pair {i}", _num(w), _num(k * w), float(m[2 * i, 2 * i]), float(m[2 * i, 2 * i + 1])]
            for i, w in enumerate(omegas)]
    text = (f"Left: M_k for k = {k}, d_model = {d_model}, base {base:g}: block-diagonal, one 2×2 rotation by k·ω_i "
            f"per pair of dimensions ({d_model // 2} blocks), entries from {fmt(m.min())} to {fmt(m.max())}. Right: "
            f"pair i = {pair} of PE at positions 0 … {length - 1} lies on the unit circle, each step turning by "
            f"ω_i = {omega:.3g} rad, so M_k turns PE(pos) by {fmt(k * omega)} rad to "
            f"PE(pos {'+' if k >= 0 else '−'} {abs(k)}).")
    return describe(fig, text, table=(["pair i", "ω_i (rad)", "k·ω_i (rad)", "cos k·ω_i", "sin k·ω_i"], rows),
                    extra_values=(d_model, base, d_model // 2, k * omega, *range(d_model // 2), *omegas,
                                  *(k * w for w in omegas)))


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
    known = {"none": (GREY, "o", ":"), "sinusoidal": (BLUE, "s", "-"), "learned": (ORANGE, "^", "--"),
             "rotary": (GREEN, "D", "-.")}
    style = {name: known.get(name, (CYCLE[i % 7], MARKERS[i % 7], LINESTYLES[i % 7]))
             for i, name in enumerate(dict.fromkeys([*by_length, *by_position]))}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.1, 3.8))
    for name, acc in by_length.items():
        c, m, ls = style[name]
        a1.plot(lengths, np.asarray(acc) * 100, marker=m, ls=ls, ms=3, label=name, color=c)
    n_pos = max(len(a) for a in by_position.values())
    for name, acc in by_position.items():
        c, _, ls = style[name]
        a2.plot(np.arange(len(acc)), np.asarray(acc) * 100, ls=ls, lw=1.5, label=name, color=c)
    # Where "longer than training" starts: on the length axis halfway between the longest trained
    # length drawn and the next one (n = train_len itself was trained on: not shaded); on the
    # position axis at train_len − 0.5 (positions 0 … train_len − 1 were seen).
    shorter, longer = [n for n in lengths if n <= train_len], [n for n in lengths if n > train_len]
    edge = (max(shorter) + min(longer)) / 2 if shorter and longer else train_len + 0.5
    for ax, left, right in ((a1, edge, max(lengths)), (a2, train_len - 0.5, n_pos - 1)):
        ax.axvspan(left, right + 0.5, color="0.95", zorder=0)
        if chance is not None:
            ax.axhline(chance * 100, ls=":", color="0.4", lw=1)
            ax.text(ax.get_xlim()[0] if ax is a1 else 0, chance * 100 + 1.5, " chance", fontsize=9, color=GREY)
        ax.set_ylim(-3, 103)
    a1.axvline(edge, color="0.3", lw=1)
    a2.axvline(train_len - 0.5, color="0.3", lw=1)
    a1.set(xlabel="sequence length n", ylabel="accuracy (%)",
           title=f"trained on lengths ≤ {train_len} (shaded: longer)")
    a2.set(xlabel="position i", ylabel="accuracy (%)",
           title=f"per position, length {n_pos} (shaded: ≥ {train_len})")
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    inside = max((i for i, n in enumerate(lengths) if n <= train_len), default=0, key=lambda i: lengths[i])
    longest = int(np.argmax(lengths))
    by_n = "; ".join(f"{name} {100 * acc[inside]:.1f} % at n = {lengths[inside]}, {100 * acc[longest]:.1f} % at "
                     f"n = {lengths[longest]}" for name, acc in by_length.items())
    means = {name: [100 * np.nanmean(part) if np.isfinite(part).any() else np.nan
                    for part in (np.asarray(acc, float)[:train_len], np.asarray(acc, float)[train_len:])]
             for name, acc in by_position.items()}
    by_pos = "; ".join(f"{name} {m[0]:.1f} % and {m[1]:.1f} %" for name, m in means.items())
    text = (f"Accuracy against sequence length n, trained on lengths ≤ {train_len}: {by_n}. Per position in "
            f"sequences of length {n_pos}, mean accuracy before position {train_len} and from there on: {by_pos}."
            + (f" Chance is {100 * chance:.1f} %." if chance is not None else ""))
    rows = [[name, *(f"{100 * a:.1f}" for a in acc)] for name, acc in by_length.items()]
    return describe(fig, text, table=(["model", *(f"n = {n}" for n in lengths)], rows),
                    extra_values=[v for m in means.values() for v in m])


def rotary_relative_figure(scores, max_offset: int | None = None):
    """Left: a rotary score matrix S[m, j], query position m, key position j (constant along
    diagonals). Right: S[m, m+Δ] vs Δ for up to 4 query positions m, each shifted up by one
    step so that all can be seen, over the first query's curve in grey: where the score
    depends on Δ alone, each lies on the grey."""
    s = torch.as_tensor(scores, dtype=torch.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1] or s.shape[0] < 3:
        raise ValueError(f"scores must be a square (n, n) matrix with n >= 3, got shape {tuple(s.shape)}")
    n = s.shape[0]
    # every curve needs queries m with m ± max_offset inside the matrix: at least one such m
    max_offset = (n - 1) // 2 if max_offset is None else max_offset
    _check_int("max_offset", max_offset, 1, max(1, (n - 1) // 2))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.1, 3.8), gridspec_kw={"width_ratios": [1, 1.3]})
    lim = float(s.abs().max())
    im = a1.imshow(s.numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, origin="lower", interpolation="nearest")
    a1.set(xlabel="key position j", ylabel="query position m", title="rotary scores (R_m q)·(R_j k)")
    fig.colorbar(im, ax=a1, fraction=0.046, pad=0.03, label="score")
    offsets = np.arange(-max_offset, max_offset + 1)
    queries = list(range(max_offset, n - max_offset, max(1, (n - 2 * max_offset) // 6)))
    queries = [queries[round(i * (len(queries) - 1) / 3)] for i in range(4)] if len(queries) > 4 else queries
    reference = s[queries[0], queries[0] + offsets].numpy()
    step = 1.15 * float(reference.max() - reference.min()) or 1.0   # drawn on top of each other they could not be told apart
    for r, m in enumerate(queries):   # each query's row, shifted up by r steps, over the first one's shape in grey
        a2.plot(offsets, reference + r * step, color="0.75", lw=5, zorder=1)
        a2.plot(offsets, s[m, m + offsets].numpy() + r * step, "o-", ms=3.5, lw=1, zorder=2, color=CYCLE[r])
        a2.text(offsets[-1] + 0.6, reference[-1] + r * step, f"m = {m}", va="center", fontsize=9)
    a2.set_xlim(offsets[0] - 0.5, offsets[-1] + 0.25 * len(offsets))   # room for the labels
    a2.set_xticks([o for o in offsets if o % 5 == 0])
    a2.set(xlabel="offset Δ = j − m", ylabel="score (each row shifted up)",
           title="S[m, m+Δ] for several m (grey: the first one's curve)")
    a2.set_yticks([])
    fig.tight_layout()
    spread = max(float(d.max() - d.min()) for d in (torch.diagonal(s, o) for o in range(2 - n, n - 1)))
    alone = (f"along each diagonal (a fixed offset Δ = j − m) they vary by at most {fmt(spread)}, so the score "
             f"depends on Δ alone" if spread <= 0.01 * lim else
             f"along a diagonal (a fixed offset Δ = j − m) they vary by up to {fmt(spread)}: the score does not "
             f"depend on Δ alone")
    text = (f"Left: rotary scores S[m, j] for {n} query and key positions, from {fmt(s.min())} to {fmt(s.max())}; "
            f"{alone}. Right: S[m, m+Δ] for Δ = {offsets[0]} … {offsets[-1]} at query positions m = "
            f"{', '.join(map(str, queries))}, each shifted up over the first one's curve in grey.")
    rows = [[f"m = {m}", *s[m, m + offsets].tolist()] for m in queries]
    return describe(fig, text, table=(["query", *(f"Δ = {o}" for o in offsets)], rows), extra_values=(spread,))
