"""The page around the lesson: nbconvert's `lab` template made offline and accessible.

- **Template**: nbconvert's `lab` template without require.js, the widget manager and
  mermaid.js (each from a CDN); a solution in a disclosure ("Solution: softmax") inside
  its cell (cells.py cuts the code around it).
- **MathJax** 2.7.9, copied from the installed `jupyter-server-mathjax` package into
  `<out>/mathjax/` (nbconvert's default loads it from a CDN), with its assistive MathML:
  a screen reader gets each formula as MathML (hidden from the eye) rather than the
  glyphs of the visual rendering, whose spans are hidden from it.
- **CSS**: code in accessible-pygments' high-contrast style and darker prompts (WCAG AA
  contrast); the assistive MathML drawn upright, so Chromium's math-auto italics do not
  turn *d* into U+1D451 in what a screen reader is handed.
- **Checks**: a `<script src>`, `<link href>`, `<img src>`, CSS `url(...)` or `import(...)`
  that points at http(s) is an error; images the prose references beside the lessons
  (`../assets/x.svg`) are embedded.
"""
from __future__ import annotations

import base64
import html
import importlib.util
import re
import shutil
from pathlib import Path

MATHJAX_PACKAGE = "jupyter_server_mathjax"
MATHJAX_DIR = "mathjax"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
CODE_STYLE = "a11y-high-contrast-light"     # accessible-pygments: AA contrast for every token


class ExportError(Exception):
    """A notebook that cannot be exported to an offline page."""


# MathJax 2 is configured before it loads (text/x-mathjax-config) and uses the STIX-Web web
# fonts that jupyter-server-mathjax ships (it has no TeX fonts); no image fonts. A cell's
# metadata "course_export" (cells.py) carries its code cut around its solutions.
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
  // Assistive MathML (in the combined configuration; on here whatever a saved menu says):
  // each formula's visual output is aria-hidden, a MathML copy beside it is what assistive
  // technology reads.
  menuSettings: {locale: 'en', assistiveMML: true},
  AssistiveMML: {disabled: false},
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
{% block input %}
{%- set parts = cell.metadata.get("course_export", {}).get("parts") -%}
{%- if parts -%}
<div class="jp-CodeMirrorEditor jp-Editor jp-InputArea-editor" data-type="inline">
<div class="cm-editor cm-s-jupyter">
{%- for part in parts -%}
{%- if part.kind == "code" %}
{{ part.source | highlight_code(metadata=cell.metadata) | clean_html }}
{%- else %}
<details class="course-solution"{% if part.open %} open{% endif %}><summary>{{ part.summary | e }}</summary>
{{ part.source | highlight_code(metadata=cell.metadata) | clean_html }}
</details>
{%- endif -%}
{%- endfor %}
</div>
</div>
{%- else -%}
{{ super() }}
{%- endif -%}
{% endblock input %}
{% block extra_css %}
<style type="text/css">
.course-static-widget { border-left: 3px solid var(--jp-brand-color1, #1976d2); padding: 4px 10px; margin: 4px 0; }
.course-static-widget-note { font-size: 0.9em; color: var(--jp-ui-font-color2, #555); }
.course-static-widget-note b { color: var(--jp-ui-font-color1, #222); }
.course-static-progress progress { vertical-align: middle; margin: 0 6px; }
/* MathJax's hidden MathML copy (for screen readers) asks for TeX fonts that the
   offline MathJax does not ship (\mathbb -> MathJax_AMS-WEB); it needs no font. Chromium
   draws a one-letter <mi> in mathematical italic (text-transform: math-auto) and hands
   that code point (U+1D451 for d) to a screen reader, which spells it: upright here. */
.MJX_Assistive_MathML [mathvariant] { font-family: inherit !important; }
.MJX_Assistive_MathML mi { text-transform: none !important; }
.course-caption { font-size: 0.9em; color: #333; margin: 0.25em 0; }
/* A solution, closed until asked for, between the code before and after it. */
.jp-Notebook details.course-solution { margin: 2px 0 2px -3px; padding: 2px 0; border-left: 3px solid #1a4fa0;
                                       background: #f4f7fb; }
.jp-Notebook details.course-solution > summary { cursor: pointer; color: #1a4fa0; font-weight: bold; padding-left: 4px;
                                                 font-family: var(--jp-ui-font-family, sans-serif); }
.jp-Notebook details.course-solution > summary:focus-visible { outline: 2px solid #1a4fa0; outline-offset: 2px; }
.jp-Notebook .jp-InputArea-editor .highlight pre { margin: 0; }
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


def exporter():
    """nbconvert's HTMLExporter with the template above, MathJax local. Images are embedded
    after it (`embed_local_images`): nbconvert's own embedding parses each inline HTML tag of
    the Markdown on its own, closing a `<span>` before what it holds (a formula's words)."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", extra_loaders=[DictLoader({TEMPLATE_NAME: TEMPLATE})],
                        template_file=TEMPLATE_NAME, embed_images=False,
                        mathjax_url=f"{MATHJAX_DIR}/MathJax.js?config={MATHJAX_CONFIG}")


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


def code_css(style=CODE_STYLE) -> str:
    """CSS for nbconvert's highlighted code in the accessible-pygments `style`, scoped so
    that it wins over the lab template's colours."""
    from pygments.formatters import HtmlFormatter

    formatter = HtmlFormatter(style=style)
    background = formatter.style.background_color
    rules = formatter.get_style_defs(".jp-Notebook .highlight")
    return (rules + f"\n.jp-Notebook .jp-InputArea-editor, .jp-Notebook .highlight, "
            f".jp-Notebook .highlight pre {{ background: {background}; color: #1a1a1a; }}")


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


# ----------------------------------------------------------------------------- checks
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
