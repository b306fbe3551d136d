"""Export lessons to HTML pages that read offline, without Jupyter.

    python tools/export_html.py notebooks/*.ipynb --out build/html [--show-solutions | --hide-solutions]

Each lesson becomes `<out>/<lesson>.html`, next to an `index.html` that lists them
and a `mathjax/` folder. Nothing on the pages is fetched from the network:

- **Figures** (PNG outputs) are embedded in the page as base64, and so are images
  that the prose references. A figure's `alt` is its description
  (`course_lib.viz.describe`: the output's `text/html`; an explorer's picture takes
  its caption's text), never nbconvert's placeholder.
- **LaTeX** is typeset by MathJax 2.7.9 copied from the installed
  `jupyter-server-mathjax` package. A screen reader hears each formula as one phrase
  (but a lone letter or number): it is labelled with its words (`course_lib.mathtext`),
  as in the learner's copy; a heading with a formula is named in words
  (html_export/math_words.py).
- **Widgets** need a kernel to move: each is replaced by what it showed when the
  notebook was executed (html_export/widgets.py).
- **bertviz views** made with `course_lib.viz.bertviz_views.show` are self-contained
  HTML (d3 and jQuery inlined) with their text alternative, so they run as they are.
- **Exercises**: each solution sits in a closed "Solution" disclosure where the learner's
  stub is (`--show-solutions`: open, for an instructor; `--hide-solutions`: absent, for a
  copy handed to a class). Code and output are named regions ("Code, cell 3",
  "Output, cell 3"); tracebacks lose their rulers (html_export/cells.py).
- Every page is checked: a `<script src>`, `<link href>`, `<img src>`, CSS `url(...)` or
  `import(...)` that points at http(s) is an error (html_export/page.py).

Links between lessons (`02_attention.ipynb`) point at the exported pages; the Colab
set-up cell (tagged `colab-setup`) is left out.

Exit status: 0 when every page was written; 1 (one line per problem on stderr)
when an argument is not a notebook, or a page would need the network.
"""
from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

import nbformat

_TOOLS = str(Path(__file__).resolve().parent)
if _TOOLS not in sys.path:         # html_export/ sits beside this file, however this file is loaded
    sys.path.append(_TOOLS)

from course_lib.console import utf8_output  # noqa: E402
from html_export.cells import label_regions, prepare_cells  # noqa: E402
from html_export.math_words import label_headings  # noqa: E402
from course_lib.mathtext import speakable_markdown  # noqa: E402
from html_export.page import (  # noqa: E402,F401  (re-exported: the tests and tools use them here)
    MATHJAX_DIR, ExportError, code_css, copy_mathjax, embed_local_images, exporter, external_references,
    mathjax_source)
from html_export.widgets import STATIC_NOTE, WIDGET_STATE, WIDGET_VIEW, StaticWidget, replace_widgets  # noqa: E402,F401


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


def _solutions_mode(hide_solutions, show_solutions, solutions):
    if hide_solutions and show_solutions:
        raise ValueError("hide_solutions and show_solutions exclude each other")
    return "hidden" if hide_solutions else "open" if show_solutions else solutions


def export_notebook(nb, path: Path, out: Path, lesson_names=(), hide_solutions=False, exporter_=None,
                    *, show_solutions=False, solutions="collapsed") -> Path:
    """Write `out/<stem>.html` for the notebook `nb` read from `path`; returns the page's path.

    Solutions: collapsed (default), open (`show_solutions`) or absent (`hide_solutions`).
    """
    nb = nbformat.from_dict(nb)  # the caller's copy stays as it was
    if _mermaid_used(nb):
        raise ExportError(f"{path}: mermaid diagrams need mermaid.js from a CDN; use an SVG in assets/")
    prepare_cells(nb, path, _solutions_mode(hide_solutions, show_solutions, solutions))
    # The Colab set-up cell (tools/colab_cell.py) means nothing to a reader of the page.
    nb.cells = [c for c in nb.cells if "colab-setup" not in c.get("metadata", {}).get("tags", [])]
    replace_widgets(nb)
    for cell in nb.cells:       # each formula said as one phrase (course_lib.mathtext)
        if cell.cell_type == "markdown":
            cell.source = speakable_markdown(cell.source)
    body, _ = (exporter_ or exporter()).from_notebook_node(
        nb, resources={"metadata": {"name": _title(nb, path.stem), "path": str(path.parent)},
                       "course_code_css": code_css()})
    for name in lesson_names:   # links between lessons -> the exported pages
        body = re.sub(r'(href="(?:\./)?)' + re.escape(name) + r'\.ipynb(#[^"]*)?"',
                      lambda m: f'{m.group(1)}{name}.html{m.group(2) or ""}"', body)
    body = embed_local_images(body, path)
    body = label_regions(body)
    body, _ = label_headings(body)
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


def export(paths, out: Path, hide_solutions=False, *, show_solutions=False) -> list[Path]:
    """Export every notebook in `paths` to `out`, plus index.html and mathjax/.

    Each solution is collapsed; `show_solutions` opens them, `hide_solutions` leaves them out.
    """
    mode = _solutions_mode(hide_solutions, show_solutions, "collapsed")
    paths = [Path(p) for p in paths]
    notebooks = [(p, _check_notebook(p)) for p in paths]   # all checked before anything is written
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    copy_mathjax(out)
    names = [p.stem for p in paths]
    html_exporter = exporter()
    pages = [export_notebook(nb, p, out, names, exporter_=html_exporter, solutions=mode) for p, nb in notebooks]
    write_index(out)
    return pages


def main(argv=None) -> int:
    utf8_output()                # it prints "—" and file names: any console, any locale
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("build/html"), help="folder for the pages (default build/html)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--show-solutions", action="store_true",
                       help="show each solution open (an instructor's copy); by default each is "
                            "in a closed 'Solution' disclosure")
    which.add_argument("--hide-solutions", action="store_true",
                       help="leave the solutions out: the learner's stub only (outputs kept), for a class")
    args = ap.parse_args(argv)
    try:
        pages = export(args.notebooks, args.out, args.hide_solutions, show_solutions=args.show_solutions)
    except ExportError as e:
        print(f"export_html: {e}", file=sys.stderr)
        return 1
    for page in pages:
        print(f"{page} ({page.stat().st_size / 1e6:.1f} MB)")
    shown = "left out" if args.hide_solutions else "open" if args.show_solutions else "collapsed"
    print(f"{len(pages)} page(s) in {args.out}/, solutions {shown} — open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
