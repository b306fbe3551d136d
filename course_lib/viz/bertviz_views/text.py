"""A bertviz view in words: its strongest links, from the attention weights it was given.

bertviz draws lines a reader hovers with a mouse; a screen reader finds an SVG of
unlabelled lines, and a keyboard cannot hover. So each view made by `show` carries a
text alternative computed from the same (rounded) weights, for the view *as it opens*:

- head view: the layer it opens on and the heads it shows (their mean when several,
  which is what the darkness of the drawn lines adds up to); for each token on the left,
  the two tokens it attends to most — for each kind of attention it can show (encoder,
  decoder, cross);
- neuron view: the same for the layer and head it opens on;
- model view: for each layer, the three strongest links over its heads.

`describe` returns it as HTML (a sentence with the strongest links, then the table in
a closed disclosure) and as plain text (the view's `text/plain`).
"""
from __future__ import annotations

import html
from dataclasses import dataclass

__all__ = ["Kind", "TextAlternative", "describe", "kinds_from"]

KEYBOARD_NOTE = ("Hovering a token and the coloured head squares need a mouse; the menus work "
                 "with the keyboard (Tab, then the arrow keys).")


@dataclass
class Kind:
    """One kind of attention a view can show: per-layer (1, h, n_q, n_k) weights and labels."""
    name: str           # "" for plain self-attention, else "Encoder", "Decoder" or "Cross"
    layers: list        # one tensor (1, h, n_q, n_k) per layer
    rows: list          # n_q labels: the left column (queries)
    cols: list          # n_k labels: the right column (keys)


@dataclass
class TextAlternative:
    html: str
    text: str


def _labels(tokens):
    """Labels a reader can tell apart: a token that occurs twice gets its position. Pieces
    of a byte-level BPE keep their leading space in bertviz; here it is dropped."""
    shown = [t.strip() or repr(t) for t in tokens]
    return [f"{t} ({i})" if shown.count(t) > 1 else t for i, t in enumerate(shown)]


def _heads_phrase(heads, n_heads):
    if len(heads) == 1:
        return f"head {heads[0]}"
    if list(heads) == list(range(n_heads)):
        return "the mean of both heads" if n_heads == 2 else f"the mean of all {n_heads} heads"
    return "the mean of heads " + ", ".join(map(str, heads))


def _causal(kind):
    """Whether `kind` is causal attention: square, nothing above the diagonal in any layer."""
    n_q, n_k = kind.layers[0].shape[-2:]
    return n_q == n_k > 1 and all(float(a[0].triu(diagonal=1).abs().max()) == 0 for a in kind.layers)


def _links(weights, rows, cols, top, causal=False):
    """(weight, row label, col label) of the `top` largest weights of a (n_q, n_k) map.

    In causal attention the first token has one key to look at, itself: its weight 1 is
    the mask's doing, says nothing about the model, and is left out."""
    if causal:
        weights = weights.clone()
        weights[0] = 0
    flat = weights.flatten()
    k = min(top, flat.numel())
    values, index = flat.topk(k)
    n_k = weights.shape[1]
    return [(float(v), rows[int(i) // n_k], cols[int(i) % n_k]) for v, i in zip(values, index) if v >= 0.005]


def _count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _fmt_link(w, a, b):
    return f"{a} → {b} {w:.2f}"


def _table(caption, head, body):
    """An HTML table: `head` the column titles; `body` rows whose first cell names the row."""
    th = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in head)
    rows = "".join("<tr>" + f'<th scope="row">{html.escape(r[0])}</th>'
                   + "".join(f"<td>{html.escape(c)}</td>" for c in r[1:]) + "</tr>" for r in body)
    return (f'<table style="margin:4px 0;border-collapse:collapse"><caption style="text-align:left">'
            f"{html.escape(caption)}</caption><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table>")


def _per_token(kind, layer, heads):
    """Rows (token, strongest, second) for one layer's mean over `heads`; and the map."""
    weights = kind.layers[layer][0, heads].mean(dim=0)          # (n_q, n_k)
    rows, cols = _labels(kind.rows), _labels(kind.cols)
    body = []
    for i, label in enumerate(rows):
        values, index = weights[i].topk(min(2, weights.shape[1]))
        # a weight that rounds to 0 (a masked future token) is no link
        cells = [f"{cols[int(j)]} {float(v):.2f}" for v, j in zip(values, index) if v >= 0.005]
        body.append([label] + cells + [""] * (2 - len(cells)))
    return body, weights, rows, cols


def _attention_name(kind):
    return f"{kind.name.lower()} attention" if kind.name else "attention"


def describe(view, kinds, options) -> TextAlternative:
    """The text alternative of a `view` ("head", "model", "neuron") showing `kinds`.

    options: the bertviz options the view was made with (layer, heads, head,
    include_layers, include_heads), which decide what it opens on.
    """
    n_layers, n_heads = len(kinds[0].layers), kinds[0].layers[0].shape[1]
    if view == "model":
        return _describe_model(kinds, options, n_layers, n_heads)
    if view == "neuron":
        layer, heads = options.get("layer") or 0, [options.get("head") or 0]
    else:
        included = options.get("include_layers") or list(range(n_layers))
        layer = options.get("layer") if options.get("layer") is not None else included[0]
        heads = list(options.get("heads") or range(n_heads))
    which = f"layer {layer}, {_heads_phrase(heads, n_heads)}"
    strongest, tables, lines = [], [], []
    for kind in kinds:
        body, weights, rows, cols = _per_token(kind, layer, heads)
        top = _links(weights, rows, cols, 3, _causal(kind))
        strongest.append((kind, top))
        caption = (f"{kind.name + ': ' if kind.name else ''}each token on the left and the two tokens "
                   f"it attends to most ({which})")
        tables.append(_table(caption, ["token", "attends most to", "next"], body))
        lines.append(caption + ":")
        lines += [f"  {r[0]}: {', '.join(c for c in r[1:] if c)}" for r in body]
    summary = "; ".join((f"{_attention_name(k)}: " if k.name else "")
                        + (", ".join(_fmt_link(*t) for t in top) or "none") for k, top in strongest)
    sentence = f"In words: this {view} view opens on {which}. Strongest links — {summary}."
    return _assemble(sentence, "The strongest links of every token, as a table", tables, lines)


def _describe_model(kinds, options, n_layers, n_heads):
    layers = options.get("include_layers") or list(range(n_layers))
    heads = options.get("include_heads") or list(range(n_heads))
    tables, lines, best = [], [], []
    for kind in kinds:
        rows, cols, causal = _labels(kind.rows), _labels(kind.cols), _causal(kind)
        body = []
        for layer in layers:
            found = []
            for h in heads:
                found += [(w, f"head {h}: {_fmt_link(w, a, b)}") for w, a, b in
                          _links(kind.layers[layer][0, h], rows, cols, 3, causal)]
            found.sort(key=lambda x: -x[0])
            body.append([f"layer {layer}"] + [text for _, text in found[:3]] + [""] * (3 - len(found[:3])))
            if found:
                best.append((found[0][0], kind, layer, found[0][1]))
        caption = (f"{kind.name + ': ' if kind.name else ''}the three strongest links of each layer, "
                   f"over heads {heads[0]}–{heads[-1]}")
        tables.append(_table(caption, ["layer", "strongest", "second", "third"], body))
        lines.append(caption + ":")
        lines += [f"  {r[0]}: {'; '.join(c for c in r[1:] if c)}" for r in body]
    sentence = (f"In words: this model view shows {_count(len(layers), 'layer')} × "
                f"{_count(len(heads), 'head')}")
    if best:
        w, kind, layer, text = max(best, key=lambda x: x[0])
        sentence += (f"; its strongest link is in layer {layer}, {text}"
                     + (f" ({_attention_name(kind)})" if kind.name else ""))
    sentence += "."
    return _assemble(sentence, "The strongest links of every layer, as a table", tables, lines)


def _assemble(sentence, summary, tables, lines):
    body = "".join(tables)
    markup = (f'<div class="bertviz-text" style="margin:6px 0;max-width:60em">'
              f'<p style="margin:4px 0">{html.escape(sentence)} {html.escape(KEYBOARD_NOTE)}</p>'
              f"<details><summary>{html.escape(summary)}</summary>{body}</details></div>\n")
    return TextAlternative(markup, "\n".join([sentence] + lines))


def kinds_from(self_layers=None, tokens=None, encoder=None, decoder=None, cross=None,
               src_tokens=None, tgt_tokens=None):
    """The kinds of attention a view shows, in bertviz's order (its menu's first is shown)."""
    if self_layers is not None:
        return [Kind("", self_layers, tokens, tokens)]
    out = []
    if encoder is not None:
        out.append(Kind("Encoder", encoder, src_tokens, src_tokens))
    if decoder is not None:
        out.append(Kind("Decoder", decoder, tgt_tokens, tgt_tokens))
    if cross is not None:
        out.append(Kind("Cross", cross, tgt_tokens, src_tokens))
    return out

