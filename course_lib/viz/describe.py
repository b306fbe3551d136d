"""Figures that say what they show: a text alternative computed from the figure's data.

Every `viz` function ends with `describe(fig, text)`: one or two sentences with the
numbers that matter ("Attention of 'it' over 9 keys: 'animal' 0.60, 'street' 0.12; each
row sums to 1"), computed from the same arrays the figure draws. Long data (a 12×12 head
grid) also gets a `table`: the reader reaches it under the picture.

Where the description goes:
- in a notebook, `enable_in_ipython()` (called when `course_lib.viz` is imported in a
  kernel) makes IPython display a described Figure as a PNG whose output metadata holds
  the `alt` (the convention proposed for Jupyter outputs), plus an `<img alt=…>` in
  `text/html`, which JupyterLab and the HTML export show with its alt (both ignore the
  metadata: nbconvert 7.17 puts a placeholder on every `<img>` without one);
- in an explorer, `course_lib.widgets` puts it on the picture and in a live text.

`unsupported_numbers(fig)` lists the numbers of a description that nothing drawn on the
figure supports: the figure tests require it to be empty, so a description cannot go
stale (a planted wrong number is caught).
"""
from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import dataclass, field

import numpy as np

__all__: list = []     # imported from here by name: not re-exported as a figure by course_lib.viz


@dataclass(frozen=True)
class Description:
    """What a figure shows, in words: `text` (the alt), optional `table` (header, rows), and
    optional `result`: the figure's result first, in at most about 25 words (an explorer's
    spoken caption, `course_lib/widgets/_spoken.py`; without it the caption is the start of
    `text`)."""

    text: str
    table: tuple | None = None
    extra_values: tuple = field(default=())
    result: str = ""


def describe(fig, text, table=None, extra_values=(), result=""):
    """Attach a text alternative to `fig` and return `fig`.

    text: one or two sentences with the numbers that matter, computed from the data.
    table: optional (header, rows) for long data: header a list of column names, rows a
        list of lists; shown under the picture, reachable by a screen reader.
    extra_values: numbers the text states that are derived from the drawn data (a ratio,
        a sum) and so are not drawn themselves; `unsupported_numbers` accepts them.
    result: optional, what an explorer's caption says: the result first, in at most about 25
        words, with numbers that `text` also states ("gradient norm from 3.4e-11 at block 1 to
        0.09 at block 10").
    """
    text = " ".join(str(text).split())
    if not text:
        raise ValueError("a figure's description must say something, got an empty text")
    if table is not None:
        header, rows = table
        header, rows = [str(h) for h in header], [[_cell(v) for v in row] for row in rows]
        for row in rows:
            if len(row) != len(header):
                raise ValueError(f"table row has {len(row)} cells, header has {len(header)}")
        table = (tuple(header), tuple(tuple(r) for r in rows))
    fig._course_description = Description(text, table, tuple(float(v) for v in extra_values),
                                          " ".join(str(result).split()))
    return fig


def description(fig) -> Description | None:
    """The description attached by `describe`, or None."""
    return getattr(fig, "_course_description", None)


def first_lines(text: str, words: int = 18) -> str:
    """The first lines of a generated `text` that fit in `words` words (a first line longer
    than that: its first `words` words): what an explorer's caption says of it."""
    kept: list[str] = []
    for line in str(text).splitlines():
        if kept and len(" ".join(kept + [line]).split()) > words:
            break
        kept.append(line.strip())
    return " ".join(" ".join(kept).split()[:words])


def fmt(x, digits=2):
    """A number as the descriptions print it: `digits` decimals (0.60, 12.50); a value that
    rounds to zero is "0.00", never "-0.00" (a minus sign on a zero reads as a real sign)."""
    text = f"{float(x):.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def _cell(value):
    if isinstance(value, float):
        return fmt(value)
    return str(value)


# -- how a notebook shows a described figure ---------------------------------------------

def inline_png(fig):
    """The PNG the inline backend would show for `fig` (its print_figure settings)."""
    try:
        from matplotlib_inline.backend_inline import InlineBackend
        kwargs = dict(InlineBackend.instance().print_figure_kwargs)
    except Exception:                       # pragma: no cover - matplotlib-inline comes with ipykernel
        kwargs = {"bbox_inches": "tight"}
    out = io.BytesIO()
    fig.canvas.print_figure(out, format="png", **kwargs)
    return out.getvalue()


def table_html(table, caption="The data of this figure"):
    """A (header, rows) table as accessible HTML: a caption, column headers with scope."""
    header, rows = table
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in header)
    body = "".join(
        "<tr>" + f'<th scope="row">{html.escape(r[0])}</th>'
        + "".join(f"<td>{html.escape(c)}</td>" for c in r[1:]) + "</tr>" for r in rows)
    return (f'<details><summary>{html.escape(caption)} (a table)</summary>'
            f'<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></details>")


def figure_html(png: bytes, desc: Description) -> str:
    """`<img alt=…>` for the picture, then the table if there is one."""
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    out = f'<img src="{src}" alt="{html.escape(desc.text, quote=True)}"/>'
    if desc.table is not None:
        out += table_html(desc.table)
    return out


def figure_mimebundle(fig, include=None, exclude=None):
    """IPython's mimebundle for a described Figure: PNG + alt metadata + text/html.

    Returns None for a figure without description (IPython then shows it as usual)."""
    desc = description(fig)
    if desc is None:
        return None
    png = inline_png(fig)
    data = {"image/png": base64.b64encode(png).decode("ascii"), "text/html": figure_html(png, desc)}
    return data, {"image/png": {"alt": desc.text}}


def enable_in_ipython(shell=None):
    """Show described Figures with their description in this IPython (no-op outside one)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:                 # pragma: no cover
            return False
        shell = get_ipython()
    if shell is None:
        return False
    from matplotlib.figure import Figure
    shell.display_formatter.mimebundle_formatter.for_type(Figure, figure_mimebundle)
    return True


# -- keeping descriptions honest -----------------------------------------------------------

_NUMBER = re.compile(r"(?<![A-Za-z_^])[-−]?\d+(?:\.\d+)?(?:[eE][-+−]?\d+)?%?")


def drawn_values(fig) -> np.ndarray:
    """Every number the figure draws: line and point coordinates, bar sizes, image
    values, numbers in its texts (titles, labels, tick labels, annotations), and the
    sizes of its arrays (how many rows, keys, bars)."""
    from matplotlib.collections import Collection
    from matplotlib.image import AxesImage
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle
    from matplotlib.text import Text

    chunks, counts = [], set()

    def add(a):
        a = np.ma.filled(np.ma.asarray(a, dtype=float), np.nan).ravel()
        chunks.append(a[np.isfinite(a)])

    for ax in fig.axes:
        counts.update({len(ax.lines), len(ax.patches), len(ax.images), len(ax.collections)})
        for tick in list(ax.get_xticks()) + list(ax.get_yticks()):
            add([tick])
    for artist in fig.findobj():
        try:
            if isinstance(artist, Line2D):
                xy = np.asarray(artist.get_xydata(), dtype=float)
                add(xy)
                counts.add(len(xy))
            elif isinstance(artist, Rectangle):
                add([artist.get_x(), artist.get_y(), artist.get_width(), artist.get_height(),
                     artist.get_y() + artist.get_height(), artist.get_x() + artist.get_width()])
            elif isinstance(artist, AxesImage):
                arr = np.ma.asarray(artist.get_array())
                add(arr)
                counts.update(arr.shape)
            elif isinstance(artist, Collection):
                offsets = np.asarray(artist.get_offsets(), dtype=float)
                add(offsets)
                counts.add(len(offsets))
                arr = artist.get_array()
                if arr is not None:
                    add(np.ma.asarray(arr))
                    counts.update(np.shape(arr))
            elif isinstance(artist, Text):
                for m in _NUMBER.finditer(artist.get_text()):
                    add([_parse(m.group())[0]])
        except (TypeError, ValueError):     # an artist without numeric data
            continue
    chunks.append(np.asarray(sorted(counts), dtype=float))
    return np.concatenate(chunks) if chunks else np.zeros(0)


def _parse(token):
    """(value, tolerance) of a number as written: 0.60 -> (0.6, 0.005)."""
    percent = token.endswith("%")
    t = token.rstrip("%").replace("−", "-")
    mantissa, _, exponent = t.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    value = float(t)
    tol = 0.5 * 10 ** (-decimals) * (10 ** int(exponent) if exponent else 1)
    if percent:
        value, tol = value / 100, tol / 100
    return value, tol * 1.001 + 1e-12


def unsupported_numbers(fig, text=None) -> list[str]:
    """The numbers in `fig`'s description (or `text`) that no drawn value (or declared
    extra value) matches at the precision written: [] when the description is honest."""
    desc = description(fig)
    if text is None:
        if desc is None:
            return ["(no description)"]
        text = desc.text + " " + " ".join(" ".join(r) for r in (desc.table[1] if desc.table else ()))
    values = drawn_values(fig)
    if desc is not None and desc.extra_values:
        values = np.concatenate([values, np.asarray(desc.extra_values)])
    values = np.concatenate([values, -values])      # "−0.3" in words may be drawn as 0.3 below zero
    out = []
    for m in _NUMBER.finditer(text):
        value, tol = _parse(m.group())
        if not (values.size and np.any(np.abs(values - value) <= tol + 1e-9 * abs(value))):
            out.append(m.group())
    return out


def is_placeholder(text) -> bool:
    """Whether `text` is no description at all (nbconvert's placeholder, 'a heatmap')."""
    t = (text or "").strip().lower().rstrip(".")
    return not t or "no description" in t or len(t.split()) < 5 or not any(ch.isdigit() for ch in t)
