"""Every colour a lesson's prose or a figure's description names is drawn (issue 38 §1).

Since the Okabe–Ito palette, prose kept saying "red" where the series is orange-red
(VERMILLION). A colour word is checked against the pixels of the figure it speaks of
(tests/colour_words.py: each pixel named after its nearest course colour):

- a figure's description (its alt, from `course_lib.viz.describe`) against that figure:
  in every lesson's saved outputs, and for every viz function at lesson-sized inputs
  (tests/test_viz_readable.py's INPUTS), explorers' views included;
- a markdown cell against the nearest figure before it and the nearest after it (a code
  cell's PNG outputs, or the pictures of the explorer it shows, from the saved widget state).

Grey, black and white are not checked (every figure has them). A word that names
something outside any figure (JupyterLab's own icons) is listed in NOT_FIGURES.
"""
from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import course_lib.viz as viz  # noqa: E402
from colour_words import colour_words, drawn_words, undrawn  # noqa: E402
from course_lib.viz import palette as P  # noqa: E402
from course_lib.viz.describe import description, inline_png  # noqa: E402
from test_viz_readable import FIGURES, INPUTS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NEAREST = 4     # a markdown cell speaks of a figure at most this many cells away

# (lesson stem, phrase around the word): colour words about something other than a figure.
NOT_FIGURES = {
    ("00_start_here", "a red broken-link icon"): "JupyterLab's own icon beside a disconnected widget",
}


def _cells(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    return nb["cells"], nb.get("metadata", {}).get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})


def _widget_images(model_id, state, seen=None):
    """PNG bytes of every ipywidgets Image reachable from `model_id` in the saved state."""
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in state:
        return []
    seen.add(model_id)
    model = state[model_id]
    out = []
    if model.get("model_name") == "ImageModel":
        out += [base64.b64decode(b["data"]) for b in model.get("buffers", []) if b.get("path") == ["value"]]
    for ref in re.findall(r"IPY_MODEL_([0-9a-f]{32})", json.dumps(model.get("state", {}))):
        out += _widget_images(ref, state, seen)
    return out


def _figures(cell, state):
    """[(png, alt or None)] that a code cell shows."""
    out = []
    for o in cell.get("outputs", []):
        data = o.get("data", {})
        if "image/png" in data:
            alt = o.get("metadata", {}).get("image/png", {}).get("alt")
            out.append((base64.b64decode(data["image/png"]), alt))
        view = data.get("application/vnd.jupyter.widget-view+json")
        if view:
            out += [(png, None) for png in _widget_images(view["model_id"], state)]
    return out


def _allowed(stem, text, word):
    return any(s == stem and phrase in text and word in phrase for s, phrase in NOT_FIGURES)


def lesson_problems(path) -> list[str]:
    """Colour words of a lesson's prose and figure descriptions that their figure does not draw."""
    cells, state = _cells(path)
    figures = [_figures(c, state) if c["cell_type"] == "code" else [] for c in cells]
    problems = []
    for i, cell in enumerate(cells):
        for png, alt in figures[i]:
            for word in undrawn(alt or "", [png]):
                problems.append(f"cell {i}: the figure's description says {word!r}; the figure draws "
                                f"{sorted(drawn_words(png)) or 'no named colour'}")
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        words = [w for w in colour_words(text) if not _allowed(path.stem, text, w)]
        if not words:
            continue
        before = next((k for k in range(i - 1, max(-1, i - 1 - NEAREST), -1) if figures[k]), None)
        after = next((k for k in range(i + 1, min(len(cells), i + 1 + NEAREST)) if figures[k]), None)
        near = [k for k in (before, after) if k is not None]
        pngs = [png for k in near for png, _ in figures[k]]
        for word in sorted(set(words) & set(undrawn(text, pngs))):
            drawn = sorted(set().union(*(drawn_words(p) for p in pngs))) if pngs else []
            problems.append(f"cell {i} says {word!r}; the figures of cells {near or 'none near'} draw {drawn}")
    return problems


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_colour_word_of_a_lesson_is_drawn(path):
    problems = lesson_problems(path)
    assert not problems, f"{path.name}: colour words the figure does not draw:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", FIGURES)
def test_every_colour_word_of_a_figure_description_is_drawn(name):
    torch.manual_seed(0)
    fig = getattr(viz, name)(**INPUTS.get(name, dict)())
    try:
        desc = description(fig)
        words = undrawn(desc.text if desc else "", [inline_png(fig)])
        assert not words, f"{name}: its description names {words}, which it does not draw: {desc.text!r}"
    finally:
        plt.close(fig)


# -- the check itself, on planted figures ----------------------------------------------------

def _png(*colours, box=None):
    fig, ax = plt.subplots(figsize=(3, 2))
    for k, c in enumerate(colours):
        ax.plot([0, 1], [k, k + 1], color=c, lw=2, ls="--")
    if box:
        ax.add_patch(plt.Rectangle((0.2, 0.2), 0.3, 0.3, fill=False, ec=box, lw=1.5))
    png = inline_png(fig)
    plt.close(fig)
    return png


def test_red_is_not_the_palettes_orange_red():
    """02 cell 26 said "red, dashed" of a VERMILLION line; 11 said "boxed in red" of VERMILLION boxes."""
    line = _png(P.VERMILLION, P.BLUE)
    assert undrawn("Without scaling (red, dashed, circles) ... (blue, solid, squares)", [line]) == ["red"]
    assert undrawn("Without scaling (orange-red, dashed) ... (blue, solid)", [line]) == []
    boxed = _png(P.BLUE, box=P.VERMILLION)
    assert undrawn("Outlined in red and labelled with their weight", [boxed]) == ["red"]
    assert undrawn("outlined in orange-red", [boxed]) == []
    assert undrawn("an orange series", [line]) == ["orange"]          # #E69F00 is not drawn
    assert undrawn("an orange series", [_png(P.ORANGE)]) == []


def test_a_colour_map_names_its_ends():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.imshow(torch.linspace(-1, 1, 64).reshape(8, 8), cmap="RdBu_r", vmin=-1, vmax=1)
    png = inline_png(fig)
    plt.close(fig)
    assert undrawn("from −1 (blue) to 1 (red)", [png]) == []
    assert undrawn("green where the score is high", [png]) == ["green"]


def test_colour_words_are_whole_words():
    assert colour_words("reduce the reddish blue-ish tone; predicted") == []
    assert colour_words("The sky blue band and the orange-red line, then red.") == ["sky blue", "orange-red", "red"]
