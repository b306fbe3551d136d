"""`show`: attention weights -> one bertviz view (head, model or neuron) as offline HTML.

Each call returns the *whole* view as one HTML output (about 0.35 MB, mostly the two
libraries that offline.py inlines), so a saved notebook shows it again after a reload,
with no "enable once per notebook" cell that could be skipped; after the view comes its
text alternative (text.py), which is also the output's `text/plain`.

Works for any attention you have as per-layer tensors `(batch, h, n_q, n_k)`:
`course_lib.nn.models.collect_attention(model, ...)` for the course's models (encoder,
decoder, encoder-decoder with cross-attention) and `outputs.attentions` of a Hugging
Face model loaded with `output_attentions=True`.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path

import torch
from IPython.display import HTML

from . import text
from .offline import VIEWS, package_dir, page, split_bertviz_html

__all__ = ["show", "BertvizView"]


class BertvizView(HTML):
    """A bertviz view as self-contained HTML: displays in a notebook, saves to a file.

    `.data` is the HTML fragment (the view's div, one inline script, then its text
    alternative); `.view` is "head", "model" or "neuron"; `.vis_id` the random
    `bertviz-<hex32>` id of its div; `.text` the view in words (text.py), which is also
    its `text/plain` form.
    """

    def __init__(self, data, view, vis_id, text=""):
        super().__init__(data)
        self.view, self.vis_id, self.text = view, vis_id, text

    def save(self, path):
        """Write a standalone HTML page with this view; returns the path."""
        path = Path(path)
        path.write_text("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                        f"<title>bertviz {self.view} view</title></head>\n<body>\n{self.data}\n"
                        "</body></html>\n", encoding="utf-8")
        return path

    def __repr__(self):
        head = f"<BertvizView {self.view} view, {len(self.data) / 1e6:.2f} MB of HTML>"
        return f"{head}\n{self.text}" if self.text else head




# ----------------------------------------------------------------------------- inputs
def _check_layers(name, layers):
    if isinstance(layers, torch.Tensor) or not isinstance(layers, (list, tuple)) or not layers:
        raise ValueError(f"{name} must be a non-empty list of per-layer tensors "
                         f"(batch, h, n_q, n_k), got {type(layers).__name__}")
    for i, a in enumerate(layers):
        if not isinstance(a, torch.Tensor) or a.dim() != 4:
            shape = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__
            raise ValueError(f"{name}[{i}] must be a tensor (batch, h, n_q, n_k), got {shape}")
    return layers


def _one_example(name, layers, batch_index, decimals):
    """Per-layer (batch, h, n_q, n_k) -> per-layer (1, h, n_q, n_k), rounded float64.

    Rounding keeps the HTML small and its numbers reproducible to the printed digits.
    """
    _check_layers(name, layers)
    batch = layers[0].shape[0]
    if not -batch <= batch_index < batch:
        raise ValueError(f"batch_index={batch_index} is out of range for {name} with batch size {batch}")
    return [a.detach()[batch_index][None].double().cpu().round(decimals=decimals) for a in layers]


def _check_tokens(name, tokens, n):
    if tokens is None:
        raise ValueError(f"{name} is required: one label per position ({n} of them)")
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"{name} has {len(tokens)} entries but the attention has {n} positions")
    return tokens


def _split(attention):
    """attention (list, or dict from collect_attention) -> (self_layers or None, enc, dec, cross)."""
    if isinstance(attention, dict):
        unknown = set(attention) - {"encoder", "decoder", "cross"}
        if unknown:
            raise ValueError(f"attention dict has unknown keys {sorted(unknown)}; "
                             "expected 'encoder', 'decoder', 'cross' (as from collect_attention)")
        kinds = {k: v for k, v in attention.items() if v is not None}
        if not kinds:
            raise ValueError("attention dict is empty")
        if len(kinds) == 1 and "cross" not in kinds:
            return next(iter(kinds.values())), None, None, None
        return None, kinds.get("encoder"), kinds.get("decoder"), kinds.get("cross")
    return attention, None, None, None


# ----------------------------------------------------------------------------- views
def show(view, attention, tokens=None, *, src_tokens=None, tgt_tokens=None, queries=None, keys=None,
         batch_index=0, decimals=3, display_mode="light", **options):
    """Render one bertviz view as self-contained, offline HTML.

    view: "head" (lines between tokens, one colour per head), "model" (a thumbnail
        per layer and head) or "neuron" (how q · k builds each weight; self-attention only).
    attention: one tensor (batch, h, n_q, n_k) per layer, first layer first — e.g.
        `collect_attention(model, ...)["encoder"]` or a Hugging Face model's
        `outputs.attentions` — with `tokens` (n labels); or the whole dict from
        `collect_attention` of an encoder-decoder ({"encoder", "decoder", "cross"}),
        with `src_tokens` (n_src labels) and `tgt_tokens` (n_tgt labels).
    queries, keys: for the neuron view, one tensor (batch, h, n, d_k) per layer, as
        returned by `collect_queries_keys`.
    batch_index: which example of the batch to show (bertviz shows one).
    decimals: attention weights are rounded to this many decimals in the HTML.
    display_mode: "light" or "dark" (model and neuron views).
    options: passed to bertviz (head view: layer, heads, include_layers;
        model view: include_layers, include_heads; neuron view: layer, head).

    Returns a BertvizView; as the last expression of a cell it displays the view.
    """
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    if display_mode not in ("light", "dark"):
        raise ValueError(f"display_mode must be 'light' or 'dark', got {display_mode!r}")
    if not isinstance(decimals, int) or not 1 <= decimals <= 8:
        raise ValueError(f"decimals must be an int from 1 to 8, got {decimals!r}")
    self_layers, enc, dec, cross = _split(attention)

    if view == "neuron":
        if self_layers is None:
            raise ValueError("the neuron view shows self-attention only; pass one kind of attention "
                             "(e.g. attention['encoder']) with its queries and keys")
        return _neuron_view(self_layers, tokens, queries, keys, batch_index, decimals, display_mode, options)

    import bertviz  # heavy: only when a view is made

    if self_layers is not None:
        layers = _one_example("attention", self_layers, batch_index, decimals)
        n_q, n_k = layers[0].shape[-2:]
        if n_q != n_k:
            raise ValueError(f"self-attention must be square, got n_q={n_q}, n_k={n_k}; "
                             "for cross-attention pass the dict from collect_attention")
        kwargs = dict(attention=layers, tokens=_check_tokens("tokens", tokens, n_q))
        kinds = text.kinds_from(layers, kwargs["tokens"])
    else:
        if tokens is not None:
            raise ValueError("for an encoder-decoder pass src_tokens and tgt_tokens, not tokens")
        kwargs = {}
        n_src = n_tgt = None
        if enc is not None:
            kwargs["encoder_attention"] = _one_example("attention['encoder']", enc, batch_index, decimals)
            n_src = kwargs["encoder_attention"][0].shape[-1]
        if dec is not None:
            kwargs["decoder_attention"] = _one_example("attention['decoder']", dec, batch_index, decimals)
            n_tgt = kwargs["decoder_attention"][0].shape[-1]
        if cross is not None:
            kwargs["cross_attention"] = _one_example("attention['cross']", cross, batch_index, decimals)
            n_tgt, n_src = kwargs["cross_attention"][0].shape[-2:]
        if n_src is not None:
            kwargs["encoder_tokens"] = _check_tokens("src_tokens", src_tokens, n_src)
        if n_tgt is not None:
            kwargs["decoder_tokens"] = _check_tokens("tgt_tokens", tgt_tokens, n_tgt)
        kinds = text.kinds_from(encoder=kwargs.get("encoder_attention"), decoder=kwargs.get("decoder_attention"),
                                cross=kwargs.get("cross_attention"), src_tokens=kwargs.get("encoder_tokens"),
                                tgt_tokens=kwargs.get("decoder_tokens"))
    if view == "model":
        kwargs["display_mode"] = display_mode
    make = bertviz.head_view if view == "head" else bertviz.model_view
    vis_html, vis_id, view_js = split_bertviz_html(make(**kwargs, **options, html_action="return").data)
    return _view(view, vis_html, vis_id, view_js, decimals, text.describe(view, kinds, options))


def _view(view, vis_html, vis_id, view_js, decimals, words):
    return BertvizView(page(vis_html, vis_id, view_js, decimals, view, words.html), view, vis_id, words.text)


_NEURON_HTML = """<div id="%(vis_id)s" style="padding:8px;font-family:'Helvetica Neue', Helvetica, Arial, sans-serif;">
  <span style="user-select:none">
    <span class="dropdown-label">Layer: </span><select id="layer"></select>
    <span class="dropdown-label">Head: </span> <select id="att_head"></select>
  </span>
  <div id='vis'></div>
</div>"""


def _neuron_view(layers, tokens, queries, keys, batch_index, decimals, display_mode, options):
    """bertviz's neuron view from our own q and k (bertviz's version needs its own BERT copy)."""
    if queries is None or keys is None:
        raise ValueError("the neuron view needs queries and keys: "
                         "`qk = collect_queries_keys(model, ...)`, then show(..., **qk)")
    unknown = set(options) - {"layer", "head"}
    if unknown:
        raise ValueError(f"the neuron view accepts the options layer and head, not {sorted(unknown)}")
    attn = _one_example("attention", layers, batch_index, decimals)
    q = _one_example("queries", queries, batch_index, decimals)
    k = _one_example("keys", keys, batch_index, decimals)
    if not len(attn) == len(q) == len(k):
        raise ValueError(f"got {len(attn)} attention layers, {len(q)} query layers, {len(k)} key layers")
    for i, (a, qi, ki) in enumerate(zip(attn, q, k)):
        if qi.shape[:3] != a.shape[:3] or ki.shape[:3] != a.shape[:3]:
            raise ValueError(f"layer {i}: queries {tuple(qi.shape)} and keys {tuple(ki.shape)} do not "
                             f"match attention {tuple(a.shape)} in (batch, h, n)")
    n = attn[0].shape[-1]
    labels = _check_tokens("tokens", tokens, n)
    # Causal (decoder) attention has nothing above the diagonal; bertviz then greys out
    # the keys a query may not see.
    causal = all(torch.triu(a[0], diagonal=1).abs().max() == 0 for a in attn) if n > 1 else False
    vis_id = f"bertviz-{uuid.uuid4().hex}"
    params = {
        "attention": {"all": {
            "attn": [a[0].tolist() for a in attn],
            "left_text": labels, "right_text": labels,
            "queries": [x[0].tolist() for x in q], "keys": [x[0].tolist() for x in k],
        }},
        "default_filter": "all", "root_div_id": vis_id, "bidirectional": not causal,
        "display_mode": display_mode, "layer": options.get("layer"), "head": options.get("head"),
    }
    js_path = package_dir("bertviz") / "neuron_view.js"
    js = js_path.read_text(encoding="utf-8")
    marker = "const params = window.bertviz_params"
    if marker not in js:
        raise RuntimeError(f"{js_path} does not read window.bertviz_params; check the bertviz version")
    js = js.replace(marker, "const params = " + json.dumps(params))
    words = text.describe("neuron", text.kinds_from(attn, labels), options)
    return _view("neuron", _NEURON_HTML % {"vis_id": vis_id}, vis_id, js, decimals, words)


