"""Figures for lesson 07: the encoder-decoder's shapes, and cross-attention maps.

Length: the shape diagram is one figure (boxes, arrows, residuals, its live update for
the explorer) and the heatmap's description helpers serve lessons 08 and 09 too.
"""
from __future__ import annotations

import functools

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from .describe import describe, fmt
from .live import LivePlot

__all__ = ["trace_shapes", "encoder_decoder_diagram", "attention_heatmap"]


def _check_size(name, value, lo=1):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < lo:
        raise ValueError(f"{name} must be >= {lo}, got {name}={value}")


@torch.no_grad()
def trace_shapes(batch=2, n_src=5, n_tgt=3, d_model=32, h=4, d_ff=128, src_vocab=30, tgt_vocab=40,
                 n_layers=2):
    """Run a random EncoderDecoder of these sizes step by step and record every shape.

    Returns {name: shape tuple} for: src, tgt, src_embedded, src_in (with PE), memory,
    tgt_embedded, tgt_in, decoder_out, logits, probs, self_weights, masked_weights,
    cross_weights. Nothing is assumed: each shape is read off a real tensor. The defaults:
    lesson 07's sizes, all different (d_k = 8), so that every axis can be told apart.
    """
    for name, v in dict(batch=batch, n_src=n_src, n_tgt=n_tgt, d_model=d_model, h=h, d_ff=d_ff,
                        src_vocab=src_vocab, tgt_vocab=tgt_vocab, n_layers=n_layers).items():
        _check_size(name, v)
    if d_model % h:
        raise ValueError(f"d_model={d_model} must be divisible by h={h} (each head gets d_model/h)")
    from ..nn.models import EncoderDecoder, collect_attention

    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = EncoderDecoder(src_vocab, tgt_vocab, d_model, h, d_ff, n_layers, n_layers, dropout=0.0,
                           max_len=max(n_src, n_tgt)).eval()
    src = torch.randint(0, src_vocab, (batch, n_src), generator=g)
    tgt = torch.randint(0, tgt_vocab, (batch, n_tgt), generator=g)
    shapes = {"src": src.shape, "tgt": tgt.shape}
    x = model.src_embed(src)
    shapes["src_embedded"] = x.shape
    x = model.pos(x)
    shapes["src_in"] = x.shape
    memory = model.encoder(x)
    shapes["memory"] = memory.shape
    y = model.tgt_embed(tgt)
    shapes["tgt_embedded"] = y.shape
    y = model.pos(y)
    shapes["tgt_in"] = y.shape
    from ..nn.attention import causal_mask

    out = model.decoder(y, memory, self_mask=causal_mask(n_tgt))
    shapes["decoder_out"] = out.shape
    logits = model.out(out)
    shapes["logits"] = logits.shape
    shapes["probs"] = logits.softmax(-1).shape
    attn = collect_attention(model, src, tgt)
    shapes["self_weights"] = attn["encoder"][0].shape
    shapes["masked_weights"] = attn["decoder"][0].shape
    shapes["cross_weights"] = attn["cross"][0].shape
    return {k: tuple(v) for k, v in shapes.items()}


def _fmt(shape, names):
    return "(" + ", ".join(f"{n}={s}" if n else str(s) for n, s in zip(names, shape)) + ")"


_ENC = "#dbe9f6"
_DEC = "#fde2c8"
_ATT = "#f6d5e5"
_IO = "#eeeeee"


def _box(ax, x, y, w, hgt, text, color, fontsize=8.5, bold=False, to_data=None):
    """A rounded box with `text` centred in it. Returns the Text."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - hgt / 2), w, hgt, boxstyle="round,pad=0.02,rounding_size=0.08",
                                fc=color, ec="#333333", lw=0.9))
    label = ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, weight="bold" if bold else "normal")
    label.fits = (0.94 * w, fontsize)           # what _shrink_to_fit needs again when the text changes
    _shrink_to_fit(ax, label, to_data)
    return label


def _data_per_pixel(ax):
    """Data units per pixel along x, for the Axes as it lies now."""
    (x0, _), (x1, _) = ax.transData.inverted().transform([(0, 0), (1, 0)])
    return x1 - x0


def _shrink_to_fit(ax, label, to_data=None, smallest=8):
    """Lower the label's font size (from its own, `label.fits[1]`) until it is at most
    `label.fits[0]` wide (data units): long shapes (large batch or d_model from the
    sliders) would otherwise spill out of their box. to_data: data units per pixel
    (default: the Axes as it lies now)."""
    renderer = ax.figure.canvas.get_renderer()
    to_data = _data_per_pixel(ax) if to_data is None else to_data
    width, size = label.fits
    label.set_fontsize(size)
    while label.get_fontsize() > smallest:
        if label.get_window_extent(renderer).width * to_data <= width:
            return
        label.set_fontsize(label.get_fontsize() - 0.5)


def _arrow(ax, a, b, color="#333333", rad=0.0):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=10, color=color, lw=1.0,
                                 connectionstyle=f"arc3,rad={rad}", shrinkA=0, shrinkB=0))


def _column(ax, x, w, boxes, y=0.04, to_data=None):
    """Stack boxes bottom-up: each (text, height, color, bold, shape on the arrow into it or
    None, gap below it), in inches (the diagram's data unit). An arrow crosses each gap; the
    shape it carries is written on it, centred, on white.
    Returns ({index: (x, y_centre, height)} of the boxes, [each box's Text],
    {index: the Text on the arrow into box index}).
    """
    placed, texts, on_arrows = {}, [], {}
    for i, (text, hgt, color, bold, shape_label, gap) in enumerate(boxes):
        if i:
            _arrow(ax, (x, y), (x, y + gap))
            if shape_label:     # mid-gap; low in a layer's first gap, where the frame and the skip start above it
                mid = y + (_LABEL_AT if gap >= _INTO_LAYER else 0.5) * gap
                on_arrows[i] = ax.text(x, mid, shape_label, fontsize=8, color="#1f4e79", ha="center",
                                       va="center", family="monospace",
                                       bbox=dict(fc="white", ec="none", pad=0.5))
            y += gap
        texts.append(_box(ax, x, y + hgt / 2, w, hgt, text, color, bold=bold, to_data=to_data))
        placed[i] = (x, y + hgt / 2, hgt)
        y += hgt
    return placed, texts, on_arrows


_MARGIN = 0.28      # between a column's boxes and its dashed frame: room for the residual arrows
_SKIP = 0.1         # a residual leaves the stream this far below its sublayer
_INTO_LAYER = 0.42  # the gap below a layer's first sublayer: its input's shape, then the frame, then the skip
_LABEL_AT = 0.34    # where in that gap the shape sits (fraction from the bottom)


def _frame(ax, placed, first, last, w, color, title, side):
    """A dashed frame around boxes first..last, its title rotated beside it on `side`."""
    x, y0, h0 = placed[first]
    _, y1, h1 = placed[last]
    bottom, top = y0 - h0 / 2 - _SKIP - 0.045, y1 + h1 / 2 + 0.07
    ax.add_patch(FancyBboxPatch((x - w / 2 - _MARGIN, bottom), w + 2 * _MARGIN, top - bottom,
                                boxstyle="round,pad=0.02", fc="none", ec=color, lw=1.2, ls="--"))
    side = -1 if side == "left" else 1
    ax.text(x + side * (w / 2 + _MARGIN + 0.16), (bottom + top) / 2, title, fontsize=9.5, color=color,
            weight="bold", rotation=90, ha="center", va="center")


def _residuals(ax, placed, w, side, color="#2e7d32"):
    """A skip arrow around every sublayer into the Add & Norm box after it: x + Sublayer(x).

    placed: from `_column`. The arrow leaves the stream just below the sublayer (above the
    shape written on the arrow into it) and runs along the `side` of the column.
    """
    def draw(sub, add):
        x, ys, hs = placed[sub]
        _, ya, _ = placed[add]
        sign = -1 if side == "left" else 1
        edge, lane = x + sign * w / 2, x + sign * (w / 2 + _MARGIN / 2)
        start = ys - hs / 2 - _SKIP
        ax.plot([x, lane, lane], [start, start, ya], color=color, lw=1.3, solid_capstyle="round")
        ax.plot([x], [start], "o", color=color, ms=3.5)
        _arrow(ax, (lane, ya), (edge, ya), color=color)
    return draw


_B, _S, _T, _D = "batch", "n_src", "n_tgt", "d_model"
# Heights (inches) of a box of one, two and three lines of 8.5 pt text, and the gaps between
# boxes: a plain arrow, and one with a shape written on it.
_H1, _H2, _H3 = 0.22, 0.36, 0.50
_GAP, _LABELLED = 0.175, 0.30


def _encoder_boxes(s, d_ff):
    """The encoder column, bottom-up: (text, height, colour, bold, shape on the arrow into it,
    gap below it)."""
    B, S, D = _B, _S, _D
    return [
        (f"source ids (English)\n{_fmt(s['src'], (B, S))}", _H2, _IO, False, None, 0),
        ("embedding: row lookup E_src[id] · √d_model\n(= one-hot(id) @ E_src)", _H2, _ENC, False, None, _GAP),
        ("+ positional encoding", _H1, _ENC, False, _fmt(s["src_embedded"], (B, S, D)), _LABELLED),
        (f"self-attention: Q, K, V from the source\nweights {_fmt(s['self_weights'], (B, 'h', S, S))}",
         _H2, _ATT, False, _fmt(s["src_in"], (B, S, D)), _INTO_LAYER),
        ("Add & Norm", _H1, _ENC, False, None, _GAP),
        (f"feed-forward (d_ff={d_ff})", _H1, _ENC, False, None, _GAP),
        ("Add & Norm", _H1, _ENC, False, None, _GAP),
        (f"memory (encoder output)\n{_fmt(s['memory'], (B, S, D))}", _H2, _ENC, True, None, 0.2),
    ]


def _decoder_boxes(s, d_ff):
    """The decoder column, bottom-up, as `_encoder_boxes`."""
    B, S, T, D = _B, _S, _T, _D
    return [
        (f"target ids, shifted right (German)\n{_fmt(s['tgt'], (B, T))}", _H2, _IO, False, None, 0),
        ("embedding: row lookup E_tgt[id] · √d_model", _H1, _DEC, False, None, _GAP),
        ("+ positional encoding", _H1, _DEC, False, _fmt(s["tgt_embedded"], (B, T, D)), _LABELLED),
        (f"masked self-attention (causal)\nweights {_fmt(s['masked_weights'], (B, 'h', T, T))}",
         _H2, _ATT, False, _fmt(s["tgt_in"], (B, T, D)), _INTO_LAYER),
        ("Add & Norm", _H1, _DEC, False, None, _GAP),
        (f"cross-attention: Q from the decoder,\nK and V from memory\n"
         f"weights {_fmt(s['cross_weights'], (B, 'h', T, S))}", _H3, _ATT, True, None, _GAP),
        ("Add & Norm", _H1, _DEC, False, None, _GAP),
        (f"feed-forward (d_ff={d_ff})", _H1, _DEC, False, None, _GAP),
        ("Add & Norm", _H1, _DEC, False, None, _GAP),
        (f"linear d_model → V (target vocabulary)\nlogits {_fmt(s['logits'], (B, T, 'V'))}", _H2, _DEC,
         False, _fmt(s["decoder_out"], (B, T, D)), 0.36),
        (f"softmax over the vocabulary\n{_fmt(s['probs'], (B, T, 'V'))}", _H2, _IO, True, None, _GAP),
    ]


# The boxes whose text shows a size (indices into _encoder_boxes / _decoder_boxes).
_ENC_SIZED = (0, 3, 5, 7)
_DEC_SIZED = (0, 3, 5, 7, 9, 10)


def _header(batch, n_src, n_tgt, d_model, h, tgt_vocab):
    return (f"batch={batch}, n_src={n_src}, n_tgt={n_tgt}, d_model={d_model}, h={h} "
            f"(d_k={d_model // h}), V = tgt_vocab = {tgt_vocab}")


def _two_lines(header):
    """The header broken before h: it fits above the encoder column."""
    return header.replace(", h=", ",\nh=", 1)


@functools.lru_cache(maxsize=1024)
def _traced(**sizes):
    """trace_shapes, remembered (a slider going back to a value runs no model again), on
    one thread: the model's matrices are tiny, and a second thread only waits (2-core
    machine under load: 33 ms on one thread, 306 ms on two)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return trace_shapes(**sizes)
    finally:
        torch.set_num_threads(threads)


class EncoderDecoderDiagram(LivePlot):
    """The encoder-decoder as boxes and arrows, each arrow labelled with the shape of the
    tensor it carries — shapes read off a real forward pass (`trace_shapes`) of a model
    of the sizes given (lesson 07's explorer).

    Fixed: d_ff (None: 4 · d_model, as the explorer has it), src_vocab, n_layers. Slider
    values: batch, n_src, n_tgt, d_model, h, tgt_vocab. What moves: every text that shows
    a size (the boxes' shapes, the shapes on the arrows, d_ff, the headline); the boxes,
    arrows and the texts without a size stay in the frame. The layout does not follow the
    sizes (every text lies well inside the Axes), so nothing is laid out again.
    """

    figsize = (9.1, 5.75)   # 9.1 in: 8 pt text stays 8 pt in the notebook; 5.75 in: 552 px, one laptop screen

    def __init__(self, d_ff=None, src_vocab=30, n_layers=2):
        self.d_ff, self.src_vocab, self.n_layers = d_ff, src_vocab, n_layers

    def _shapes(self, batch, n_src, n_tgt, d_model, h, tgt_vocab):
        d_ff = 4 * d_model if self.d_ff is None else self.d_ff
        sizes = dict(batch=batch, n_src=n_src, n_tgt=n_tgt, d_model=d_model, h=h, d_ff=d_ff,
                     src_vocab=self.src_vocab, tgt_vocab=tgt_vocab, n_layers=self.n_layers)
        try:
            return _traced(**sizes), d_ff
        except TypeError:               # unhashable sizes: trace_shapes names the bad one
            return trace_shapes(**sizes), d_ff

    def check(self, **values):
        self._shapes(**values)          # a size trace_shapes refuses (d_model % h ≠ 0, ...)

    def _texts(self, **values):
        """Every text that shows a size, in the order of `self.moving`."""
        s, d_ff = self._shapes(**values)
        texts = []
        for boxes, sized in ((_encoder_boxes(s, d_ff), _ENC_SIZED), (_decoder_boxes(s, d_ff), _DEC_SIZED)):
            texts += [boxes[i][0] for i in sized] + [b[4] for b in boxes if b[4]]
        return texts + [_two_lines(_header(**values))]

    def build(self, fig, **values):
        s, d_ff = self._shapes(**values)
        # One data unit is one inch: the boxes' heights and gaps above are in inches. Fixed, not
        # tight_layout: the layout must not follow the sizes the texts show (a redraw for other
        # sizes keeps the frame; a fresh figure for them must match it). A 0.01 margin: the
        # notebook's bbox_inches="tight" adds 0.1 in around the Axes, and 9.1 in must stay ≤ 913 px.
        ax = self.ax = fig.add_axes((0.01, 0.01, 0.98, 0.98))
        width, height = 0.98 * fig.get_size_inches()
        ax.set_xlim(0, width)
        ax.set_ylim(0, height)
        ax.axis("off")
        for spine in ax.spines.values():    # LivePlot draws an Axes' spines over what moved,
            spine.set_visible(False)         # also with the axis off: none here
        self.to_data = _data_per_pixel(ax)   # box texts are fitted to their boxes with this
        w = 3.25
        ex, dx = 2.2, 6.72   # encoder / decoder column centres: the two frames' titles fit the width

        enc, enc_texts, enc_arrows = _column(ax, ex, w, _encoder_boxes(s, d_ff), to_data=self.to_data)
        _frame(ax, enc, 3, 6, w, "#1f4e79", f"encoder layer × {self.n_layers}", "left")
        skip = _residuals(ax, enc, w, "left")
        skip(3, 4)          # x + self-attention(x)
        skip(5, 6)          # x + FFN(x)

        dec, dec_texts, dec_arrows = _column(ax, dx, w, _decoder_boxes(s, d_ff), to_data=self.to_data)
        _frame(ax, dec, 3, 8, w, "#a0522d", f"decoder layer × {self.n_layers}", "right")
        skip = _residuals(ax, dec, w, "right")
        for sub in (3, 5, 7):   # masked self-attention, cross-attention, FFN: each x + Sublayer(x)
            skip(sub, sub + 1)

        # memory -> every decoder layer's cross-attention (keys and values)
        _, my, _ = enc[7]
        _, cy, _ = dec[5]
        start, end = (ex + w / 2, my), (dx - w / 2 - 0.04, cy)
        _arrow(ax, start, end, color="#1f4e79", rad=-0.3)
        ax.text((start[0] + end[0]) / 2, (my + cy) / 2 + 0.08, "K, V", fontsize=10, color="#1f4e79",
                weight="bold", ha="center", va="center")
        # The header sits above the encoder, which is shorter than the decoder.
        self.header = ax.text(0.08, height - 0.08, _two_lines(_header(**values)), fontsize=10.5, weight="bold",
                              va="top")
        ax.text(0.08, height - 0.5, "every shape here was read off a real forward\n"
                                    "pass at these sizes; green side arrows: the\n"
                                    "residual x + Sublayer(x) into each Add & Norm",
                fontsize=9, color="#555555", va="top")
        # The texts that show a size move ("Add & Norm" and the like stay in the frame).
        self.moving = [enc_texts[i] for i in _ENC_SIZED] + [enc_arrows[i] for i in sorted(enc_arrows)] + \
            [dec_texts[i] for i in _DEC_SIZED] + [dec_arrows[i] for i in sorted(dec_arrows)] + [self.header]
        return self.moving

    def update(self, **values):
        for label, text in zip(self.moving, self._texts(**values)):
            label.set_text(text)
            if hasattr(label, "fits"):      # a box's text: fitted to its box again
                _shrink_to_fit(self.ax, label, self.to_data)

    def describe(self, **values):
        s, d_ff = self._shapes(**values)
        t = lambda name: "(" + ", ".join(map(str, s[name])) + ")"     # noqa: E731
        sizes = ", ".join(f"{k}={v}" for k, v in values.items() if k != "tgt_vocab") + \
            f" (d_k={values['d_model'] // values['h']})"
        return (f"Encoder-decoder, {self.n_layers} layers each, d_ff={d_ff}, with the shapes of a real forward "
                f"pass for {sizes}, V = {values['tgt_vocab']}. Encoder: source ids {t('src')} → embedding and "
                f"positional encoding {t('src_in')} → self-attention, weights {t('self_weights')} → feed-forward "
                f"→ memory {t('memory')}. Decoder: target ids {t('tgt')} → embedding and positional encoding "
                f"{t('tgt_in')} → masked self-attention, weights {t('masked_weights')} → cross-attention, K and V "
                f"from memory, weights {t('cross_weights')} → feed-forward {t('decoder_out')} → logits "
                f"{t('logits')} → softmax {t('probs')}; every sublayer's input is added back before its Add & Norm.")


def encoder_decoder_diagram(batch=2, n_src=5, n_tgt=3, d_model=32, h=4, d_ff=128, src_vocab=30, tgt_vocab=40,
                            n_layers=2):
    """The encoder-decoder as boxes and arrows, each arrow labelled with the shape of
    the tensor it carries — shapes read off a real forward pass (`trace_shapes`).

    Returns the Figure.
    """
    return EncoderDecoderDiagram(d_ff=d_ff, src_vocab=src_vocab, n_layers=n_layers).figure(
        batch=batch, n_src=n_src, n_tgt=n_tgt, d_model=d_model, h=h, tgt_vocab=tgt_vocab)


def attention_heatmap(weights, query_labels, key_labels, title="attention weights", ax=None,
                      xlabel="keys", ylabel="queries", annotate=True):
    """Heatmap of one attention matrix (n_q, n_k); rows are queries, columns keys.

    weights: tensor or array (n_q, n_k). Labels must match its shape. Returns the Figure.
    """
    w = torch.as_tensor(weights).detach().float()
    if w.dim() != 2:
        raise ValueError(f"weights must be 2-D (n_q, n_k), got shape {tuple(w.shape)}")
    if len(query_labels) != w.shape[0]:
        raise ValueError(f"query_labels has {len(query_labels)} labels for {w.shape[0]} rows")
    if len(key_labels) != w.shape[1]:
        raise ValueError(f"key_labels has {len(key_labels)} labels for {w.shape[1]} columns")
    small, few = max(w.shape) <= 8, w.shape[1] <= 3     # a few large cells: labels as large as the axes'
    own = ax is None
    if own:             # at least 4.4 × 3.2 in: a 3 × 2 map was a 3.3 in stamp with 7 pt values (issue 29)
        fig, ax = plt.subplots(figsize=(max(4.4, 0.6 * w.shape[1] + 3.2), max(3.2, 0.45 * w.shape[0] + 1.6)))
    else:
        fig = ax.figure
    im = ax.imshow(w.numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
    if own:             # in a caller's axes, the caller draws the colour bar (once for all panels)
        fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03, label="attention weight")
    ax.set_xticks(range(w.shape[1]), key_labels, rotation=0 if few else 45, ha="center" if few else "right",
                  fontsize=10 if small else 9)
    ax.set_yticks(range(w.shape[0]), query_labels, fontsize=10 if small else 9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11 if small else 10)
    if annotate and w.numel() <= 200:
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                v = float(w[i, j])
                if v >= 0.05:
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=11 if small else 8,
                            color="white" if v > 0.6 else "black")
    fig.tight_layout()
    return describe(fig, **_heatmap_words(w.numpy(), query_labels, key_labels, title, ylabel, xlabel))


def _row_peaks(w, q_labels, k_labels, most=6):
    """"'q' → 'k' 0.62; …": each row's largest weight (the `most` largest rows when there
    are more, in row order)."""
    w = np.asarray(w, dtype=float)
    arg, peak = w.argmax(1), w.max(1)
    rows = range(len(w)) if len(w) <= most else sorted(np.argsort(-peak, kind="stable")[:most].tolist())
    return "; ".join(f"'{q_labels[i]}' → '{k_labels[arg[i]]}' {fmt(peak[i])}" for i in rows)


def _weights_table(w, q_labels, k_labels, corner="query \\ key", prefix=""):
    """(header, rows) of a weight matrix for `describe`: a row per query."""
    return ([corner] + [str(k) for k in k_labels],
            [[f"{prefix}{q}"] + np.asarray(row, dtype=float).tolist() for q, row in zip(q_labels, w)])


def _heatmap_words(w, q_labels, k_labels, what, ylabel, xlabel):
    """`describe`'s text (and, past 20 numbers, the table) for one attention matrix."""
    n_q, n_k = np.shape(w)
    most = "" if n_q <= 6 else f" (the 6 strongest of {n_q} rows)"
    text = (f"{what[:1].upper()}{what[1:]}: rows: {ylabel} ({n_q}), columns: {xlabel} ({n_k}), shaded from 0 to 1. "
            f"Where each row attends most{most}: {_row_peaks(w, q_labels, k_labels)}.")
    if n_q > 6:                          # the rows left out: say the most spread-out one too
        w, weakest = np.asarray(w, dtype=float), int(np.asarray(w, dtype=float).max(1).argmin())
        text += (f" The most spread-out row, '{q_labels[weakest]}', puts at most {fmt(w[weakest].max())} on one "
                 f"column ('{k_labels[int(w[weakest].argmax())]}').")
    return dict(text=text, table=_weights_table(w, q_labels, k_labels) if np.size(w) > 20 else None)
