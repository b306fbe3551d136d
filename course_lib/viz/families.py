"""Figures for lesson 09: transformer families and a pretrained encoder's heads."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize, to_rgb
from matplotlib.patches import Patch
from matplotlib.transforms import offset_copy

from .describe import describe, fmt
from .encoder_decoder import _row_peaks, _weights_table
from .live import LivePlot
from .palette import BLUE, GREEN, ORANGE, PURPLE, SKY, VERMILLION

__all__ = [
    "family_attention_maps",
    "it_attention_grid",
    "head_pattern_grid",
    "similarity_heatmap",
    "draw_attention",
]

# one colour per pattern label of course_lib.experiments.head_patterns (Okabe-Ito), and a
# symbol printed in each cell: the pattern is read without telling colours apart
PATTERN_COLORS = {
    "previous": BLUE, "next": SKY, "self": PURPLE, "[CLS]": VERMILLION,
    "[SEP]": ORANGE, "broad": GREEN, "mixed": "#DDDDDD",
}
PATTERN_SYMBOLS = {"previous": "←", "next": "→", "self": "○", "[CLS]": "C", "[SEP]": "S", "broad": "≈",
                   "mixed": "–"}


def _matrix(name, w):
    w = torch.as_tensor(w).detach().float()
    if w.dim() != 2:
        raise ValueError(f"{name} must be a 2-D attention matrix (n_q, n_k), got shape {tuple(w.shape)}")
    return w


def draw_attention(ax, weights, q_tokens=None, k_tokens=None, title=None, vmax=None, cmap="Blues"):
    """Draw one attention matrix on `ax`: rows = queries, columns = keys. Returns the image."""
    w = _matrix("weights", weights)
    n_q, n_k = w.shape
    _check_tokens(n_q, n_k, q_tokens, k_tokens)
    im = ax.imshow(w.numpy(), cmap=cmap, vmin=0, vmax=vmax if vmax is not None else max(float(w.max()), 1e-6))
    size = 9 if max(n_q, n_k) <= 16 else 8            # token labels: as large as the cells allow, ≥ 8 pt
    if q_tokens is not None:
        ax.set_yticks(range(n_q), [str(t) for t in q_tokens], fontsize=size)
    if k_tokens is not None:
        ax.set_xticks(range(n_k), [str(t) for t in k_tokens], fontsize=size, rotation=90)
    ax.tick_params(labelsize=size)
    ax.set_xlabel("key (attended to)", fontsize=9)
    ax.set_ylabel("query (attending)", fontsize=9)
    if title:
        ax.set_title(title, fontsize=10)
    return im


def _check_tokens(n_q, n_k, q_tokens, k_tokens):
    """Raise ValueError unless each given label list fits its side of an (n_q, n_k) matrix."""
    for name, toks, n in (("q_tokens", q_tokens, n_q), ("k_tokens", k_tokens, n_k)):
        if toks is not None and len(toks) != n:
            raise ValueError(f"{name} has {len(toks)} labels for {n} positions")


def _short(token, most=16):
    """`token`, cut to `most` characters (an ellipsis ends a cut one)."""
    return token if len(token) <= most else token[:most - 1] + "…"


def _names(tokens, n, side):
    """The labels a description uses for n positions: the drawn tokens, or q0, q1, … (k0, …)."""
    return [str(t) for t in tokens] if tokens is not None else [f"{side}{i}" for i in range(n)]


def _panel_words(w, q, k):
    """"largest weight 0.87 ('3' → '1'), 48% of its weight on keys after the query" (and that share)."""
    w = np.asarray(w, dtype=float)
    i, j = np.unravel_index(w.argmax(), w.shape)
    words = f"largest weight {fmt(w[i, j])} ('{q[i]}' → '{k[j]}')"
    if w.shape[0] != w.shape[1] or not w.sum() > 0:
        return words, []
    later = float(np.triu(w, 1).sum() / w.sum())        # keys after the query: what a causal mask hides
    return words + f", {100 * later:.0f}% of its weight on keys after the query", [later]


def _own_maximum_bar(fig, axes, cmap="Blues", beside=False):
    """The colour bar under `axes` (beside them with `beside=True`) for panels that each
    run from 0 to their own maximum.

    Drawn from a fixed 0..1 scale, not from a panel's image: it looks the same for any
    weights (its ends are labelled, not numbered), so a live plot's bar never changes.
    """
    if beside:      # one panel: the width a laptop's notebook column has to spare, not its height
        bar = fig.colorbar(ScalarMappable(Normalize(0, 1), cmap=cmap), ax=axes, orientation="vertical",
                           fraction=0.05, pad=0.03, aspect=30, ticks=[0, 1])
        bar.ax.set_yticklabels(["0", ""])     # the top's number is the panel's: `max_label` writes it
        bar.set_label("attention weight: white = 0,\ndarkest = the panel's own maximum", fontsize=9)
        return bar
    bar = fig.colorbar(ScalarMappable(Normalize(0, 1), cmap=cmap), ax=axes, orientation="horizontal",
                       fraction=0.04, pad=0.02, aspect=50, ticks=[0, 1])
    bar.ax.set_xticklabels(["0", "the panel's largest weight"])
    # The label is centred under the bar, and constrained layout makes room for its height
    # only: on one line (~4.8 in at 9 pt) it ran past a narrow figure's left and right
    # edges (lesson 09's explorer, 4.6 in). Two lines (~3.6 in) fit a one-panel figure.
    sep = "\n" if fig.get_figwidth() < 6.5 else " "
    bar.set_label(f"attention weight{sep}(each panel: white = 0, darkest = its own maximum)", fontsize=9)
    return bar


def family_attention_maps(panels, ncols=None, figsize=None):
    """Several attention matrices, two per row by default (readable in the notebook column).

    panels: list of dicts with "weights" (n_q, n_k) and optional "q_tokens",
    "k_tokens", "title". Every panel uses one colour scale, from 0 (white) to the largest
    weight of all panels (darkest), with one numbered colour bar under the grid: panels
    are compared by eye, so a head that spreads its weight looks pale beside one that
    picks a key (scaled per panel, a broad head's largest cell looked as dominant as a
    sharp head's). An explicit `figsize` keeps the old default of one row (ncols =
    number of panels). Returns the Figure.
    """
    if not isinstance(panels, (list, tuple)) or not panels:
        raise ValueError("panels must be a non-empty list of dicts with 'weights'")
    for i, p in enumerate(panels):
        if not isinstance(p, dict) or "weights" not in p:
            raise ValueError(f"panels[{i}] must be a dict with a 'weights' entry")
    ncols = ncols or (len(panels) if figsize else min(2, len(panels)))
    nrows = -(-len(panels) // ncols)
    vmax = max(max(float(_matrix("weights", p["weights"]).max()) for p in panels), 1e-6)
    fig = plt.figure(figsize=figsize or (4.7 * ncols, 4.4 * nrows + 0.5), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, p in zip(axes.flat, panels):
        image = draw_attention(ax, p["weights"], p.get("q_tokens"), p.get("k_tokens"), p.get("title"), vmax=vmax)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    bar = fig.colorbar(image, ax=axes, orientation="horizontal", fraction=0.04, pad=0.02, aspect=50)
    sep = "\n" if fig.get_figwidth() < 6.5 else " "          # one panel: two lines fit, one would not
    bar.set_label(f"attention weight{sep}(one scale for every panel: white = 0, darkest = {vmax:.2f}, "
                  "the largest weight of any panel)", fontsize=9)
    said, extra, rows, keys = [], [], [], []
    for p in panels:
        w = _matrix("weights", p["weights"]).numpy()
        q, k = _names(p.get("q_tokens"), w.shape[0], "q"), _names(p.get("k_tokens"), w.shape[1], "k")
        words, later = _panel_words(w, q, k)
        said.append(f"{p.get('title') or 'untitled'} ({w.shape[0]} × {w.shape[1]}): {words}")
        extra += later
        rows += _weights_table(w, q, k, prefix=f"{p.get('title') or 'untitled'}: ")[1]
        keys.append(k)
    width = max(map(len, keys))
    header = ["map: query"] + (keys[0] if all(k == keys[0] for k in keys) else [f"key {j}" for j in range(width)])
    text = (f"{len(panels)} attention map{'s' if len(panels) > 1 else ''}, rows: queries, columns: keys, all "
            f"shaded on one scale from 0 to {fmt(vmax)}, the largest weight of any panel. " + "; ".join(said) + ".")
    return describe(fig, text, table=(header, [r + [""] * (width + 1 - len(r)) for r in rows]),
                    extra_values=extra + [vmax])


class PretrainedHeadMap(LivePlot):
    """One head's attention on one sentence, as `family_attention_maps` draws a single
    panel (lesson 09's explorer): the sentence, layer and head move.

    attention: {sentence name: (layers, h, n, n)} (n may differ between sentences, layers
    and h may not); tokens: {sentence name: n labels}; labels: optional (layers × heads)
    pattern labels, shown in the title. Slider values: sentence (a name), layer, head.
    """

    figsize = (5.2, 3.6)      # the colour bar beside the map: with its controls, fits a laptop screen (3.7 was 2 px over)
    # Another sentence: other tokens, so other tick labels and another matrix size, and
    # constrained layout sizes the panel anew. A new figure, not a redraw: laid out again
    # on a figure it already laid out, constrained layout lands ~1 px off a fresh one's.
    rebuild_on = ("sentence",)

    def __init__(self, attention, tokens, labels=None):
        if not isinstance(attention, dict) or not attention:
            raise ValueError("attention must be a non-empty dict {sentence name: (layers, h, n, n)}")
        if set(attention) != set(tokens):
            raise ValueError("attention and tokens must have the same sentence names")
        maps = {name: torch.as_tensor(a).detach().float() for name, a in attention.items()}
        shapes = {tuple(a.shape[:2]) for a in maps.values()}
        if len(shapes) != 1 or any(a.dim() != 4 for a in maps.values()):
            raise ValueError("every attention entry must be (layers, h, n, n) with the same layers and h")
        for name, a in maps.items():
            _check_tokens(a.shape[2], a.shape[3], tokens[name], tokens[name])
        self.n_layers, self.n_heads = shapes.pop()
        # numpy once, here: a slider step only hands an existing (n, n) array to the image
        self.maps = {name: a.numpy() for name, a in maps.items()}
        # A very long word would squeeze the map to a stamp (its labels take the room): cut.
        self.tokens = {name: [_short(str(t)) for t in toks] for name, toks in tokens.items()}
        self.labels = labels

    def check(self, sentence, layer, head):
        if sentence not in self.maps:
            raise ValueError(f"unknown sentence {sentence!r}; known: {list(self.maps)}")
        if not (0 <= layer < self.n_layers and 0 <= head < self.n_heads):
            raise ValueError(f"layer must be in 0..{self.n_layers - 1} and head in 0..{self.n_heads - 1}, "
                             f"got layer {layer}, head {head}")

    def _title(self, layer, head):
        kind = f" — {self.labels[layer][head]}" if self.labels is not None else ""
        return f"layer {layer}, head {head}{kind}"

    def build(self, fig, sentence, layer, head):
        fig.set_layout_engine("constrained")
        ax = fig.add_subplot()
        toks = self.tokens[sentence]
        self.image = draw_attention(ax, torch.from_numpy(self.maps[sentence][layer, head]), toks, toks,
                                    self._title(layer, head))
        bar = _own_maximum_bar(fig, [ax], beside=True)
        # The top of the bar is this head's largest weight: a number beside it, moving with the head
        # (a tick label is part of the kept frame and would not be drawn again).
        self.top = bar.ax.text(1.0, 1.0, "", transform=offset_copy(bar.ax.transAxes, fig, x=7, units="points"),
                               ha="left", va="center", fontsize=bar.ax.yaxis.get_ticklabels()[0].get_fontsize())
        self._set_top(self.maps[sentence][layer, head])
        self.title = ax.title
        return [self.image, self.title, self.top]

    def _set_top(self, w):
        self.top.set_text(fmt(max(float(w.max()), 0.0)))

    def update(self, sentence, layer, head):
        w = self.maps[sentence][layer, head]
        self.image.set_data(w)
        self.image.set_clim(0, max(float(w.max()), 1e-6))          # each head: 0 .. its own maximum
        self._set_top(w)
        self.title.set_text(self._title(layer, head))

    def describe(self, sentence, layer, head):
        w, toks = self.maps[sentence][layer, head], self.tokens[sentence]
        words, later = _panel_words(w, toks, toks)
        return dict(text=f"Attention of one head ({self._title(layer, head)}) over a sentence of {len(toks)} "
                         f"tokens, rows: queries, columns: keys, shaded from 0 up to its {words}. Where each query "
                         f"attends most{' (the 6 strongest rows)' if len(toks) > 6 else ''}: "
                         f"{_row_peaks(w, toks, toks)}.",
                    table=_weights_table(w, toks, toks), extra_values=later,
                    result=f"{self._title(layer, head)}: where each query attends most: {_row_peaks(w, toks, toks)}.")


def it_attention_grid(weights, sentences, targets):
    """How much "it" attends to each target word, for every layer and head.

    weights: tensor (n_sentences, n_targets, layers, heads) of attention weights from
    "it" to each target. sentences, targets: labels. One heatmap per
    (sentence, target), numbers in percent. Returns the Figure.
    """
    w = torch.as_tensor(weights).detach().float()
    if w.dim() != 4:
        raise ValueError(f"weights must be (n_sentences, n_targets, layers, heads), got {tuple(w.shape)}")
    if len(sentences) != w.shape[0] or len(targets) != w.shape[1]:
        raise ValueError(f"got {len(sentences)} sentences and {len(targets)} targets for weights "
                         f"of shape {tuple(w.shape)}")
    n_s, n_t, n_layers, n_heads = w.shape
    # ≤ 8.9 in wide (+ margins ≤ 913 px): shown at full size in the notebook column, so 8 pt stays 8 pt.
    fig, axes = plt.subplots(n_s, n_t, figsize=(min(8.9, 4.45 * n_t), 2.5 * n_s + 0.9), squeeze=False,
                             layout="constrained")
    vmax = float(w.max())
    for i in range(n_s):
        for j in range(n_t):
            ax = axes[i, j]
            im = ax.imshow(100 * w[i, j].numpy(), cmap="Oranges", vmin=0, vmax=100 * vmax)
            for layer in range(n_layers):
                for head in range(n_heads):
                    v = float(w[i, j, layer, head])
                    ax.text(head, layer, f"{100 * v:.0f}", ha="center", va="center", fontsize=8,
                            color="white" if v > 0.6 * vmax else "black")
            ax.set_xticks(range(n_heads))
            ax.set_yticks(range(n_layers))
            ax.tick_params(labelsize=8)
            ax.set_xlabel("head", fontsize=9)
            ax.set_ylabel("layer", fontsize=9)
            ax.set_title(f'"it" → "{targets[j]}" ({sentences[i]})', fontsize=10)
    fig.colorbar(im, ax=axes, fraction=0.03, pad=0.02, label="attention weight × 100 (%)")
    fig.suptitle('numbers: the weight from "it" to the word, × 100 (percent of its attention)',
                 fontsize=10)
    pct = lambda v: f"{100 * float(v):.0f} %"           # noqa: E731 - as the cells print it
    said, rows = [], []
    for i in range(n_s):
        for j in range(n_t):
            layer, head = np.unravel_index(int(w[i, j].argmax()), (n_layers, n_heads))
            said.append(f"'it' → '{targets[j]}' ({sentences[i]}): layer {layer}, head {head}, "
                        f"{pct(w[i, j, layer, head])}")
            rows += [[f"'it' → '{targets[j]}' ({sentences[i]}), layer {layer}"] + [f"{100 * float(v):.0f}" for v in r]
                     for layer, r in enumerate(w[i, j])]
    text = (f"Attention from 'it' to {' and '.join(map(repr, targets))} in percent, per layer ({n_layers}, rows) "
            f"and head ({n_heads}, columns), in the sentences {' and '.join(map(repr, sentences))}. "
            f"Strongest head: " + "; ".join(said) + ".")
    return describe(fig, text, table=(["map, layer"] + [f"head {h}" for h in range(n_heads)], rows))


def head_pattern_grid(labels, scores=None, title="what each head does"):
    """A (layers × heads) grid coloured by each head's pattern label.

    labels: list of lists of labels (from `course_lib.experiments.head_patterns.classify_heads`).
    scores: optional dict of (layers, heads) tensors (from `pattern_scores`); the
    score of each head's own pattern is printed in its cell. Returns the Figure.
    """
    if not labels or not all(isinstance(row, (list, tuple)) for row in labels):
        raise ValueError("labels must be a list (layers) of lists (heads)")
    unknown = {lab for row in labels for lab in row} - set(PATTERN_COLORS)
    if unknown:
        raise ValueError(f"unknown pattern labels {sorted(unknown)}; known: {list(PATTERN_COLORS)}")
    names = list(PATTERN_COLORS)
    grid = np.array([[names.index(lab) for lab in row] for row in labels])
    n_layers, n_heads = grid.shape
    fig, ax = plt.subplots(figsize=(0.55 * n_heads + 2.6, 0.5 * n_layers + 1.2))
    # The cells' own colours (an RGB image, no colour map), each with its pattern's symbol
    ax.imshow(np.array([[to_rgb(PATTERN_COLORS[lab]) for lab in row] for row in labels]))
    cells = []
    for layer in range(n_layers):
        row = []
        for head in range(n_heads):
            lab = labels[layer][head]
            score = f"{float(scores[lab][layer, head]):.2f}" if scores is not None and lab in scores else ""
            ax.text(head, layer, PATTERN_SYMBOLS[lab] + ("\n" + score if score else ""), ha="center", va="center",
                    fontsize=8, color=_ink(PATTERN_COLORS[lab]), linespacing=1.0)
            row.append(f"{lab} {score}".strip())
        cells.append([f"layer {layer}"] + row)
    ax.set_xticks(range(n_heads))
    ax.set_yticks(range(n_layers))
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title, fontsize=10)
    used = [n for n in names if (grid == names.index(n)).any()]
    ax.legend(handles=[Patch(color=PATTERN_COLORS[n], label=f"{PATTERN_SYMBOLS[n]}  {n}") for n in used],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    counts = [int((grid == names.index(n)).sum()) for n in used]
    text = (f"{title[:1].upper()}{title[1:]}: the pattern of each of the {grid.size} heads ({n_layers} layers × "
            f"{n_heads} heads), shown by colour and symbol: {', '.join(f'{c} {n}' for c, n in zip(counts, used))}.")
    if scores is not None:
        shown = [(float(scores[lab][layer, head]), lab, layer, head) for layer, row in enumerate(labels)
                 for head, lab in enumerate(row) if lab in scores]
        if shown:
            v, lab, layer, head = max(shown)
            text += (f" The score of its own pattern is printed in each cell; highest: {lab}, layer {layer}, "
                     f"head {head}, {v:.2f}.")
    return describe(fig, text, table=(["layer"] + [f"head {h}" for h in range(n_heads)], cells),
                    extra_values=counts + [grid.size])


def _ink(color):
    """Black or white: whichever keeps more contrast on `color` (WCAG relative luminance)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(color)]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "white" if (1.05 / (lum + 0.05)) > (lum + 0.05) / 0.05 else "black"


def similarity_heatmap(similarity, labels, title="cosine similarity of sentence embeddings"):
    """A square matrix of similarities with the values printed. Returns the Figure."""
    s = torch.as_tensor(similarity).detach().float()
    if s.dim() != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"similarity must be a square matrix, got shape {tuple(s.shape)}")
    if len(labels) != s.shape[0]:
        raise ValueError(f"got {len(labels)} labels for a {s.shape[0]}×{s.shape[0]} matrix")
    n = s.shape[0]
    fig, ax = plt.subplots(figsize=(0.7 * n + 5.0, 0.5 * n + 1.0))
    im = ax.imshow(s.numpy(), cmap="viridis", vmin=min(0.0, float(s.min())), vmax=1)
    for i in range(n):
        for j in range(n):
            ax.text(j, i, fmt(s[i, j]), ha="center", va="center", fontsize=8,      # never "-0.00"
                    color="black" if s[i, j] > 0.6 else "white")
    short = [lab if len(lab) <= 42 else lab[:40] + "…" for lab in labels]
    ax.set_yticks(range(n), short, fontsize=8)
    ax.set_xticks(range(n), [str(i) for i in range(n)], fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03, label="cosine similarity")
    ax.set_xlabel("sentence #")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    sym = torch.allclose(s, s.T)
    pairs = sorted((float(s[i, j]), i, j) for i in range(n) for j in range(n) if (i < j if sym else i != j))
    text = f"{title[:1].upper()}{title[1:]} for {n} sentences (rows; columns by number)"
    if pairs:
        (lo, a, b), (hi, c, d) = pairs[0], pairs[-1]
        text += (f": most similar '{short[c]}' and '{short[d]}' {fmt(hi)}; least similar '{short[a]}' and "
                 f"'{short[b]}' {fmt(lo)}")
    return describe(fig, text + ".", table=_weights_table(s.numpy(), short, range(n), corner="sentence \\ #")
                    if n * n > 20 else None)
