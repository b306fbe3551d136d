"""Every text of a figure can be read whole, and no number reads "-0" (issue 45 §4).

Two failures a learner met that no size test sees: a label cut by the axes' frame or drawn on
top of another text, and a negative zero ("-0.00") printed where the value is 0.

The figure tests render every `course_lib.viz` function with its lesson's inputs (the table
of tests/test_viz_readable.py, which covers every function in `course_lib.viz.__all__`), record
every text actually drawn — titles, tick labels, legend entries, colour-bar labels, annotations —
and measure its drawn extent with matplotlib's renderer (`Text.get_window_extent`). A text fails
when it
- reaches outside the figure's canvas (cut off when a widget redraws the figure, or by savefig
  without bbox_inches="tight");
- is drawn inside an axes (an annotation) but crosses that axes' frame;
- overlaps another text by more than OVERLAP_PX in both directions;
- is a negative zero.

The notebook test reads every committed notebook's text outputs (stream, text/plain, text/html)
for negative zeros.
"""
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from test_viz_readable import CALLS, DPI, _draw, drawn_texts  # noqa: E402  (tests/ is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

OUTSIDE_PX = 1.0      # a text may touch the canvas edge, not cross it
FRAME_PX = 1.0        # an annotation may touch its axes' frame, not straddle it
OVERLAP_PX = 2.0      # two texts whose boxes share more than this in x and in y overlap

# A negative zero: a minus (ASCII or U+2212) and a zero with only zeros after the point, not part
# of a longer number, a word or a date ("-0", "-0.", "-0.00", "−0.0"; not "-0.5", "x-0", "2026-01").
SCRIPT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)
NEGATIVE_ZERO = re.compile(r"(?<![\w.])[-\u2212]0(?:\.0*)?(?![\d.])")


def negative_zeros(text: str) -> list[str]:
    """The negative zeros in `text`, each with a little context."""
    return [text[max(0, m.start() - 25):m.end() + 10].replace("\n", " ") for m in NEGATIVE_ZERO.finditer(text)]


def test_negative_zero_pattern():
    """The pattern finds the forms a formatted 0 takes, and nothing else."""
    for bad in ("-0", "-0.00", "−0.0", "[-0., 1.]", "mean -0.00 var 1", "(−0)"):
        assert negative_zeros(bad), bad
    for fine in ("0.00", "-0.5", "-0.05", "−0.001", "x-0", "2026-01-05", "step-0", "1e-05", "-10",
                 "-1.0e-05", "cell-0a", "bertviz-0f3a"):
        assert not negative_zeros(fine), fine


def _owner_axes(text, fig):
    """The Axes whose own annotations (ax.texts) hold `text`, else None (ticks, titles, legends)."""
    return next((ax for ax in fig.axes if text in ax.texts), None)


def text_problems(fig) -> list[str]:
    """Every text outside the canvas, across its axes' frame, on top of another text, or a -0."""
    renderer, texts = drawn_texts(fig)
    canvas = fig.bbox
    boxes = [(t, t.get_window_extent(renderer)) for t in texts]
    problems = []
    for t, box in boxes:
        name = repr(t.get_text()[:30])
        out = max(canvas.x0 - box.x0, canvas.y0 - box.y0, box.x1 - canvas.x1, box.y1 - canvas.y1)
        if out > OUTSIDE_PX:
            problems.append(f"{name} reaches {out:.0f} px outside the figure")
        ax = _owner_axes(t, fig)
        if ax is not None:
            frame = ax.bbox
            inside = Bbox.intersection(box, frame)
            crosses = inside is not None and inside.width > FRAME_PX and inside.height > FRAME_PX and (
                box.x0 < frame.x0 - FRAME_PX or box.x1 > frame.x1 + FRAME_PX
                or box.y0 < frame.y0 - FRAME_PX or box.y1 > frame.y1 + FRAME_PX)
            if crosses:
                problems.append(f"{name} crosses the frame of the axes {ax.get_title()[:30]!r}")
        problems += [f"{name} shows a negative zero" for _ in negative_zeros(t.get_text())[:1]]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            shared = Bbox.intersection(box_a, box_b)
            if shared is not None and shared.width > OVERLAP_PX and shared.height > OVERLAP_PX:
                problems.append(f"{a.get_text()[:30]!r} and {b.get_text()[:30]!r} overlap "
                                f"({shared.width:.0f}×{shared.height:.0f} px)")
    return problems


# Known failures when this test was written (issue 45), each an expected failure, strict: the entry
# must go when its figure (or notebook output) is fixed. name -> what fails.
KNOWN_FIGURES: dict[str, str] = {}
KNOWN_NOTEBOOKS: dict = {}     # none left (lessons 09 and 10 printed -0.00 before issue 45)


def _known(params, known, key):
    return [pytest.param(*p.values, id=p.id, marks=[*p.marks, pytest.mark.xfail(strict=True, reason=known[key(p)])])
            if key(p) in known else p for p in params]


FIGURE_CALLS = _known(CALLS, KNOWN_FIGURES, lambda p: p.id)
NOTEBOOK_PARAMS = _known([pytest.param(p, id=p.stem) for p in NOTEBOOKS], KNOWN_NOTEBOOKS, lambda p: p.id)


@pytest.mark.slow          # draws every figure of the course: about a minute on 2 cores
@pytest.mark.parametrize("name, kwargs", FIGURE_CALLS)
def test_every_text_is_whole_and_apart(name, kwargs):
    fig = _draw(name, kwargs)
    try:
        problems = text_problems(fig)
        assert not problems, f"{name}: " + "; ".join(problems[:8])
    finally:
        plt.close(fig)


def test_the_figure_check_can_fail():
    """A text past the edge, one across a frame and two on top of each other are all caught."""
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    ax.text(0.98, 0.5, "a long label across the frame", transform=ax.transAxes)
    ax.text(0.2, 0.2, "first")
    ax.text(0.2, 0.2, "second")
    fig.text(0.9, 0.9, "beyond the right edge of the canvas")
    ax.set_title("mean -0.00")
    try:
        problems = " | ".join(text_problems(fig))
    finally:
        plt.close(fig)
    assert "crosses the frame" in problems
    assert "overlap" in problems and "'first'" in problems
    assert "outside the figure" in problems
    assert "negative zero" in problems


def notebook_texts(path):
    """(cell number, text) for every text output of a notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                yield i, "".join(out.get("text", ""))
            for mime in ("text/plain", "text/html", "text/markdown"):
                data = out.get("data", {}).get(mime)
                if data:
                    text = "".join(data) if isinstance(data, list) else data
                    yield i, SCRIPT.sub(" ", text)      # inlined libraries (bertviz's d3) are code, not output


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_no_negative_zero_in_notebook_outputs(path):
    found = [f"cell {i}: …{hit}…" for i, text in notebook_texts(path) for hit in negative_zeros(text)]
    assert not found, (f"{path.name} prints a negative zero (round to 0 first, or add 0.0 to the "
                       f"rounded value): " + "; ".join(found[:6]))
