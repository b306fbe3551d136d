"""Figures for lesson 11 (a real LLM on our code): the 2017 and the modern block side by
side, one attention weight over every layer and head, generation, KV-cache timings.

`generation_panel` is drawn by `GenerationPanel`, a live plot: lesson 11's explorer shows
the continuation as it grows, each partial answer redrawing only the bars and the text."""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import FancyBboxPatch

from .describe import describe, first_lines, fmt
from .induction import ink_on
from .palette import BLUE, ORANGE, VERMILLION
from .sampling import BarsOverText, _Remembered

__all__ = ["block_comparison", "head_weight_grid", "generation_panel", "cache_timing_plot"]

# (label, colour) from the bottom of the block to the top; "+" marks a residual add.
_BLOCK_2017 = [("token embedding  E[id]·√d", "#dddddd"), ("+ sinusoidal positions", "#f4d6a0"),
               ("multi-head attention (h = 8)", "#a8c8f0"), ("Add & LayerNorm", "#f7b7b7"),
               ("FFN: W₂ ReLU(W₁x + b₁) + b₂", "#b9e3b0"), ("Add & LayerNorm", "#f7b7b7"),
               ("output: logits = x Eᵀ (the same E, §3.4)", "#dddddd")]
_BLOCK_TODAY = [("token embedding  E[id]", "#dddddd"), ("RMSNorm", "#f7b7b7"),
                ("grouped-query attention\n(9 q / 3 kv heads), RoPE on q, k", "#a8c8f0"), ("+ residual", "#ffffff"),
                ("RMSNorm", "#f7b7b7"), ("SwiGLU: W₂(SiLU(W₁x) ⊙ W₃x)", "#b9e3b0"), ("+ residual", "#ffffff"),
                ("final RMSNorm, output:\nlogits = x Eᵀ (the same E)", "#dddddd")]


_SKIP = "#2e7d32"      # the skip (residual) connections, as in lesson 07's encoder-decoder diagram


def _skip(ax, x, into, start, h=0.8, gap=0.35):
    """The skip connection of a residual block: from the stream entering box `start` (a dot on
    the arrow below it) along the column's right side into box `into`, where it is added."""
    y0 = start * (h + gap) - gap / 2
    y1 = into * (h + gap) + h / 2
    right = x + 4.2 + 0.3
    ax.plot([x + 2.1, right, right], [y0, y0, y1], color=_SKIP, lw=1.3, solid_joinstyle="miter")
    ax.plot([x + 2.1], [y0], "o", ms=3.5, color=_SKIP)
    ax.annotate("", (x + 4.2 + 0.07, y1), (right + 0.01, y1),
                arrowprops=dict(arrowstyle="-|>", color=_SKIP, lw=1.3, shrinkA=0, shrinkB=0))


def _column(ax, x, boxes, title, repeat_from, repeat_to, repeat_label, skips=()):
    h, gap = 0.8, 0.35
    for i, (label, colour) in enumerate(boxes):
        y = i * (h + gap)
        ax.add_patch(FancyBboxPatch((x, y), 4.2, h, boxstyle="round,pad=0.05", fc=colour, ec="#444444", lw=1))
        ax.text(x + 2.1, y + h / 2, label, ha="center", va="center", fontsize=11, linespacing=1.1)
        if i:
            ax.annotate("", (x + 2.1, y - 0.02), (x + 2.1, y - gap + 0.02),
                        arrowprops=dict(arrowstyle="->", color="#444444"))
    y0, y1 = repeat_from * (h + gap) - 0.15, repeat_to * (h + gap) + h + 0.15
    ax.plot([x - 0.25, x - 0.35, x - 0.35, x - 0.25], [y0, y0, y1, y1], color="#444444", lw=1)
    ax.text(x - 0.5, (y0 + y1) / 2, repeat_label, rotation=90, ha="right", va="center", fontsize=11)
    for start, into in skips:
        _skip(ax, x, into, start, h, gap)
    ax.text(x + 2.1, 9.2, title, ha="center", va="bottom", fontsize=12, weight="bold")


def block_comparison():
    """The 2017 paper's block (post-LN, as in lesson 05; without cross-attention) next to a
    Llama block (SmolLM2): what changed, box by box, with the skip connections drawn — post-LN
    adds the skip and then normalizes the stream; pre-norm normalizes only what a sublayer
    reads, and the skip goes around the norm. Returns the Figure."""
    fig, ax = plt.subplots(figsize=(9.0, 6.0))
    columns = [(0.8, _BLOCK_2017, "2017 paper (lesson 05's post-LN)", 2, 5, "× N, post-norm", ((2, 3), (4, 5))),
               (6.1, _BLOCK_TODAY, "today (SmolLM2, Llama)", 1, 6, "× 30, pre-norm", ((1, 3), (4, 6)))]
    for column in columns:
        _column(ax, *column)
    ax.plot([0.8, 1.4], [-0.75, -0.75], color=_SKIP, lw=1.3)
    ax.text(1.55, -0.75, "skip connection: a sublayer's input added to its output, x + F(x);\npost-norm "
                         "normalizes the sum, pre-norm only what F reads", va="center", fontsize=11)
    ax.set_xlim(-0.4, 10.9)
    ax.set_ylim(-1.2, 9.9)
    ax.axis("off")
    fig.tight_layout()
    return describe(fig, "Two transformer blocks side by side, each read from the bottom up; green lines on the "
                         "right of each column are the skip connections. "
                         + " ".join(_column_text(*column[1:]) for column in columns))


def _column_text(boxes, title, repeat_from, repeat_to, repeat_label, skips=()):
    names = [" ".join(label.split()) for label, _ in boxes]
    around = "; ".join(f"a skip connection from the input of '{names[a]}' into '{names[b]}'" for a, b in skips)
    return (f"{title[0].upper() + title[1:]}: " + "; ".join(names[:repeat_from])
            + f"; then, repeated ({repeat_label}): " + "; ".join(names[repeat_from:repeat_to + 1])
            + "; then " + "; ".join(names[repeat_to + 1:]) + "." + (f" Skips: {around}." if around else ""))


def head_weight_grid(weights, title, layer_label="layer", head_label="head", top=3, highlight=None):
    """One attention weight (say "it" -> "animal") for every layer and head, as a heatmap.

    weights: (layers, heads) in [0, 1]. The `top` largest cells are outlined and
    labelled with their value — or, if `highlight` is given, exactly those
    (layer, head) cells (say, the heads the text goes on to discuss). Returns the Figure.
    """
    w = torch.as_tensor(weights, dtype=torch.float32).detach()
    if w.dim() != 2:
        raise ValueError(f"weights must be (layers, heads), got shape {tuple(w.shape)}")
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise ValueError(f"top must be an int >= 0, got {top!r}")
    layers, heads = w.shape
    which = "the highlighted cells"
    if highlight is None:
        highlight = [divmod(i, heads) for i in torch.topk(w.flatten(), min(top, w.numel())).indices.tolist()]
        which = f"the {len(highlight)} largest weights" if len(highlight) > 1 else "the largest weight"
    highlight = [(int(layer), int(head)) for layer, head in highlight]
    for layer, head in highlight:
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(f"highlight ({layer}, {head}) is outside the {layers} × {heads} grid")
    # ≥ 0.45 in per head: a boxed "0.75" at 8 pt fits its cell; every layer labelled (no counting)
    fig, ax = plt.subplots(figsize=(3.0 + 0.45 * heads, 0.9 + 0.17 * layers))
    im = ax.imshow(w.numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(heads))
    ax.set_yticks(range(layers), [str(layer) for layer in range(layers)], fontsize=8 if layers > 16 else 10)
    ax.set_xlabel(head_label)
    ax.set_ylabel(layer_label)
    ax.set_title(title, fontsize=10)
    for layer, head in highlight:
        ax.add_patch(plt.Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, ec=VERMILLION, lw=1.5))
        ax.text(head, layer, f"{w[layer, head]:.2f}", ha="center", va="center", fontsize=8,
                color=ink_on(im.cmap(im.norm(float(w[layer, head])))))
    fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03, label="attention weight")
    fig.tight_layout()
    boxed = ", ".join(f"{layer_label} {layer} {head_label} {head} at {fmt(w[layer, head])}"
                      for layer, head in highlight)
    text = (f"{title}: the weight for each of {layers} {layer_label}s × {heads} {head_label}s, from "
            f"{fmt(w.min())} to {fmt(w.max())}, mean {fmt(w.mean())}."
            + (f" Outlined in orange-red and labelled with their weight, {which}: {boxed}." if highlight else ""))
    rows = [[f"{layer_label} {layer}", *(float(v) for v in w[layer])] for layer in range(layers)]
    table = ([layer_label, *(f"{head_label} {h}" for h in range(heads))], rows) if layers * heads > 20 else None
    return describe(fig, text, table=table, extra_values=[float(w.mean()), *range(max(layers, heads))])


def _piece(text):
    return {"\n": "\\n", " ": "␣", "": "∅"}.get(text, text.replace("\n", "\\n").replace(" ", "␣"))


class GenerationPanel(BarsOverText):
    """Lesson 11's `generation_panel` as a live plot: the pieces, their probabilities and
    the text as values (see `generation_panel` for their meaning).

    Moving: the bars' heights, both titles, the text. New layout: when the pieces under
    the bars change (their labels set the bottom margin): a new prompt, top-k below the
    number of bars, T = 0. A new T or seed, and every partial answer, moves artists only.
    """

    width, extra, bars_ratio = 8.5, 2.2, 1.3     # bars_ratio below ~1.8: see BarsOverText.bars_ratio
    text_base, per_line = 0.4, 0.18
    typical_lines, max_lines = 3, 14      # 3: a one-line prompt and 30 new tokens
    fontsize = 8.5
    rebuild_on = ("labels", "special")

    def __init__(self, width=80):
        self.wrap = width

    def derive(self, prompt, continuation, top_pieces, top_probs, temperature, top_k, special=None, pending=False):
        """-> the values drawn: the bars' heights, labels and special flags (pieces with
        probability 0 left out), the text's lines."""
        if len(top_pieces) != len(top_probs) or not top_pieces:
            raise ValueError(f"got {len(top_pieces)} pieces for {len(top_probs)} probabilities; need the same, ≥ 1")
        special = [False] * len(top_pieces) if special is None else [bool(b) for b in special]
        if len(special) != len(top_pieces):
            raise ValueError(f"got {len(special)} special flags for {len(top_pieces)} pieces; need one each")
        kept = [i for i, p in enumerate(top_probs) if float(p) > 0]
        if not kept:
            raise ValueError("every probability is 0: nothing to draw")
        lines = []
        for para in (prompt + continuation + (" …" if pending else "")).split("\n"):
            lines.extend(textwrap.wrap(para, self.wrap) or [""])
        return dict(heights=tuple(float(top_probs[i]) for i in kept), special=tuple(special[i] for i in kept),
                    pieces=tuple(str(top_pieces[i]) for i in kept),
                    labels=tuple(_piece(top_pieces[i]) + (" (special)" if special[i] else "") for i in kept),
                    temperature=temperature, top_k=top_k, pending=pending, lines=tuple(lines[:self.max_lines]))

    def build_bars(self, ax, heights, special, labels, **values):
        n = len(heights)
        self.bars = ax.bar(range(n), heights, color=[ORANGE if s else BLUE for s in special],
                           hatch=["//" if s else "" for s in special], edgecolor="white", lw=0)
        ax.set_xticks(range(n), labels, rotation=45, ha="right", fontsize=8)
        ax.set_xlim(-0.6, max(n, 5) - 0.4)   # one bar stays a bar, not a wall
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("probability")
        self.bars_title = ax.set_title(self._bars_title(n, **values), fontsize=10)
        return [*self.bars, _Remembered(self.bars_title)]

    def update_bars(self, heights, **values):
        for bar, h in zip(self.bars, heights):
            bar.set_height(h)
        self.bars_title.set_text(self._bars_title(len(heights), **values))

    def describe(self, heights, special, pieces, temperature, top_k, pending, lines, **_):
        mode = "greedy (T = 0)" if temperature == 0 else f"temperature T = {temperature:.2f}"
        bars = ", ".join(f"{p!r}{' (special)' if s else ''} {fmt(h)}" for p, s, h in zip(pieces, special, heights))
        so_far = "so far, still generating" if pending else "in full"
        top = max(range(len(heights)), key=lambda i: heights[i]) if len(heights) else None
        first = f"; first new token {pieces[top]!r} {fmt(heights[top])}" if top is not None else ""
        result = f"Text{' so far' if pending else ''}: “{first_lines(' '.join(lines))}”{first}."
        return dict(result=result, text=(
                f"The {len(heights)} most likely first new tokens, {mode}, top-k = "
                f"{'all' if top_k is None else top_k}, with their probability: {bars}. "
                f"Prompt and continuation {so_far}: \"{' '.join(' '.join(lines).split())}\""))

    @staticmethod
    def _bars_title(n, temperature, top_k, **_):
        mode = "greedy (T = 0)" if temperature == 0 else f"T = {temperature:.2f}"
        return (f"first new token — {mode}, top-k = {'all' if top_k is None else top_k}: "
                f"the {n} most likely with probability > 0")

    @staticmethod
    def text_title(pending, widest=False, **_):
        return "prompt + continuation" + (" (generating …)" if pending or widest else "")


def generation_panel(prompt, continuation, top_pieces, top_probs, temperature, top_k, width=80, special=None,
                     pending=False):
    """Generation seen from both ends: the distribution of the first new token (its most
    likely pieces, top) and the prompt with its continuation (bottom).

    top_pieces: the text of the most likely next tokens; top_probs: their probabilities
    (after temperature and top-k). Only pieces with a probability > 0 get a bar (at T = 0,
    one). special: one bool per piece, True for a tokenizer's special token (say
    `<|endoftext|>`), drawn in another colour and labelled "(special)". Spaces are drawn
    as ␣. pending: the continuation is still growing (drawn with a trailing " …").
    Returns the Figure.
    """
    return GenerationPanel(width).figure(prompt=prompt, continuation=continuation, top_pieces=top_pieces,
                                         top_probs=top_probs, temperature=temperature, top_k=top_k,
                                         special=special, pending=pending)


def cache_timing_plot(with_cache, without_cache):
    """Time per new token vs its position (left) and the total time to reach a position (right).

    with_cache, without_cache: (positions, seconds) — the steps that were timed (positions
    increasing). A curve with gaps (say, only every 16th step timed without the cache) is
    interpolated between the timed steps for the running total, drawn dashed. Returns the Figure.
    """
    fig, (ax, ax_sum) = plt.subplots(1, 2, figsize=(9.0, 3.8))
    said, totals, medians = [], [], []
    # The running totals start together, at the later of the two first timed positions: a total
    # that had counted a few steps more would start above the other one and hide the comparison.
    start = max(int(np.asarray(with_cache[0])[0]), int(np.asarray(without_cache[0])[0]))
    series = ((with_cache, "with KV cache", BLUE, "o", "-"),
              (without_cache, "without cache (recomputes all)", VERMILLION, "s", "--"))
    for (pos, sec), label, colour, marker, style in series:
        pos, ms = np.asarray(pos), 1e3 * np.asarray(sec, dtype=float)
        if pos.shape != ms.shape or pos.ndim != 1 or len(pos) < 2 or np.any(np.diff(pos) <= 0):
            raise ValueError(f"{label}: need ≥ 2 increasing positions with one timing each, "
                             f"got {pos.shape} positions and {ms.shape} timings")
        ax.plot(pos, ms, marker=marker, ls="none" if len(pos) > 40 else "-", ms=3 if len(pos) > 40 else 4,
                color=colour, label=label)
        every = np.arange(max(pos[0], start), pos[-1] + 1)
        gaps = not np.isin(every, pos).all()
        total = np.cumsum(np.interp(every, pos, ms)) / 1e3
        # Log–log: a total that grows like n is a line of slope 1, like n² one of slope 2, and a
        # total of seconds stays visible beside one of minutes (on a linear axis it lay on the floor).
        ax_sum.loglog(every, total, style, color=colour, lw=2,
                      label=label.split(" (")[0] + (" (interpolated)" if gaps else ""))
        medians.append(float(np.median(ms)))
        said.append(f"{label.split(' (')[0]}: from {_ms(ms[0])} at position {pos[0]} to {_ms(ms[-1])} at "
                    f"position {pos[-1]}, median {_ms(medians[-1])}")
        totals.append((every, total, gaps))
    ax.set(xlabel="position of the new token", ylabel="ms for this token", title="one step", ylim=(0, None))
    ax_sum.set(xlabel="position reached (log scale)", ylabel="seconds in total (log scale)",
               title=f"running total from position {start} (log–log)")
    ax.legend(fontsize=9, loc="upper left")          # the steps without the cache rise to the right
    ax_sum.legend(fontsize=9, loc="upper left")
    fig.tight_layout()
    return describe(fig, "Time per new token against its position; " + "; ".join(said) + ". "
                         + _totals_text(totals), extra_values=medians)


def _num(x):
    """2 decimals; 2 significant digits below 0.1, none from 100 on."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}" if abs(x) >= 0.1 else f"{x:.2g}"


def _ms(x):
    return f"{_num(x)} ms"


def _totals_text(totals):
    """The running totals at the last position both curves reach (interpolated where timed with gaps)."""
    last = min(every[-1] for every, _, _ in totals)
    (e1, t1, gaps1), (e2, t2, gaps2) = totals
    if last < max(e1[0], e2[0]):        # no position in common: each curve's own end
        return (f"Running total: {_num(t1[-1])} s by position {e1[-1]} with the cache, "
                f"{_num(t2[-1])} s by position {e2[-1]} without.")
    a, b = t1[e1 == last][0], t2[e2 == last][0]
    return (f"Running total from position {max(e1[0], e2[0])} (log–log axes) to position {last}: "
            f"{_num(a)} s with the cache, {_num(b)} s without"
            + (" (interpolated between the timed steps)." if gaps1 or gaps2 else "."))
