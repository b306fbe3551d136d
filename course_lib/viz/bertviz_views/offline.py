"""Making bertviz's HTML render offline: the libraries inlined, a require.js shim, a fitted SVG.

bertviz 1.4.1 writes `<script src="https://cdnjs…/require.min.js">` into its HTML and
asks require.js to fetch d3 and jQuery from a CDN. With no network the view stays
blank (in JupyterLab: "require is not defined"). `page` keeps bertviz's own HTML and
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
the width available, and the head view's colour squares get their head numbers. The
shim is JavaScript kept beside the Python that patches the HTML around it: apart, the
two would drift.
"""
from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

VIEWS = ("head", "model", "neuron")
D3_VERSION, JQUERY_VERSION = "5.7.0", "3.7.1"
_REQUIRE_TAG = re.compile(r'<script src="https://cdnjs\.cloudflare\.com/ajax/libs/require\.js/[^"]*"></script>')
_SCRIPT = re.compile(r'<script type="text/javascript">\n(.*)\n</script>\s*$', re.S)
_VIS_ID = re.compile(r"bertviz-[0-9a-f]{32}")
# bertviz's JS starts with require.config({paths: {d3: CDN, jquery: CDN}}): dropped, so no
# URL is left in the page at all.
_REQUIRE_CONFIG = re.compile(r"require\.config\(\{\s*paths:\s*\{[^}]*\}\s*\}\);")


def package_dir(name):
    spec = importlib.util.find_spec(name)   # locate without importing it
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the package providing `{name}` is not installed; "
                           "it is in requirements.txt — run `make lab` (or pip install -r requirements.txt)")
    return Path(list(spec.submodule_search_locations)[0])


@functools.lru_cache(maxsize=1)
def offline_libraries():
    """(d3 source, jQuery source) read from the installed packages, versions checked."""
    d3_path = package_dir("mpld3") / "js" / "d3.v5.min.js"
    jq_path = package_dir("xstatic.pkg.jquery") / "data" / "jquery.min.js"
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


def page(vis_html, vis_id, view_js, decimals, view, text_html=""):
    """The view's HTML fragment: its div (drop-downs named), one inline script that holds
    d3, jQuery, the shim and bertviz's view script (require.config dropped, floats
    shortened), then `text_html`, the view's text alternative."""
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
            f'<script type="text/javascript">\n{script}\n</script>\n{text_html}')


def split_bertviz_html(html):
    """bertviz's returned HTML -> (the view's div, its id, its view script).

    bertviz 1.4.1 returns a require.js <script src> from a CDN, the view's div, and one
    inline script; anything else means another version, which this module was not made for.
    """
    tag = _REQUIRE_TAG.search(html)
    script = _SCRIPT.search(html)
    vis_id = _VIS_ID.search(html)
    if tag is None or script is None or vis_id is None:
        raise RuntimeError("bertviz's HTML does not have the layout of bertviz 1.4.1 "
                           "(require.js tag, view div, one script); check the installed version")
    return html[tag.end():script.start()].strip(), vis_id.group(0), script.group(1)
