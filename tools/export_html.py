"""Export lessons to HTML pages that read offline, without Jupyter.

    python tools/export_html.py notebooks/*.ipynb --out build/html

Each lesson becomes `<out>/<lesson>.html`, next to an `index.html` that lists them
and a `mathjax/` folder. Nothing on the pages is fetched from the network:

- **Figures** (PNG outputs) are embedded in the page as base64, and so are images
  that the prose references (`embed_images`). A figure's `alt` is its description
  (`course_lib.viz.describe`: the output's `text/html`; an explorer's picture takes
  its caption's text), never nbconvert's placeholder.
- **Accessibility**: code is highlighted in accessible-pygments' high-contrast style
  and prompts darkened (WCAG AA contrast); tests/test_accessibility.py audits the pages
  with axe-core.
- **LaTeX** is typeset by MathJax 2.7.9 copied from the installed
  `jupyter-server-mathjax` package into `<out>/mathjax/` (nbconvert's default
  loads MathJax from a CDN).
- **Widgets** need a kernel to move. nbconvert would embed the saved widget
  state and load the widget manager from a CDN, which offline renders nothing.
  Instead each widget view is replaced by what it showed when the notebook was
  executed: the figure(s) of its output area, the values of its controls, and a
  note that it is interactive in JupyterLab. tqdm progress bars become a static
  bar.
- **bertviz views** made with `course_lib.bertviz_views.show` are self-contained
  HTML (d3 and jQuery inlined), so they run as they are.
- require.js, the widget manager and mermaid.js are dropped from nbconvert's
  `lab` template, and every page is checked: a `<script src>`, `<link href>`,
  `<img src>`, CSS `url(...)` or `import(...)` that points at http(s) is an error.

Links between lessons (`02_attention.ipynb`) point at the exported pages; the Colab
set-up cell (tagged `colab-setup`) is left out.
`--hide-solutions` replaces each `### BEGIN SOLUTION` region by the student
stub (outputs kept), for a copy to hand to a class.

Exit status: 0 when every page was written; 1 (one line per problem on stderr)
when an argument is not a notebook, or a page would need the network.
"""
from __future__ import annotations

import argparse
import base64
import html
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat

from course_lib.console import utf8_output

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MATHJAX_PACKAGE = "jupyter_server_mathjax"
MATHJAX_DIR = "mathjax"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
STATIC_NOTE = "Interactive in JupyterLab"

# nbconvert's `lab` template without the pieces that come from a CDN. MathJax 2 is
# configured before it loads (text/x-mathjax-config) and uses the STIX-Web web fonts
# that jupyter-server-mathjax ships (it has no TeX fonts); no image fonts.
TEMPLATE_NAME = "course_offline.html.j2"
TEMPLATE = r"""{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}
<script type="text/x-mathjax-config">
MathJax.Hub.Config({
  TeX: {equationNumbers: {autoNumber: "AMS", useLabelIds: true}},
  tex2jax: {inlineMath: [['$', '$'], ['\\(', '\\)']], displayMath: [['$$', '$$'], ['\\[', '\\]']],
            processEscapes: true, processEnvironments: true},
  displayAlign: 'center',
  messageStyle: 'none',
  menuSettings: {locale: 'en'},
  "HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null,
               linebreaks: {automatic: true},
               // MathJax's font probe is an @font-face at url('about:blank'), which a page
               // opened from file:// reports as a failed (CORS) request.
               styles: {"@font-face": {"font-family": "MathJax_Blank", src: "local('MathJax Blank')"}}}
});
MathJax.Hub.Queue(function () { document.body.setAttribute("data-mathjax", "done"); });
</script>
<script src="{{ resources.mathjax_url }}"></script>
{%- endblock html_head_js_mathjax -%}
{% block extra_css %}
<style type="text/css">
.course-static-widget { border-left: 3px solid var(--jp-brand-color1, #1976d2); padding: 4px 10px; margin: 4px 0; }
.course-static-widget-note { font-size: 0.9em; color: var(--jp-ui-font-color2, #555); }
.course-static-widget-note b { color: var(--jp-ui-font-color1, #222); }
.course-static-progress progress { vertical-align: middle; margin: 0 6px; }
/* MathJax's hidden MathML copy (for screen readers) asks for TeX fonts that the
   offline MathJax does not ship (\mathbb -> MathJax_AMS-WEB); it needs no font. */
.MJX_Assistive_MathML [mathvariant] { font-family: inherit !important; }
.course-caption { font-size: 0.9em; color: #333; margin: 0.25em 0; }
/* WCAG 2.1 AA contrast (4.5:1): JupyterLab's prompts and code colours fall short on the
   cell background; the code takes accessible-pygments' high-contrast light style. */
.jp-Notebook .jp-InputPrompt, .jp-Notebook .jp-OutputPrompt { color: #3a3a3a !important; opacity: 1 !important; }
.jp-Notebook .ansi-red-fg { color: #a4161a !important; }
.jp-Notebook .ansi-green-fg { color: #1e6b1e !important; }
.jp-Notebook .ansi-cyan-fg { color: #0b5f6b !important; }
.jp-Notebook .ansi-yellow-fg { color: #6b5000 !important; }
.jp-Notebook .ansi-blue-fg { color: #1a4fa0 !important; }
.jp-Notebook .ansi-magenta-fg { color: #8b1c8b !important; }
.jp-Notebook pre span[style*="color"] { color: #2f4f4f !important; }   /* 256-colour ANSI, inline */
{{ resources.course_code_css }}
</style>
{% endblock extra_css %}
"""

# What may not appear in a page: anything that makes the browser fetch http(s).
_EXTERNAL = [
    re.compile(r"<script\b[^>]*\bsrc\s*=\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"<link\b[^>]*\bhref\s*=\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"<(?:img|iframe|source|video|audio|embed)\b[^>]*\bsrc\s*=\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"url\(\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"@import\s+[\"']\s*(?:https?:)?//", re.I),
    re.compile(r"\bimport\(\s*[\"'](?:https?:)?//", re.I),
]
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)


class ExportError(Exception):
    """A notebook that cannot be exported to an offline page."""


# ----------------------------------------------------------------------------- checks
def external_references(page: str) -> list[str]:
    """Snippets of `page` that would make a browser fetch something over http(s).

    Plain links (`<a href="https://...">`) are not counted: nothing is fetched
    until the reader clicks them.
    """
    text = _CSS_COMMENT.sub("", page)
    found = []
    for pattern in _EXTERNAL:
        for m in pattern.finditer(text):
            found.append(text[m.start():m.start() + 120].split("\n")[0])
    return found


# ----------------------------------------------------------------------------- MathJax
def mathjax_source() -> Path:
    """The MathJax 2 folder shipped by the installed jupyter-server-mathjax package."""
    spec = importlib.util.find_spec(MATHJAX_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ExportError("jupyter-server-mathjax is not installed (it ships the MathJax the "
                          "pages use offline); it is in requirements.txt: run `make setup`")
    static = Path(list(spec.submodule_search_locations)[0]) / "static"
    if not (static / "MathJax.js").is_file():
        raise ExportError(f"{static}/MathJax.js is missing: reinstall jupyter-server-mathjax")
    return static


def copy_mathjax(out: Path) -> Path:
    """Copy MathJax next to the pages (once; again only when the package changed)."""
    src = mathjax_source()
    dest = out / MATHJAX_DIR
    stamp = dest / ".copied-from"
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == str(src):
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    # The SVG folder holds only fonts (the combined config has no SVG output jax).
    shutil.copytree(src, dest, ignore=lambda d, names: ["SVG"] if Path(d).name == "output" else [])
    stamp.write_text(str(src), encoding="utf-8")
    return dest


# ----------------------------------------------------------------------------- widgets
def _ref(value):
    return value[len("IPY_MODEL_"):] if isinstance(value, str) and value.startswith("IPY_MODEL_") else None


def _fmt(value, spec=None):
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        try:
            return format(value, spec) if spec else f"{value:.4g}"
        except (ValueError, TypeError):
            return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "–".join(_fmt(v, spec) for v in value)
    return str(value)


_BOXES = {"VBoxModel", "HBoxModel", "BoxModel", "GridBoxModel", "TabModel", "AccordionModel",
          "StackModel"}
_SELECTIONS = {"DropdownModel", "SelectionSliderModel", "ToggleButtonsModel", "RadioButtonsModel",
               "SelectModel", "SelectionRangeSliderModel", "SelectMultipleModel"}
_VALUE_CONTROLS = {"IntSliderModel", "FloatSliderModel", "FloatLogSliderModel", "IntRangeSliderModel",
                   "FloatRangeSliderModel", "CheckboxModel", "ToggleButtonModel", "IntTextModel",
                   "FloatTextModel", "BoundedIntTextModel", "BoundedFloatTextModel", "TextModel",
                   "TextareaModel", "ComboboxModel", "ColorPickerModel", "DatePickerModel", "PlayModel"}


class StaticWidget:
    """One saved widget view -> plain notebook outputs (HTML note + the output area's outputs)."""

    def __init__(self, state: dict):
        self.state = state

    def model(self, model_id):
        m = self.state.get(model_id)
        return (m.get("model_name", ""), m.get("state", {})) if m else (None, {})

    def buffer(self, model_id, key):
        """A saved binary value (an Image's picture) as base64 text, or None."""
        for b in (self.state.get(model_id) or {}).get("buffers", []):
            if list(b.get("path", [])) == [key] and b.get("encoding") == "base64":
                return b.get("data")
        return None

    def convert(self, model_id: str) -> list:
        self.controls, self.items, self.alt = [], [], None
        self._walk(model_id, depth=0)
        outputs = []
        if self.controls:
            values = ", ".join(f"<b>{html.escape(label)}</b> = {html.escape(value)}"
                               for label, value in self.controls)
            outputs.append(_html_output(
                f'<div class="course-static-widget course-static-widget-note">{STATIC_NOTE}: '
                f"this page shows the view saved when the lesson was run, with {values}. "
                "Open the notebook in JupyterLab to move the controls.</div>"))
        fragments = []
        for kind, item in self.items:
            if kind == "html":
                fragments.append(item)
                continue
            if fragments:
                outputs.append(_html_output("".join(fragments)))
                fragments = []
            outputs.append(item)
        if fragments:
            outputs.append(_html_output("".join(fragments)))
        if not outputs:
            outputs.append(_html_output(f'<div class="course-static-widget course-static-widget-note">'
                                        f"{STATIC_NOTE}: run the notebook to see this widget.</div>"))
        return outputs

    def _walk(self, model_id, depth):
        name, st = self.model(model_id)
        if name is None or depth > 20:
            return
        if name in _BOXES:
            children = [c for c in (_ref(x) for x in st.get("children", [])) if c]
            captions = [self.model(c)[1].get("text") for c in children if self.model(c)[0] == "AnyModel"]
            if any(captions):           # an explorer: its picture's alt is its caption
                self.alt = next(c for c in captions if c)
            if name == "HBoxModel" and not any(self._has_output(c) for c in children):
                self.items.append(("html", self._inline_row(children)))
                return
            for c in children:
                self._walk(c, depth + 1)
        elif name == "OutputModel":
            for out in st.get("outputs", []):
                self.items.append(("output", nbformat.from_dict(out)))
        elif name == "ImageModel":             # an explorer's figure (course_lib/widgets/_wiring.py)
            data, fmt = self.buffer(model_id, "value"), st.get("format", "png")
            if data and fmt in ("png", "jpeg", "gif"):
                shown = {f"image/{fmt}": data, "text/plain": "<figure>"}
                if self.alt:                # nbconvert writes its placeholder on an <img> without alt
                    shown["text/html"] = (f'<img src="data:image/{fmt};base64,{data}" '
                                          f'alt="{html.escape(self.alt, quote=True)}"/>')
                self.items.append(("output", nbformat.v4.new_output("display_data", data=shown)))
        elif name == "AnyModel" and st.get("text"):     # an explorer's caption (widgets/_caption.py)
            self.items.append(("html", f'<p class="course-caption">{html.escape(st["text"])}</p>'))
        elif name in ("HTMLModel", "HTMLMathModel", "LabelModel"):
            frag = self._leaf_html(name, st)
            if frag:
                self.items.append(("html", f"<div>{frag}</div>"))
        elif name in ("FloatProgressModel", "IntProgressModel"):
            self.items.append(("html", f'<div class="course-static-progress">{self._leaf_html(name, st)}</div>'))
        elif name in _SELECTIONS or name in _VALUE_CONTROLS:
            label = re.sub(r"<[^>]+>", "", st.get("description") or "") or "value"
            self.controls.append((label, self._value(name, st)))

    def _has_output(self, model_id, depth=0):
        name, st = self.model(model_id)
        if name in ("OutputModel", "ImageModel"):
            return True
        return depth < 20 and any(self._has_output(c, depth + 1)
                                  for c in (_ref(x) for x in st.get("children", [])) if c)

    def _inline_row(self, children):
        parts = []
        for c in children:
            name, st = self.model(c)
            frag = self._leaf_html(name, st) if name else ""
            if frag:
                parts.append(frag)
            elif name in _SELECTIONS or name in _VALUE_CONTROLS:
                label = re.sub(r"<[^>]+>", "", st.get("description") or "") or "value"
                self.controls.append((label, self._value(name, st)))
        return f'<div class="course-static-progress">{" ".join(parts)}</div>'

    @staticmethod
    def _leaf_html(name, st):
        if name in ("HTMLModel", "HTMLMathModel"):
            return st.get("value") or ""
        if name == "LabelModel":
            return html.escape(st.get("value") or "")
        if name in ("FloatProgressModel", "IntProgressModel"):
            lo, hi, v = st.get("min", 0), st.get("max", 100), st.get("value", 0)
            return f'<progress value="{v - lo}" max="{hi - lo}"></progress>'
        return ""

    @staticmethod
    def _value(name, st):
        if name in _SELECTIONS:
            labels = st.get("_options_labels", [])
            idx = st.get("index")
            if isinstance(idx, int) and 0 <= idx < len(labels):
                return labels[idx]
            if isinstance(idx, (list, tuple)):
                return ", ".join(labels[i] for i in idx if 0 <= i < len(labels))
            return "—"
        value = st.get("value")
        if name in ("TextModel", "TextareaModel", "ComboboxModel") and isinstance(value, str) and len(value) > 60:
            value = value[:57] + "…"
        return _fmt(value, st.get("readout_format"))


def _html_output(fragment: str):
    return nbformat.v4.new_output("display_data", data={"text/html": fragment})


def replace_widgets(nb) -> int:
    """Replace every widget view output of `nb` by its static rendering; drop the state.

    Returns the number of views replaced.
    """
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    static = StaticWidget(state)
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        new = []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                new.append(out)
                continue
            new.extend(static.convert(view.get("model_id", "")))
            count += 1
        cell.outputs = new
    nb.metadata.pop("widgets", None)
    return count


# ----------------------------------------------------------------------------- export
def _title(nb, fallback):
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return fallback


def _check_notebook(path: Path) -> nbformat.NotebookNode:
    if path.suffix != ".ipynb":
        raise ExportError(f"{path}: not a notebook (expected a .ipynb file)")
    if not path.is_file():
        raise ExportError(f"{path}: no such notebook")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as e:  # nbformat raises several kinds on a corrupt file
        raise ExportError(f"{path}: not a readable notebook ({type(e).__name__}: {e})".split("\n")[0])


def _mermaid_used(nb):
    return any("```mermaid" in c.source for c in nb.cells if c.cell_type == "markdown") or any(
        "text/vnd.mermaid" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))


_IMG_SRC = re.compile(r'(<img\b[^>]*?\bsrc=")([^"]+)(")', re.I)
_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
                ".svg": "image/svg+xml", ".webp": "image/webp"}


def embed_local_images(body: str, path: Path) -> str:
    """Embed images the prose references by a relative path (`../assets/x.svg`).

    nbconvert's `embed_images` only embeds files inside the notebook's own folder; the
    lessons keep their figures in ../assets. A missing file is an error: the page
    would show a broken image.
    """
    def embed(m):
        src = html.unescape(m.group(2))
        if re.match(r"(?:[a-z][a-z0-9+.-]*:|//|#)", src, re.I):   # data:, http:, //host, #anchor
            return m.group(0)
        file = (path.parent / src.split("?")[0].split("#")[0]).resolve()
        kind = _IMAGE_TYPES.get(file.suffix.lower())
        if kind is None or not file.is_file():
            raise ExportError(f"{path}: the image {src!r} is not an image file next to the lesson")
        data = base64.b64encode(file.read_bytes()).decode("ascii")
        return f"{m.group(1)}data:{kind};base64,{data}{m.group(3)}"
    return _IMG_SRC.sub(embed, body)


CODE_STYLE = "a11y-high-contrast-light"     # accessible-pygments: AA contrast for every token


def code_css(style=CODE_STYLE) -> str:
    """CSS for nbconvert's highlighted code in the accessible-pygments `style`, scoped so
    that it wins over the lab template's colours."""
    from pygments.formatters import HtmlFormatter

    formatter = HtmlFormatter(style=style)
    background = formatter.style.background_color
    rules = formatter.get_style_defs(".jp-Notebook .highlight")
    return (rules + f"\n.jp-Notebook .jp-InputArea-editor, .jp-Notebook .highlight, "
            f".jp-Notebook .highlight pre {{ background: {background}; color: #1a1a1a; }}")


def _exporter():
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", extra_loaders=[DictLoader({TEMPLATE_NAME: TEMPLATE})],
                        template_file=TEMPLATE_NAME, embed_images=True,
                        mathjax_url=f"{MATHJAX_DIR}/MathJax.js?config={MATHJAX_CONFIG}")


def export_notebook(nb, path: Path, out: Path, lesson_names=(), hide_solutions=False, exporter=None) -> Path:
    """Write `out/<stem>.html` for the notebook `nb` read from `path`; returns the page's path."""
    nb = nbformat.from_dict(nb)  # the caller's copy stays as it was
    if _mermaid_used(nb):
        raise ExportError(f"{path}: mermaid diagrams need mermaid.js from a CDN; use an SVG in assets/")
    if hide_solutions:
        from course_lib.classroom.student import BEGIN, strip_solutions
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and BEGIN in cell.source:
                cell.source = strip_solutions(cell.source, f"{path}, cell {i}")
    # The Colab set-up cell (tools/colab_cell.py) means nothing to a reader of the page.
    nb.cells = [c for c in nb.cells if "colab-setup" not in c.get("metadata", {}).get("tags", [])]
    replace_widgets(nb)
    exporter = exporter or _exporter()
    body, _ = exporter.from_notebook_node(
        nb, resources={"metadata": {"name": _title(nb, path.stem), "path": str(path.parent)},
                       "course_code_css": code_css()})
    for name in lesson_names:   # links between lessons -> the exported pages
        body = re.sub(r'(href="(?:\./)?)' + re.escape(name) + r'\.ipynb(#[^"]*)?"',
                      lambda m: f'{m.group(1)}{name}.html{m.group(2) or ""}"', body)
    body = embed_local_images(body, path)
    bad = external_references(body)
    if bad:
        raise ExportError(f"{path}: the page would load {len(bad)} resource(s) from the network, "
                          f"e.g. {bad[0]!r}")
    page = out / f"{path.stem}.html"
    page.write_text(body, encoding="utf-8")
    return page


def write_index(out: Path) -> Path:
    """index.html listing every lesson page in `out` (also those exported earlier)."""
    entries = []
    for page in sorted(out.glob("*.html")):
        if page.name == "index.html":
            continue
        m = re.search(r"<title>(.*?)</title>", page.read_text(encoding="utf-8")[:4000], re.S)
        entries.append((page.name, html.unescape(m.group(1).strip()) if m else page.stem))
    rows = "\n".join(f'<li><a href="{html.escape(name)}">{html.escape(title)}</a></li>'
                     for name, title in entries)
    index = out / "index.html"
    index.write_text("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<title>Transformers, hands-on</title>\n<style>body{font-family:sans-serif;"
                     "max-width:46em;margin:2em auto;line-height:1.6}</style></head><body>\n"
                     "<h1>Transformers, hands-on</h1>\n<p>The lessons as pages to read without "
                     "Jupyter. Figures and the widgets' saved views are included; to move the "
                     "sliders and solve the exercises, open the notebooks in JupyterLab.</p>\n"
                     f"<ul>\n{rows}\n</ul>\n</body></html>\n", encoding="utf-8")
    return index


def export(paths, out: Path, hide_solutions=False) -> list[Path]:
    """Export every notebook in `paths` to `out`, plus index.html and mathjax/."""
    paths = [Path(p) for p in paths]
    notebooks = [(p, _check_notebook(p)) for p in paths]   # all checked before anything is written
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    copy_mathjax(out)
    names = [p.stem for p in paths]
    exporter = _exporter()
    pages = [export_notebook(nb, p, out, names, hide_solutions, exporter) for p, nb in notebooks]
    write_index(out)
    return pages


def main(argv=None) -> int:
    utf8_output()                # it prints "—" and file names: any console, any locale
    ap = argparse.ArgumentParser(
description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("build/html"), help="folder for the pages (default build/html)")
    ap.add_argument("--hide-solutions", action="store_true",
                    help="replace each solution region by the student stub (outputs kept)")
    args = ap.parse_args(argv)
    try:
        pages = export(args.notebooks, args.out, args.hide_solutions)
    except ExportError as e:
        print(f"export_html: {e}", file=sys.stderr)
        return 1
    for page in pages:
        print(f"{page} ({page.stat().st_size / 1e6:.1f} MB)")
    print(f"{len(pages)} page(s) in {args.out}/ — open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
