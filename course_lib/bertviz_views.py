"""Attention weights -> bertviz views that render offline (lessons 08, 09, 10, 11).

Length: about 100 of its lines are the JavaScript shim, which only works with the HTML
this module patches around it; apart, the two would drift.

bertviz 1.4.1 writes `<script src="https://cdnjs…/require.min.js">` into its HTML and
asks require.js to fetch d3 and jQuery from a CDN. With no network the view stays
blank (in JupyterLab: "require is not defined"). `show` keeps bertviz's own HTML and
JavaScript but replaces that loader by

- d3 v5.7.0, read from the installed `mpld3` package (`mpld3/js/d3.v5.min.js`),
- jQuery 3.7.1, read from the installed `xstatic-jquery` package,

both inlined, plus a ten-line `require`/`requirejs` shim that hands them to bertviz's
code. Nothing is fetched and nothing is committed: the libraries are read from the
packages each time a view is made. The libraries are evaluated inside a function
scope, so they neither overwrite the page's own `$`/`d3` nor register with a page's
require.js.

Once bertviz has drawn, the shim also makes the view fit a narrow notebook (a laptop
screen with JupyterLab's file browser open leaves about 900 px): the model view (970 px
wide) and the neuron view (about 1 000 px expanded) get an SVG viewBox and scale down to
the width available, and the head view's colour squares get their head numbers.

Each call returns the *whole* view as one HTML output (about 0.35 MB, mostly the two
libraries), so a saved notebook shows it again after a reload, with no "enable once
per notebook" cell that could be skipped.

Works for any attention you have as per-layer tensors `(batch, h, n_q, n_k)`:
`course_lib.nn.models.collect_attention(model, ...)` for the course's models (encoder,
decoder, encoder-decoder with cross-attention) and `outputs.attentions` of a Hugging
Face model loaded with `output_attentions=True`.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import re
import uuid
from pathlib import Path

import torch
from IPython.display import HTML

__all__ = ["show", "BertvizView", "collect_queries_keys", "offline_libraries", "VIEWS"]

VIEWS = ("head", "model", "neuron")
D3_VERSION, JQUERY_VERSION = "5.7.0", "3.7.1"
_REQUIRE_TAG = re.compile(r'<script src="https://cdnjs\.cloudflare\.com/ajax/libs/require\.js/[^"]*"></script>')
_SCRIPT = re.compile(r'<script type="text/javascript">\n(.*)\n</script>\s*$', re.S)
_VIS_ID = re.compile(r"bertviz-[0-9a-f]{32}")
# bertviz's JS starts with require.config({paths: {d3: CDN, jquery: CDN}}): dropped, so no
# URL is left in the page at all.
_REQUIRE_CONFIG = re.compile(r"require\.config\(\{\s*paths:\s*\{[^}]*\}\s*\}\);")


# ----------------------------------------------------------------------------- libraries
def _package_dir(name):
    spec = importlib.util.find_spec(name)   # locate without importing it
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the package providing `{name}` is not installed; "
                           "it is in requirements.txt — run `make lab` (or pip install -r requirements.txt)")
    return Path(list(spec.submodule_search_locations)[0])


@functools.lru_cache(maxsize=1)
def offline_libraries():
    """(d3 source, jQuery source) read from the installed packages, versions checked."""
    d3_path = _package_dir("mpld3") / "js" / "d3.v5.min.js"
    jq_path = _package_dir("xstatic.pkg.jquery") / "data" / "jquery.min.js"
    d3, jq = d3_path.read_text(encoding="utf-8"), jq_path.read_text(encoding="utf-8")
    if f"v{D3_VERSION}" not in d3[:200]:
        raise RuntimeError(f"{d3_path} is not d3 v{D3_VERSION}, which bertviz 1.4.1 was written for")
    if f"v{JQUERY_VERSION}" not in jq[:200]:
        raise RuntimeError(f"{jq_path} is not jQuery v{JQUERY_VERSION}")
    for path, src in ((d3_path, d3), (jq_path, jq)):
        if "</script" in src.lower():    # would end the inline <script> early
            raise RuntimeError(f"{path} contains '</script' and cannot be inlined")
    return d3, jq


_SHIM = """(function () {
  // d3 and jQuery, evaluated as CommonJS modules so they stay out of the page's globals.
  var modules = {};
  var m = {exports: {}};
  (function (module, exports, define) {
%(d3)s
  }).call(window, m, m.exports, undefined);
  modules.d3 = m.exports;
  m = {exports: {}};
  (function (module, exports, define) {
%(jquery)s
  }).call(window, m, m.exports, undefined);
  modules.jquery = m.exports;

  // bertviz's require.config(CDN paths) was removed; requirejs(names, callback) gets
  // the inlined modules once the view's div is on the page (JupyterLab may run an
  // output's scripts before attaching it).
  var require = {config: function () {}};
  var requirejs = function (names, callback) {
    var tries = 0;
    (function start() {
      var root = document.getElementById("%(vis_id)s");
      if (root) {
        callback.apply(window, names.map(function (n) { return modules[n]; }));
        tidy(root);
        // bertviz redraws its SVG when the learner picks another layer, head or kind.
        new MutationObserver(function () { tidy(root); }).observe(root, {childList: true, subtree: true});
      } else if (++tries < 400) {
        setTimeout(start, 25);
      }
    })();
  };

  // After bertviz draws: the model and neuron views draw wider than a notebook's output
  // area beside JupyterLab's file browser (970 px; about 1 000 px expanded) and an SVG
  // clips what lies outside its box, so they get a viewBox and scale down to the width
  // available; the head view's colour squares get their head numbers.
  var VIEW = "%(view)s", MARGIN = 24;
  function tidy(root) {
    var svg = root.querySelector("svg");
    if (!svg) return;
    if (VIEW === "head") label_heads(svg);
    else fit(root, svg, 0);
  }
  function fit(root, svg, tries) {
    if (svg.getAttribute("data-fit") || !svg.isConnected) return;
    var right = 0, box;
    for (var i = 0; i < svg.children.length; i++) {
      try { box = svg.children[i].getBBox(); right = Math.max(right, box.x + box.width); } catch (e) {}
    }
    var width = parseFloat(svg.getAttribute("width")), height = parseFloat(svg.getAttribute("height"));
    if (!(right > 0) || !(height > 0)) {          // not laid out yet (hidden tab, off screen)
      if (tries < 200) setTimeout(function () { fit(root, svg, tries + 1); }, 100);
      return;
    }
    // MARGIN px of white right of the drawing: with 2 the last head's edge touched the
    // output area's edge (1 290 of 1 292 px), as if cut off.
    var w = Math.ceil(Math.max(right, svg.getAttribute("width").indexOf("%%") < 0 && width > 0 ? width : 0)) + MARGIN;
    svg.setAttribute("data-fit", String(w));
    svg.setAttribute("viewBox", "0 0 " + w + " " + height);
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    svg.setAttribute("width", "100%%");
    svg.removeAttribute("height");
    svg.style.maxWidth = w + "px";
    svg.style.height = "auto";
    svg.style.display = "block";
  }
  function label_heads(svg) {
    // drawCheckboxes: one 20 x 20 <rect> per head, in a <g> of its own at the top.
    var groups = svg.querySelectorAll(":scope > g");
    for (var g = 0; g < groups.length; g++) {
      var rects = groups[g].querySelectorAll(":scope > rect");
      if (!rects.length || rects.length !== groups[g].children.length) continue;
      if (groups[g].getAttribute("data-labelled")) return;
      groups[g].setAttribute("data-labelled", "1");
      for (var i = 0; i < rects.length; i++) {
        var size = parseFloat(rects[i].getAttribute("width"));
        var t = document.createElementNS("http://www.w3.org/2000/svg", "text");
        t.setAttribute("x", parseFloat(rects[i].getAttribute("x")) + size / 2);
        t.setAttribute("y", parseFloat(rects[i].getAttribute("y")) + size / 2);
        t.setAttribute("text-anchor", "middle");
        t.setAttribute("dominant-baseline", "central");
        t.setAttribute("font-size", "10");
        t.setAttribute("font-family", "sans-serif");
        t.setAttribute("font-weight", "bold");
        t.setAttribute("fill", "#111");
        t.setAttribute("pointer-events", "none");    // clicks still reach the square
        t.setAttribute("class", "head-number");
        t.textContent = String(i);
        groups[g].appendChild(t);
      }
      return;
    }
  }

%(view_js)s
})();"""


def _escape_script(js):
    """Make JavaScript safe inside an inline <script>: `</` -> `<\\/` (same string value)."""
    return js.replace("</", "<\\/")


_LONG_FLOAT = re.compile(r"\d+\.\d{4,}(?:e-?\d+)?")


def _shorten_floats(js, decimals):
    """0.006999999999999999 -> 0.007: rounded float64s printed by `tolist` carry binary noise."""
    return _LONG_FLOAT.sub(lambda m: repr(round(float(m.group()), decimals)), js)


def _drop_duplicate_params(js):
    """bertviz replaces *every* PYTHON_PARAMS, including the one in the comment after
    `const params = PYTHON_PARAMS; // HACK: PYTHON_PARAMS is a template marker...`, so the
    data appears twice; cut that comment."""
    start = js.find("; // HACK: ")
    if start < 0:
        return js
    end = js.find("\n", start)
    return js[:start + 1] + (js[end:] if end >= 0 else "")


# bertviz's drop-downs have a visible "Layer:" text that is not their label: a screen reader
# (and axe-core's select-name rule) finds them unnamed. Each gets the name it shows.
_SELECT_NAMES = {"layer": "Layer", "att_head": "Head", "filter": "Attention (encoder, decoder or cross)"}
_SELECT = re.compile(r'<select id="([A-Za-z_]+)"(?![^>]*aria-label)')


def _name_selects(vis_html):
    return _SELECT.sub(lambda m: f'<select id="{m.group(1)}" '
                                 f'aria-label="{_SELECT_NAMES.get(m.group(1), m.group(1))}"', vis_html)


def _page(vis_html, vis_id, view_js, decimals, view):
    vis_html = _name_selects(vis_html)
    view_js = _shorten_floats(_drop_duplicate_params(view_js), decimals)
    view_js, found = _REQUIRE_CONFIG.subn("", view_js, count=1)
    if found != 1:
        raise RuntimeError("bertviz's view script does not start with require.config(...) as in "
                           "bertviz 1.4.1; check the installed version")
    d3, jq = offline_libraries()
    script = _SHIM % {"d3": d3, "jquery": jq, "vis_id": vis_id, "view": view,
                      "view_js": _escape_script(view_js)}
    # The wrapper names the view (the browser test finds what to measure by it) and scrolls
    # sideways should anything still be wider than the output area.
    return (f'<div data-bertviz-view="{view}" style="max-width:100%;overflow-x:auto">\n{vis_html}\n</div>\n'
            f'<script type="text/javascript">\n{script}\n</script>\n')


class BertvizView(HTML):
    """A bertviz view as self-contained HTML: displays in a notebook, saves to a file.

    `.data` is the HTML fragment (the view's div and one inline script); `.view` is
    "head", "model" or "neuron"; `.vis_id` the random `bertviz-<hex32>` id of its div.
    """

    def __init__(self, data, view, vis_id):
        super().__init__(data)
        self.view, self.vis_id = view, vis_id

    def save(self, path):
        """Write a standalone HTML page with this view; returns the path."""
        path = Path(path)
        path.write_text("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                        f"<title>bertviz {self.view} view</title></head>\n<body>\n{self.data}\n"
                        "</body></html>\n", encoding="utf-8")
        return path

    def __repr__(self):
        return f"<BertvizView {self.view} view, {len(self.data) / 1e6:.2f} MB of HTML>"


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
    if view == "model":
        kwargs["display_mode"] = display_mode
    make = bertviz.head_view if view == "head" else bertviz.model_view
    html = make(**kwargs, **options, html_action="return").data
    return _offline(html, view, decimals)


def _offline(html, view, decimals=3):
    """bertviz's returned HTML -> our offline version (same div, same view script)."""
    tag = _REQUIRE_TAG.search(html)
    script = _SCRIPT.search(html)
    vis_id = _VIS_ID.search(html)
    if tag is None or script is None or vis_id is None:
        raise RuntimeError("bertviz's HTML does not have the layout of bertviz 1.4.1 "
                           "(require.js tag, view div, one script); check the installed version")
    vis_html = html[tag.end():script.start()].strip()
    return BertvizView(_page(vis_html, vis_id.group(0), script.group(1), decimals, view), view, vis_id.group(0))


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
    js_path = _package_dir("bertviz") / "neuron_view.js"
    js = js_path.read_text(encoding="utf-8")
    marker = "const params = window.bertviz_params"
    if marker not in js:
        raise RuntimeError(f"{js_path} does not read window.bertviz_params; check the bertviz version")
    js = js.replace(marker, "const params = " + json.dumps(params))
    return BertvizView(_page(_NEURON_HTML % {"vis_id": vis_id}, vis_id, js, decimals, "neuron"), "neuron", vis_id)


# ----------------------------------------------------------------------------- q and k
def collect_queries_keys(model, *inputs, **kwargs):
    """Run `model(*inputs, **kwargs)` once and return every *self*-attention layer's
    per-head queries and keys, for the neuron view.

    Works for any model built from `course_lib.nn.layers.MultiHeadAttention` (cross-attention
    modules named `cross_attn` are skipped). Returns {"queries": [...], "keys": [...]},
    one tensor (batch, h, n, d_k) per layer, in the order the layers ran.
    """
    from .nn.layers import MultiHeadAttention

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    found = {"queries": [], "keys": []}
    hooks = []

    def keep(kind, mha):
        def hook(module, args, out):
            found[kind].append(mha.split_heads(out).detach())   # (batch, h, n, d_k)
        return hook

    for name, m in model.named_modules():
        if isinstance(m, MultiHeadAttention) and not name.endswith("cross_attn"):
            hooks.append(m.w_q.register_forward_hook(keep("queries", m)))
            hooks.append(m.w_k.register_forward_hook(keep("keys", m)))
    if not hooks:
        raise ValueError(f"{type(model).__name__} has no self-attention MultiHeadAttention modules")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(*inputs, **kwargs)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return found
