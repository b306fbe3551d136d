"""Figures for lesson 08: training curves, label smoothing, the schedule, and what the
trained translator attends to."""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.layout_engine import ConstrainedLayoutEngine

from .describe import describe, fmt
from .encoder_decoder import _heatmap_words, _row_peaks, _weights_table, attention_heatmap
from .live import LivePlot
from .palette import BLACK, BLUE, CYCLE, GREEN, GREY, MARKERS, ORANGE, SKY, VERMILLION

__all__ = [
    "label_smoothing_bars",
    "warmup_schedule_plot",
    "loss_curve",
    "cross_attention_grid",
    "translation_figure",
    "accuracy_by_length",
]


def _check_prob(name, p):
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {p!r}")


class LabelSmoothingBars(LivePlot):
    """The training target for one position, one-hot vs label-smoothed, and the loss
    floor H(q) against ε (lesson 08's explorer: ε moves).

    vocab_size: V; right: the right token's id; shown: how many tokens the bars show.
    Slider value: smoothing (ε). What moves: the smoothed bars, their two value labels and
    the legend (it names ε, and lies over the bars), ε's line, point and value on the
    right. The one-hot bars and the floor curve (for 101 values of ε) are computed once.
    The layout (constrained) follows ε: near ε = 0.5 the value on the right reaches past
    its panel, which then narrows. It is computed here, once per ε, from where a new
    figure's panels start (the result depends a little on the start), not at each draw;
    the frame is drawn again only when the panels moved.
    """

    figsize = (9, 3.6)     # 9 in wide: a widget's figure must fit the notebook column (1366×768 screen) uncut

    def __init__(self, vocab_size=35, right=4, shown=12):
        from ..experiments.translator import smoothed_targets

        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
            raise ValueError(f"vocab_size must be an int >= 2, got {vocab_size!r}")
        if not 0 <= right < vocab_size:
            raise ValueError(f"right must be a token id in [0, {vocab_size}), got {right}")
        self.vocab_size, self.right, self.shown = vocab_size, right, min(shown, vocab_size)
        self.label = torch.tensor(right)
        self.targets = lambda smoothing: smoothed_targets(self.label, vocab_size, smoothing)   # (V,)
        self.other = next(i for i in range(self.shown) if i != right)
        self.eps = np.linspace(0, 0.5, 101)
        self.floor = [_entropy(self.targets(float(e))) for e in self.eps]
        self._layouts = {}              # ε -> where constrained layout puts the panels

    def check(self, smoothing):
        _check_prob("smoothing", smoothing)

    def build(self, fig, smoothing):
        a, b = self.axes = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
        self._start = [(ax.get_position(original=True).frozen(), ax.get_position().frozen()) for ax in self.axes]
        shown, right = self.shown, self.right
        x = np.arange(shown)
        a.bar(x - 0.2, self.targets(0.0)[:shown].numpy(), 0.4, label="one-hot (ε = 0): 0 elsewhere", color=GREY)
        self.bars = a.bar(x + 0.2, self.targets(smoothing)[:shown].numpy(), 0.4, label="smoothed", color=BLUE)
        a.set_xticks(x, [str(i) for i in x])
        # Log scale: the other tokens' share (ε/(V−1) ≈ 0.003 at ε = 0.1) is invisible on a linear axis.
        a.set_yscale("log")
        a.set(xlabel=f"token id (first {shown} of V = {self.vocab_size})", ylabel="q(v), log scale",
              ylim=(1e-4, 3), title=f"target q for right token {right} (log scale)")
        self.right_value = a.text(right + 0.3, 1.0, "", fontsize=9)
        self.other_value = a.text(self.other + 0.2, 1.0, "", fontsize=9, ha="center", color=BLUE)
        self.legend = a.legend(fontsize=9, loc="center right")      # between the 0.003 bars and the tall one
        b.plot(self.eps, self.floor, color=BLUE)
        self.line = b.axvline(smoothing, color=VERMILLION, ls=":")
        (self.point,) = b.plot([smoothing], [0.0], "o", color=VERMILLION)
        self.value = b.text(smoothing + 0.01, 0.0, "", va="top", fontsize=9, color=BLACK)
        b.set(xlabel="smoothing ε", ylabel="loss floor H(q) (nats)", title="lowest reachable loss")
        # The legend lies over the bars: drawn after them.
        return [*self.bars, self.right_value, self.other_value, self.legend, self.line, self.point, self.value]

    def update(self, smoothing):
        q = self.targets(smoothing)
        for bar, v in zip(self.bars, q[:self.shown].tolist()):
            bar.set_height(v)
        self.legend.get_texts()[1].set_text(f"smoothed (ε = {smoothing:g})")
        top = float(q[self.right])
        self.right_value.set_y(top * 1.15)
        self.right_value.set_text(f"{top:.3f}")
        low = float(q[self.other])
        self.other_value.set_visible(low > 0)       # ε = 0: no share to name
        self.other_value.set_y(low * 1.3)
        self.other_value.set_text(f"{low:.4f}")
        here = _entropy(q)
        self.line.set_xdata([smoothing, smoothing])
        self.point.set_data([smoothing], [here])
        self.value.set_position((smoothing + 0.01, here))
        self.value.set_text(f" {here:.3f}")
        b = self.axes[1]
        b.relim()                       # ε's line and point count in the limits, as when first drawn
        b.autoscale_view()
        self._lay_out(smoothing)
        frame = ([box.bounds for pair in self._layouts[smoothing] for box in pair], b.get_xlim(), b.get_ylim())
        if frame != getattr(self, "_frame", None):
            self._frame = frame
            self.redraw_frame()     # the panels moved: the kept frame is stale

    def describe(self, smoothing):
        q = self.targets(smoothing)
        right, low, here = float(q[self.right]), float(q[self.other]), _entropy(q)
        rest = f"{low:.2g} on each other token" if low > 0 else "0 elsewhere"
        result = (f"At ε = {smoothing:g} the target puts {fmt(right)} on the right token and {rest}; "
                  f"lowest reachable loss H(q) {fmt(here)} nats.")
        return dict(result=result, text=(
                f"Training target q for one position, right token {self.right} of V = {self.vocab_size} (log "
                f"scale): one-hot puts 1 on it and 0 elsewhere; smoothed with ε = {smoothing:g} it puts "
                f"{fmt(right)} on it and {rest}. Right: the lowest reachable loss H(q) rises from {fmt(self.floor[0])} "
                f"at ε = 0 to {fmt(self.floor[-1])} at ε = 0.5; at ε = {smoothing:g} it is {fmt(here)} nats."))

    def _lay_out(self, smoothing):
        """Place the panels as constrained layout does for a new figure with this ε."""
        if smoothing not in self._layouts:
            for ax, (original, active) in zip(self.axes, self._start):
                ax._set_position(original, which="original")
                ax._set_position(active, which="active")
            ConstrainedLayoutEngine().execute(self.axes[0].figure)
            self._layouts[smoothing] = [(ax.get_position(original=True).frozen(), ax.get_position().frozen())
                                        for ax in self.axes]
        for ax, (original, active) in zip(self.axes, self._layouts[smoothing]):
            ax._set_position(original, which="original")     # not set_position: that takes the
            ax._set_position(active, which="active")         # Axes out of get_tightbbox


def label_smoothing_bars(vocab_size=35, smoothing=0.1, right=4, shown=12):
    """The training target for one position: one-hot vs label-smoothed.

    Left: the two target distributions over the first `shown` tokens. Right: the
    lowest loss a perfect model can reach, H(q) = −Σ q log q, against ε.
    Returns the Figure.
    """
    return LabelSmoothingBars(vocab_size, right, shown).figure(smoothing=smoothing)


def _entropy(q):
    q = q[q > 0]
    return float(-(q * q.log()).sum()) + 0.0      # + 0.0: a one-hot q gives 0, not -0


def warmup_schedule_plot(warmup=50, total=300, peak_lr=3e-3):
    """Learning rate per step: linear warm-up, then cosine decay to 0. Returns the Figure."""
    from ..nn.training import warmup_cosine

    for name, v in (("warmup", warmup), ("total", total)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if warmup >= total:
        raise ValueError(f"warmup ({warmup}) must be smaller than total ({total})")
    if not peak_lr > 0:
        raise ValueError(f"peak_lr must be > 0, got {peak_lr}")
    steps = np.arange(total)
    lr = np.array([peak_lr * warmup_cosine(int(s), warmup, total, min_ratio=0.0) for s in steps])
    fig, ax = plt.subplots(figsize=(7, 2.8))
    ax.plot(steps, lr, color=BLUE)
    ax.axvspan(0, warmup, color=ORANGE, alpha=0.15, label=f"warm-up ({warmup} steps)")
    ax.set(xlabel="training step", ylabel="learning rate", title="learning-rate schedule", xlim=(0, total))
    ax.legend(fontsize=8)
    fig.tight_layout()
    top = int(np.argmax(lr))
    return describe(fig, f"Learning rate per training step, 0 to {total - 1}: linear warm-up over the first "
                         f"{warmup} steps to the peak {lr[top]:.2g} at step {top}, then cosine decay to "
                         f"{_end_lr(lr[-1], lr[top])} at step {total - 1}.")


def _end_lr(end, peak):
    """The last learning rate in words: "nearly 0" below 0.1 % of the peak (a value like
    1.2e-07 would read as rounding noise, and is one on another machine)."""
    return "nearly 0" if end < 1e-3 * peak else f"{end:.2g}"


def _smooth(y, k):
    if k <= 1 or len(y) < k:
        return np.asarray(y, dtype=float)
    kernel = np.ones(k) / k
    head = [np.mean(y[: i + 1]) for i in range(k - 1)]
    return np.concatenate([head, np.convolve(y, kernel, mode="valid")])


def loss_curve(history, resumed_at=None, floor=None, smooth=10, log=True):
    """Training loss per step (raw, and a running mean over `smooth` steps).

    history: {"step": [...], "loss": [...]} (a TrainState's history).
    resumed_at: step where training was resumed from a checkpoint (a vertical line).
    floor: the label-smoothing loss floor (a horizontal line). Returns the Figure.
    """
    if not isinstance(history, dict) or "loss" not in history or "step" not in history:
        raise ValueError("history must be a dict with 'step' and 'loss' lists")
    steps, loss = np.asarray(history["step"]), np.asarray(history["loss"], dtype=float)
    if len(steps) != len(loss) or len(loss) == 0:
        raise ValueError("history['step'] and history['loss'] must be non-empty and of equal length")
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    mean = _smooth(loss, smooth)
    ax.plot(steps, loss, color=SKY, alpha=0.7, lw=0.8, label="loss per step")      # light and thin: the
    ax.plot(steps, mean, color=BLUE, lw=1.8, label=f"running mean ({smooth} steps)")  # mean stands out
    if resumed_at is not None:
        ax.axvline(resumed_at, color=GREEN, ls="--", label=f"resumed from checkpoint (step {resumed_at})")
    if floor is not None:
        ax.axhline(floor, color=VERMILLION, ls=":", label=f"label-smoothing floor {floor:.3f}")
    if log:  # log scale, plain tick labels
        from matplotlib.ticker import NullFormatter, ScalarFormatter

        ax.set_yscale("log")
        lo, hi = min(loss.min(), floor if floor is not None else np.inf) * 0.9, loss.max() * 1.1
        ticks = []   # each ≥ 7.5 % of the axis (~16 px) above the last: 0.7 and 0.8 once overlapped
        for t in (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 1.5, 2, 3, 4, 6, 8):
            if lo <= t <= hi and (not ticks or np.log(t / ticks[-1]) >= 0.075 * np.log(hi / lo)):
                ticks.append(t)
        ax.set_yticks(ticks)
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="training step", ylabel="cross-entropy (nats, log scale)" if log else "cross-entropy (nats)",
           title="training loss" + (" (log scale)" if log else ""))
    ax.legend(fontsize=9)
    fig.tight_layout()
    low = int(np.argmin(mean))
    text = (f"Training loss (cross-entropy in nats{', log scale' if log else ''}) over steps {steps[0]} to "
            f"{steps[-1]}: per step from {fmt(loss[0])} to {fmt(loss[-1])}; the running mean over {smooth} steps "
            f"ends at {fmt(mean[-1])}, lowest {fmt(mean[low])} at step {steps[low]}.")
    if resumed_at is not None:
        text += f" Training resumed from a checkpoint at step {resumed_at}."
    if floor is not None:
        gap = float(mean[-1] - floor)
        text += f" The label-smoothing floor is {fmt(floor)}: the running mean ends {fmt(abs(gap))} " + \
            ("above" if gap >= 0 else "below") + " it."
        return describe(fig, text, extra_values=[abs(gap)])
    return describe(fig, text)


def _labels_check(cross, src_tokens, out_tokens):
    if not cross:
        raise ValueError("cross must be a non-empty list of per-layer weights (h, n_tgt, n_src)")
    for i, w in enumerate(cross):
        if w.dim() != 3:
            raise ValueError(f"cross[{i}] must be (h, n_tgt, n_src), got shape {tuple(w.shape)}")
        if w.shape[1:] != (len(out_tokens), len(src_tokens)):
            raise ValueError(f"cross[{i}] has shape {tuple(w.shape)} but there are {len(out_tokens)} "
                             f"output and {len(src_tokens)} source tokens")


def cross_attention_grid(cross, src_tokens, out_tokens, title=None):
    """One heatmap per (layer, head), plus each layer's mean over heads.

    cross: list over layers of (h, n_tgt, n_src) tensors. Row i is the query of the
    decoder position that *predicts* out_tokens[i]. Returns the Figure.
    """
    _labels_check(cross, src_tokens, out_tokens)
    n_layers, h = len(cross), cross[0].shape[0]
    # 8.9 in wide (+ margins ≤ 913 px): shown unscaled in the notebook column, so the 8 pt labels stay 8 pt.
    fig, axes = plt.subplots(n_layers, h + 1, figsize=(8.9, 0.17 * len(out_tokens) * n_layers + 2.6),
                             squeeze=False, layout="constrained")
    for layer, w in enumerate(cross):
        for j in range(h + 1):
            ax = axes[layer, j]
            m = w.mean(0) if j == h else w[j]
            im = ax.imshow(m.numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
            ax.set_xticks(range(len(src_tokens)), src_tokens if layer == n_layers - 1 else [""] * len(src_tokens),
                          rotation=90, fontsize=8)
            ax.set_yticks(range(len(out_tokens)), out_tokens if j == 0 else [""] * len(out_tokens), fontsize=8)
            ax.set_title(f"L{layer} " + ("mean" if j == h else f"head {j}"), fontsize=10)
    fig.colorbar(im, ax=axes, fraction=0.03, pad=0.02, label="attention weight")
    fig.suptitle(title or "rows: German piece being predicted · columns: English words", fontsize=10)
    maps = [(f"layer {layer} " + ("mean" if j == h else f"head {j}"), (w.mean(0) if j == h else w[j]).numpy())
            for layer, w in enumerate(cross) for j in range(h + 1)]
    name, top = max(((n, m) for n, m in maps if "mean" not in n), key=lambda nm: nm[1].max())
    i, k = np.unravel_index(top.argmax(), top.shape)
    text = (f"Cross-attention of {len(out_tokens)} German pieces (rows, the piece being predicted) over "
            f"{len(src_tokens)} English words (columns), in {n_layers} layers × {h} heads and each layer's mean "
            f"over heads, shaded from 0 to 1. Strongest weight: {name}, '{out_tokens[i]}' → '{src_tokens[k]}' "
            f"{fmt(top[i, k])}. In the {maps[-1][0]}, {_row_peaks(maps[-1][1], out_tokens, src_tokens, most=4)}.")
    rows = [r for n, m in maps for r in _weights_table(m, out_tokens, src_tokens, prefix=f"{n}: ")[1]]
    return describe(fig, text, table=(["map: German piece"] + list(map(str, src_tokens)), rows))


def translation_figure(model, data, text="twenty-one", layer=-1, head=-1):
    """Translate `text` and show its cross-attention: layer/head -1 = mean over them.

    Raises ValueError (with a message for the learner) for unknown words or numbers
    out of range. Returns the Figure.
    """
    from ..experiments.translator_eval import translate

    result = translate(model, data, text)
    cross = result["cross"]
    if not -1 <= layer < len(cross):
        raise ValueError(f"layer must be -1 (mean) or 0 … {len(cross) - 1}, got {layer}")
    h = cross[0].shape[0]
    if not -1 <= head < h:
        raise ValueError(f"head must be -1 (mean) or 0 … {h - 1}, got {head}")
    w = torch.stack(cross) if layer == -1 else cross[layer][None]  # (layers, h, n_tgt, n_src)
    w = w.mean(1) if head == -1 else w[:, head]
    w = w.mean(0)
    out_tokens = result["pieces"] + ["<eos>"]
    where = ("mean over layers" if layer == -1 else f"layer {layer}") + ", " + \
        ("mean over heads" if head == -1 else f"head {head}")
    width = min(9.0, max(4.5, 0.6 * len(result["source"]) + 2.5))   # a widget's figure: fits the column
    wrap = max(30, int(width * 11))                                     # characters per title line
    title = "\n".join(textwrap.wrap(" ".join(result["source"]), wrap) +
                      textwrap.wrap(f"→ {result['german']}   ({where})", wrap))
    xlabel, ylabel = "English words (keys, values)", "German piece being predicted"
    fig = attention_heatmap(w, out_tokens, result["source"], xlabel=xlabel, ylabel=ylabel, title=title)
    # Rows of 0.24 in (a weight printed in each): the map of a 6-digit number and the widget's
    # controls fit a laptop screen.
    fig.set_size_inches(width, max(3.0, 0.24 * len(out_tokens) + 1.5 + 0.2 * title.count("\n")))
    fig.tight_layout()
    what = f"Cross-attention while translating '{' '.join(result['source'])}' into '{result['german']}' ({where})"
    return describe(fig, **_heatmap_words(w.numpy(), out_tokens, result["source"], what, ylabel, xlabel))


_HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo")   # a second model's bars differ by more than colour


def accuracy_by_length(results, title="mistakes by number of digits"):
    """Grouped bars: per digit count, the share of numbers translated wrong, one bar per model.

    When exact match is 98-100 % everywhere, bars of accuracy on a 0-100 % axis all look
    the same; the mistakes, on an axis that fits them, show where the model is weak. Each
    bar is labelled "k of N". Digit counts with no numbers in any result are named below
    the axis rather than left out silently.

    results: {name: (numbers, correct)} with numbers and correct (bool) arrays.
    Returns the Figure.
    """
    if not isinstance(results, dict) or not results:
        raise ValueError("results must be a non-empty dict {name: (numbers, correct)}")
    parsed = {}
    for name, (numbers, correct) in results.items():
        numbers, correct = np.asarray(numbers), np.asarray(correct, dtype=bool)
        if numbers.shape != correct.shape:
            raise ValueError(f"results[{name!r}]: numbers and correct must have the same length")
        parsed[name] = (np.array([len(str(int(n))) for n in numbers]), correct)
    lengths = sorted(set().union(*(set(d.tolist()) for d, _ in parsed.values())))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / len(parsed)
    top = 0.0
    said, cells, totals, handles, labels = [], [], [], [], []
    for k, (name, (digits, correct)) in enumerate(parsed.items()):
        total = [int((digits == d).sum()) for d in lengths]
        wrong = [int((~correct[digits == d]).sum()) for d in lengths]
        rate = [w / t if t else 0.0 for w, t in zip(wrong, total)]
        top = max(top, *rate)
        x = np.arange(len(lengths)) + (k - (len(parsed) - 1) / 2) * width
        colour = CYCLE[k % len(CYCLE)]
        bars = ax.bar(x, rate, width, color=colour, hatch=_HATCHES[k % len(_HATCHES)], edgecolor="white", lw=0)
        # A marker on top of every bar, one shape per model: a model with no mistakes has bars
        # of height 0, which draw nothing; its markers on the axis still show where they are.
        dots, = ax.plot(x, rate, ls="none", marker=MARKERS[k % len(MARKERS)], ms=7, color=colour, mec="white",
                        mew=0.8, clip_on=False, zorder=3)
        handles.append((bars, dots))
        labels.append(name if sum(wrong) else f"{name}: none wrong (markers on the axis)")
        worst = int(np.argmax(rate))
        totals += [sum(wrong), sum(total)]
        said.append(f"{name} {sum(wrong)} of {sum(total)}" + (
            f", the most at {lengths[worst]} digits: {wrong[worst]} of {total[worst]} ({100 * rate[worst]:.1f}%)"
            if sum(wrong) else ", none wrong at any length: its bars have height 0, its markers lie on the axis"))
        cells.append([f"{w} of {t} ({100 * r:.1f}%)" for w, t, r in zip(wrong, total, rate)])
        for b, w, t in zip(bars, wrong, total):
            ax.annotate(f"{w} of {t}", (b.get_x() + b.get_width() / 2, b.get_height()), xytext=(0, 6),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(lengths)), [f"{d} digits" for d in lengths])
    from matplotlib.ticker import PercentFormatter

    ax.set(ylim=(0, max(0.02, top * 1.3)), ylabel="translated wrong", title=title)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
    missing = [d for d in range(1, max(lengths) + 1) if d not in lengths]
    note = f"   (no numbers with {', '.join(map(str, missing))} digit{'s' if missing != [1] else ''} here)" if missing else ""
    from matplotlib.legend_handler import HandlerTuple

    ax.legend(handles, labels, fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=len(parsed),
              frameon=False, title=("exact match = 100 % minus the bar" + note), title_fontsize=8,
              handler_map={tuple: HandlerTuple(ndivide=None, pad=0.6)}, handlelength=3.2)
    fig.tight_layout()
    text = f"Held-out numbers translated wrong, by number of digits ({', '.join(map(str, lengths))}): "
    text += "; ".join(said) + "." + note
    rows = [[f"{d} digits"] + [c[i] for c in cells] for i, d in enumerate(lengths)]
    return describe(fig, text, table=(["digits"] + [f"{n}: wrong" for n in parsed], rows), extra_values=totals)
