"""Figures for lesson 02: attention and self-attention.
Length: one module per lesson's figures; each figure's description (issue 28) is built
beside it from the same arrays, which a split would separate.

Plain parameters in, a matplotlib Figure out. `softmax_saturation` is the measurement
behind the √d_k figures (random queries and keys, statistics of the softmax).
"""
from __future__ import annotations

import functools
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib import ticker

from .describe import describe, fmt
from .live import LivePlot
from .palette import BLACK, BLUE, GREY, VERMILLION

__all__ = [
    "lookup_figure",
    "softmax_saturation",
    "scaling_figure",
    "scaling_view",
    "attention_matrix_heatmap",
    "attention_explorer_view",
]


def _as_matrix(name, x, cols=None):
    t = torch.as_tensor(x, dtype=torch.float32)
    if t.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
    if cols is not None and t.shape[1] != cols:
        raise ValueError(f"{name} must have {cols} columns, got shape {tuple(t.shape)}")
    return t


def _num(x):
    """2 decimals, or 2 significant digits where the value is far from 1 (1.2e-05, 3.4e+03)."""
    return fmt(x) if x == 0 or 0.01 <= abs(x) < 1000 else f"{x:.1e}"


def _top(weights, labels, k=3):
    """"'animal' 0.60, 'street' 0.12, 'the' 0.08": the k largest weights with their labels."""
    order = sorted(range(len(weights)), key=lambda i: -weights[i])[:k]
    return ", ".join(f"'{labels[i]}' {fmt(weights[i])}" for i in order)


def _check_labels(name, labels, n):
    labels = list(labels)
    if len(labels) != n:
        raise ValueError(f"got {len(labels)} {name} for {n} rows")
    return labels


def lookup_figure(keys, values, query, key_labels, query_label="query", unit=""):
    """Hard vs soft lookup of a 2-D `query` among 2-D `keys`.

    keys: (n, 2); values: n numbers; query: 2 numbers. Scores are the dot products q·k_i.
    unit: the values' unit ("kg"), written after every value and answer.
    Left: the keys and the query in the plane. Right: the weights of the hard lookup
    (one-hot at the best score) and of the soft one (softmax of the scores), and what each returns.
    """
    K = _as_matrix("keys", keys, cols=2)
    v = torch.as_tensor(values, dtype=torch.float32)
    q = torch.as_tensor(query, dtype=torch.float32)
    if v.shape != (len(K),):
        raise ValueError(f"values must be {len(K)} numbers (one per key), got shape {tuple(v.shape)}")
    if q.shape != (2,):
        raise ValueError(f"query must be 2 numbers, got shape {tuple(q.shape)}")
    labels = _check_labels("key_labels", key_labels, len(K))
    u = f" {unit}" if unit else ""
    scores = K @ q
    hard = torch.nn.functional.one_hot(scores.argmax(), len(K)).float()
    soft = torch.softmax(scores, dim=0)

    fig, (ax_p, ax_w) = plt.subplots(1, 2, figsize=(9.1, 3.8), gridspec_kw={"width_ratios": [1, 1.4]})
    ax_p.scatter(K[:, 0].tolist(), K[:, 1].tolist(), s=60, color=BLUE, zorder=3)
    for (x, y), lab, val in zip(K.tolist(), labels, v.tolist()):
        # centred above its point: a label to the right of the rightmost key would cross the frame
        ax_p.annotate(f"{lab} (v={val:g}{u})", (x, y), textcoords="offset points", xytext=(0, 6), fontsize=9,
                      ha="center")
    ax_p.scatter([q[0].item()], [q[1].item()], marker="*", s=220, color=VERMILLION, zorder=4)
    ax_p.annotate(query_label, q.tolist(), textcoords="offset points", xytext=(6, -12), color=BLACK)
    ax_p.axhline(0, color=GREY, lw=0.6)
    ax_p.axvline(0, color=GREY, lw=0.6)
    ax_p.set(title="keys k_i and the query q", xlabel="feature 1", ylabel="feature 2")
    ax_p.margins(x=0.35, y=0.25)   # room for the labels beside and above the points

    pos = torch.arange(len(K), dtype=torch.float32)
    hard_out, soft_out = (hard @ v).item(), (soft @ v).item()   # what each lookup returns
    hard, soft = hard.tolist(), soft.tolist()
    ax_w.bar((pos - 0.2).tolist(), hard, width=0.4, color=GREY, hatch="//", edgecolor="white",
             label=f"hard (argmax): returns {hard_out:.2f}{u}")
    ax_w.bar((pos + 0.2).tolist(), soft, width=0.4, color=BLUE,
             label=f"soft (softmax): returns {soft_out:.2f}{u}")
    for i, p in enumerate(soft):
        ax_w.text(i + 0.2, p + 0.02, f"{p:.2f}", ha="center", fontsize=8)
    ax_w.set_xticks(pos.tolist(), labels)
    ax_w.set_ylim(0, 1.15)
    ax_w.set(ylabel="weight α(q, k_i)", title="lookup weights; output = Σ α_i v_i")
    ax_w.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    best = labels[int(np.argmax(hard))]
    return describe(fig, f"Query '{query_label}' at ({q[0]:.2f}, {q[1]:.2f}) among {len(K)} keys, scored by q·k: "
                         f"the hard lookup (argmax) puts weight 1 on '{best}' and returns {hard_out:.2f}{u}; "
                         f"the soft lookup (softmax) weights {_top(soft, labels, len(K))} and returns {soft_out:.2f}{u}.")


def _check_d_k(d_k):
    if isinstance(d_k, bool) or not isinstance(d_k, int) or d_k < 1:
        raise ValueError(f"d_k must be a positive int, got d_k={d_k!r}")


def softmax_saturation(d_k, scaled=True, n_keys=16, trials=256, seed=0):
    """Statistics of softmax(q·k_i / s) for random q, k_i ~ N(0, I_{d_k}), s = √d_k or 1.

    Over `trials` random queries, each against `n_keys` random keys, returns the means of
      "variance":  the variance of the scores q·k_i / s,
      "max_prob":  the largest attention weight max_i α_i,
      "entropy":   −Σ α_i log α_i (in nats; uniform over n_keys gives log n_keys),
      "grad_norm": ‖∂α/∂s‖_F, the Frobenius norm of the softmax Jacobian diag(α) − α αᵀ,
    as a dict of floats.
    """
    _check_d_k(d_k)
    if isinstance(n_keys, bool) or not isinstance(n_keys, int) or n_keys < 2:
        raise ValueError(f"n_keys must be an int >= 2, got n_keys={n_keys!r}")
    return dict(_saturation(d_k, bool(scaled), n_keys, trials, seed))


@functools.lru_cache(maxsize=256)
def _saturation(d_k, scaled, n_keys, trials, seed):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(trials, 1, d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(trials, n_keys, d_k, generator=gen, dtype=torch.float64)
    scores = (q * k).sum(-1) / (math.sqrt(d_k) if scaled else 1.0)      # (trials, n_keys)
    p = torch.softmax(scores, dim=-1)
    entropy = -(p * torch.log(p.clamp_min(1e-300))).sum(-1)
    jac = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]          # (trials, n_keys, n_keys)
    return tuple({
        "variance": scores.var().item(),
        "max_prob": p.max(-1).values.mean().item(),
        "entropy": entropy.mean().item(),
        "grad_norm": torch.linalg.matrix_norm(jac).mean().item(),
    }.items())


_PANELS = [("variance", "variance of the scores", "log"),
           ("max_prob", "largest weight max α_i", "linear"),
           ("entropy", "entropy of α (nats)", "linear"),
           ("grad_norm", "‖∂α/∂s‖ (softmax gradient)", "log")]


def scaling_figure(d_values, raw, scaled, n_keys=16):
    """Four panels against d_k (log x): score variance, max weight, entropy, gradient norm.

    raw / scaled: dicts {"variance", "max_prob", "entropy", "grad_norm"} -> one value per d_k,
    for scores q·k and q·k/√d_k.
    """
    d_values = list(d_values)
    for name, stats in (("raw", raw), ("scaled", scaled)):
        for key, _, _ in _PANELS:
            if key not in stats:
                raise ValueError(f"{name} is missing {key!r}")
            if len(stats[key]) != len(d_values):
                raise ValueError(f"{name}[{key!r}] has {len(stats[key])} values for {len(d_values)} d_k values")
    # 2 × 2, 9.5 in wide: four panels in one row were shrunk to 68 % in the notebook column.
    fig, axes = plt.subplots(2, 2, figsize=(9.5, 6.4), layout="constrained")
    axes = axes.flat
    for ax, (key, title, yscale) in zip(axes, _PANELS):
        ax.plot(d_values, raw[key], "o--", color=VERMILLION, label="q·k (no scaling)")
        ax.plot(d_values, scaled[key], "s-", color=BLUE, label="q·k / √d_k")
        ax.set_xscale("log", base=2)
        ax.set_yscale(yscale)
        ax.set(xlabel="d_k", title=title)
        ax.grid(True, alpha=0.3)
        _plain_ticks(ax, d_values)
    axes[1].axhline(1 / n_keys, color=GREY, ls=":", lw=1)
    axes[1].text(d_values[0], 1 / n_keys, f" uniform (1/{n_keys})", va="bottom", fontsize=9, color=GREY)
    axes[1].set_ylim(0, 1.05)
    axes[2].axhline(math.log(n_keys), color=GREY, ls=":", lw=1)
    axes[2].text(d_values[0], math.log(n_keys), " uniform", va="bottom", fontsize=9, color=GREY)
    axes[2].set_ylim(0, 1.12 * math.log(n_keys))     # room above the line for its label, inside the frame
    axes[0].legend(fontsize=9)
    at = {key: f"{_num(raw[key][-1])} vs {_num(scaled[key][-1])}" for key, _, _ in _PANELS}
    text = (f"Softmax over {n_keys} random keys against d_k = {d_values[0]} … {d_values[-1]} (log scale), scores "
            f"q·k without scaling vs q·k/√d_k: at d_k = {d_values[-1]} the score variance is {at['variance']}, "
            f"the largest weight {at['max_prob']} (uniform 1/{n_keys} = {fmt(1 / n_keys)}), the entropy "
            f"{at['entropy']} nats (uniform ln {n_keys} = {fmt(math.log(n_keys))}), the softmax gradient norm "
            f"{at['grad_norm']}.")
    rows = [[f"{title}, {name}", *map(_num, stats[key])] for key, title, _ in _PANELS
            for name, stats in (("q·k", raw), ("q·k/√d_k", scaled))]
    return describe(fig, text, table=(["statistic", *(f"d_k = {d}" for d in d_values)], rows))


D_K_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

_ROUND_TICKS = [k * 10.0 ** e for e in range(-4, 5) for k in (1, 2, 5)]
_DENSE_TICKS = sorted(k * 10.0 ** e for e in range(-4, 5) for k in (1, 2, 3, 5))


def _plain_ticks(ax, ds):
    """x: every other d_k as a plain number (1, 4, 16 …); a log y axis labelled at round
    values written as plain decimals, not 3×10⁻¹: powers of ten over many decades (1, 10,
    100 …), 1-2-5 over two (0.05, 0.1, 0.2, 0.5), and 1-2-3-5 over one or less (0.05, 0.1,
    0.2, 0.3), so that the top of the data has a label near it."""
    ax.set_xticks(ds[::2], [str(d) for d in ds[::2]])
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    if ax.get_yscale() == "log":
        low, high = ax.get_ylim()
        decades = math.log10(high / low)
        candidates = [t for t in (_DENSE_TICKS if decades <= 1.5 else _ROUND_TICKS) if low <= t <= high]
        if decades > 2:                       # many decades: powers of ten only
            candidates = [t for t in candidates if f"{t:g}".lstrip("0.").startswith("1")]
        ax.set_yticks(candidates, [f"{t:g}" for t in candidates])
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_ylim(low, high)


def _plain_log_ticks(ax, ds):
    """Log-2 x axis labelled with plain numbers, log y without minor labels: no mathtext,
    which keeps widget redraws fast."""
    ax.set_xticks(ds[::2], [str(d) for d in ds[::2]])
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    if ax.get_yscale() == "log":
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:.0e}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())


@functools.lru_cache(maxsize=8)
def _query_and_keys(width, n_keys, seed):
    """One random query (width,) and n_keys random keys (n_keys, width), drawn once."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(width, generator=gen), torch.randn(n_keys, width, generator=gen)


@functools.lru_cache(maxsize=64)
def _one_query(d_k, scaled, n_keys, seed):
    """The weights (n_keys,) of one query against n_keys keys, and the scores' std over many.

    The query and keys are the first d_k entries of one fixed draw, so moving d_k changes
    their length, not the whole draw: the explorer shows the same query growing. The std is
    the one of softmax_saturation's 256 queries (√ of its score variance), which follows
    √d_k (or stays near 1 when scaled); one query's 16 scores are too few to show that.
    """
    q, K = _query_and_keys(max(d_k, D_K_CHOICES[-1]), n_keys, seed)
    s = K[:, :d_k] @ q[:d_k] / (math.sqrt(d_k) if scaled else 1.0)
    std = math.sqrt(softmax_saturation(d_k, scaled, n_keys)["variance"])
    return std, torch.softmax(s, dim=0).numpy()


class ScalingPlot(LivePlot):
    """The scaling explorer's figure (values: d_k, scaled): one query's weights over n_keys
    keys, and where d_k sits on the max-weight and gradient curves (both scalings).

    The frame (axes, ticks, the curves' limits) is fixed; the bars, their title, the curves
    (the chosen scaling is drawn opaque), the markers and the legend move. The live figure
    takes d_k among D_K_CHOICES (the curves' points, which set its limits).
    """

    # at most 913 px wide: shown at full size beside the file browser; 3.1 in tall: with its controls
    # and caption the explorer fits the notebook's 522 px on a 1366×768 screen (tests/test_browser.py)
    figsize = (9.1, 3.1)
    _CURVES = (("max_prob", "mean largest weight"), ("grad_norm", "mean ‖∂α/∂s‖"))
    _SCALINGS = ((False, VERMILLION, "--", "no scaling"), (True, BLUE, "-", "÷ √d_k"))

    def __init__(self, n_keys=16, seed=0):
        self.n_keys, self.seed = n_keys, seed
        self.ds = list(D_K_CHOICES)
        # the curves do not depend on the values: {(key, scaled): one statistic per d_k}
        self.curves = {(key, sc): [softmax_saturation(d, sc, n_keys)[key] for d in self.ds]
                       for key, _ in self._CURVES for sc, *_ in self._SCALINGS}

    def check(self, d_k, scaled):
        _check_d_k(d_k)

    def build(self, fig, d_k, scaled):
        n_keys, ds = self.n_keys, self.ds
        ax_b, ax_m, ax_g = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.3, 1, 1]})
        self.bars = ax_b.bar(range(n_keys), np.zeros(n_keys))
        ax_b.set_ylim(0, 1.05)
        ax_b.set_xticks(range(0, n_keys, max(1, n_keys // 8)))
        ax_b.set(xlabel="key i", ylabel="weight α_i")
        self.title = ax_b.set_title(" ")
        self.lines, self.markers = {}, {}
        stats = softmax_saturation(d_k, scaled, n_keys)
        for ax, (key, title) in zip((ax_m, ax_g), self._CURVES):
            for sc, c, ls, lab in self._SCALINGS:
                (self.lines[key, sc],) = ax.plot(ds, self.curves[key, sc], ls, color=c, lw=1.2, label=lab)
            # at the chosen d_k: on a curve, so the axis limits are the curves' own
            (self.markers[key],) = ax.plot([d_k], [stats[key]], "o", ms=9)
            ax.set_xscale("log", base=2)
            ax.set(xlabel="d_k", title=title)
            ax.grid(True, alpha=0.3)
        ax_m.set_ylim(0, 1.05)
        ax_g.set_ylim(0, None)
        for ax in (ax_m, ax_g):
            _plain_log_ticks(ax, ds)
            ax.tick_params(labelsize=9)       # "256" and "1024" apart on a 2.4 in axis
        self.legend = ax_m.legend(fontsize=9)      # "best" place: found again at each draw
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.17, top=0.82, wspace=0.32)
        return [*self.bars, self.title, *self.lines.values(), *self.markers.values(), self.legend]

    def update(self, d_k, scaled):
        std, p = _one_query(d_k, bool(scaled), self.n_keys, self.seed)
        label = "q·k / √d_k" if scaled else "q·k (no scaling)"
        color = BLUE if scaled else VERMILLION
        for bar, height in zip(self.bars, p.tolist()):
            bar.set_height(height)
            bar.set_facecolor(color)
        self.title.set_text(f"one query, d_k = {d_k}, {label}\n"
                            f"score std {std:.1f} (256 queries);  max α = {p.max():.2f}")
        stats = softmax_saturation(d_k, scaled, self.n_keys)
        for (key, sc), line in self.lines.items():
            line.set_alpha(1.0 if sc == scaled else 0.35)
        for key, marker in self.markers.items():
            marker.set_data([d_k], [stats[key]])
            marker.set_color(color)
        for handle, (sc, *_) in zip(self.legend.legend_handles, self._SCALINGS):
            handle.set_alpha(1.0 if sc == scaled else 0.35)    # the legend shows the curves' alpha

    def describe(self, d_k, scaled):
        std, p = _one_query(d_k, bool(scaled), self.n_keys, self.seed)
        mine, other = (softmax_saturation(d_k, sc, self.n_keys) for sc in (scaled, not scaled))
        text = (f"One random query against {self.n_keys} keys with d_k = {d_k}, scores "
                f"{'q·k/√d_k' if scaled else 'q·k without scaling'}: largest weight {p.max():.2f} on key "
                f"{int(p.argmax())}. Over 256 random queries: score std {std:.1f}, largest weight "
                f"{_num(mine['max_prob'])} and gradient norm ‖∂α/∂s‖ {_num(mine['grad_norm'])}, against "
                f"{_num(other['max_prob'])} and {_num(other['grad_norm'])} {'without' if scaled else 'with'} scaling.")
        result = (f"Largest weight {p.max():.2f} (score std {std:.1f} over 256 queries); averaged over queries, largest weight "
                  f"{_num(mine['max_prob'])}, gradient norm {_num(mine['grad_norm'])} "
                  f"{'with' if scaled else 'without'} scaling.")
        return dict(text=text, extra_values=(other["max_prob"], other["grad_norm"]), result=result)


def scaling_view(d_k=64, scaled=True, n_keys=16, seed=0):
    """The widget's view for one d_k: one query's weights over n_keys keys, and where
    d_k sits on the max-weight and gradient curves (both scalings)."""
    return ScalingPlot(n_keys, seed).figure(d_k=d_k, scaled=scaled)


def attention_matrix_heatmap(weights, tokens, ax=None, highlight=None, title="attention weights"):
    """Heatmap of a (n_q, n_k) weight matrix; rows are queries, columns keys.

    tokens: the labels (n_k of them; also used for the rows when n_q == n_k).
    highlight: a row index to outline. Returns the Figure.
    """
    w = _as_matrix("weights", weights)
    tokens = _check_labels("tokens", tokens, w.shape[1])
    fig, own_figure = None, ax is None
    if ax is None:
        size = 0.45 * len(tokens) + 1.5
        fig, ax = plt.subplots(figsize=(size + 1, size))
    fig = fig or ax.figure
    im = ax.imshow(w.numpy(), cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(tokens)), tokens, rotation=60, ha="right")
    ax.set_yticks(range(w.shape[0]), tokens if w.shape[0] == len(tokens) else range(w.shape[0]))
    ax.set(xlabel="key (attended to)", ylabel="query (attending)", title=title)
    if highlight is not None:
        if not 0 <= highlight < w.shape[0]:
            raise ValueError(f"highlight must be a row index in [0, {w.shape[0]}), got {highlight}")
        ax.add_patch(plt.Rectangle((-0.5, highlight - 0.5), w.shape[1], 1, fill=False, ec=VERMILLION, lw=2))
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    if own_figure:                # drawn into a caller's axes: the caller describes its figure
        fig.tight_layout()        # rotated token labels: keep them inside the figure
        rows = tokens if w.shape[0] == len(tokens) else [f"query {i}" for i in range(w.shape[0])]
        text, table = _matrix_words(w, rows, tokens, title)
        if highlight is not None:
            text += f" Outlined: query '{rows[highlight]}', {_top(w[highlight].tolist(), tokens)}."
        describe(fig, text, table=table)
    return fig


def _matrix_words(w, rows, cols, title):
    """The words and table of an attention matrix w (n_q, n_k) with its row and column labels."""
    i, j = divmod(int(w.argmax()), w.shape[1])
    sums = "; each row sums to 1" if torch.allclose(w.sum(-1), torch.ones(len(w)), atol=1e-3) else ""
    text = (f"{title.capitalize()}: {w.shape[0]} queries (rows) over {w.shape[1]} keys (columns), from "
            f"{fmt(w.min())} to {fmt(w.max())}{sums}. Strongest: query '{rows[i]}' on key '{cols[j]}', {fmt(w[i, j])}.")
    return text, (["query", *cols], [[r, *v] for r, v in zip(rows, w.tolist())])


class AttentionExplorerPlot(LivePlot):
    """One query's weights softmax(scores[query] / T) as bars, next to the whole matrix
    (values: query, temperature).

    tokens: n labels; scores: (n, n) raw scores (already divided by √d_k if wanted).
    The frame (token labels, colour bar) is fixed; the bars, their numbers and title, the
    heatmap's image and the outline of the query's row move.
    """

    figsize = (9.1, 3.2)      # ≤ 913 px wide, and short enough for the explorer to fit a laptop screen

    def __init__(self, tokens, scores):
        s = _as_matrix("scores", scores)
        self.tokens = _check_labels("tokens", tokens, s.shape[1])
        if s.shape[0] != s.shape[1]:
            raise ValueError(f"scores must be square (self-attention), got shape {tuple(s.shape)}")
        self.scores = s

    def check(self, query, temperature):
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got temperature={temperature}")
        if isinstance(query, bool) or not isinstance(query, int) or not 0 <= query < len(self.tokens):
            raise ValueError(f"query must be a token index in [0, {len(self.tokens)}), got query={query!r}")

    def build(self, fig, query, temperature):
        tokens, n = self.tokens, len(self.tokens)
        ax_b, ax_h = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.8, 1]})
        self.bars = ax_b.bar(range(n), np.zeros(n))
        self.numbers = [ax_b.text(i, 0.015, "", ha="center", fontsize=9) for i in range(n)]
        ax_b.set_xticks(range(n), tokens, rotation=70, ha="right")   # steep enough for 7-letter words side by side
        ax_b.set_ylim(0, 1.08)
        ax_b.set(ylabel="weight")
        self.title = ax_b.set_title(" ")
        attention_matrix_heatmap(torch.zeros(n, n), tokens, ax=ax_h, highlight=query, title="all queries")
        (self.image,), self.outline = ax_h.images, ax_h.patches[-1]
        # A column of the map is ~19 px wide at 10-11 tokens: only upright key labels fit side by side.
        ax_h.tick_params(axis="x", labelrotation=90)
        plt.setp(ax_h.get_xticklabels(), ha="center")
        fig.subplots_adjust(left=0.07, right=0.93, bottom=0.29, top=0.91, wspace=0.2)
        return [*self.bars, *self.numbers, self.title, self.image, self.outline]

    def update(self, query, temperature):
        w = torch.softmax(self.scores / temperature, dim=-1)
        row, best = w[query].tolist(), int(w[query].argmax())
        for i, (bar, number, p) in enumerate(zip(self.bars, self.numbers, row)):
            bar.set_height(p)
            bar.set_facecolor(VERMILLION if i == best else BLUE)
            number.set_y(p + 0.015)
            number.set_text(f"{p:.2f}")
        self.title.set_text(f"query “{self.tokens[query]}” attends to …  (T = {temperature:.2f})")
        self.image.set_data(w.numpy())          # the colour scale stays 0..1
        self.outline.set_y(query - 0.5)

    def describe(self, query, temperature):
        w = torch.as_tensor(np.asarray(self.image.get_array()))
        tok = self.tokens[query]
        text, table = _matrix_words(w, self.tokens, self.tokens, "all queries")
        return dict(text=f"Query '{tok}' at temperature T = {temperature:.2f} attends most to "
                         f"{_top(w[query].tolist(), self.tokens)} (bars; its row is outlined on the right). " + text,
                    table=table)


def attention_explorer_view(tokens, scores, query=0, temperature=1.0):
    """One query's weights softmax(scores[query] / T) as bars, next to the whole matrix.

    tokens: n labels; scores: (n, n) raw scores (already divided by √d_k if wanted).
    """
    return AttentionExplorerPlot(tokens, scores).figure(query=query, temperature=temperature)
