"""Lesson 07's shape diagram and its widget, without a kernel."""
import matplotlib

matplotlib.use("Agg")

import importlib.util  # noqa: E402
from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

from course_lib.viz import attention_heatmap, encoder_decoder_diagram, trace_shapes  # noqa: E402
from course_lib.widgets import shapes_explorer  # noqa: E402


def _texts(fig):
    return " ".join(t.get_text() for t in fig.axes[0].texts)


def test_traced_shapes_are_read_off_the_model():
    s = trace_shapes(batch=3, n_src=7, n_tgt=5, d_model=24, h=3, d_ff=48, src_vocab=11, tgt_vocab=13, n_layers=1)
    assert s["src"] == (3, 7) and s["tgt"] == (3, 5)
    assert s["memory"] == (3, 7, 24) and s["decoder_out"] == (3, 5, 24)
    assert s["logits"] == s["probs"] == (3, 5, 13)
    assert s["self_weights"] == (3, 3, 7, 7) and s["masked_weights"] == (3, 3, 5, 5)
    assert s["cross_weights"] == (3, 3, 5, 7)  # (batch, h, n_tgt, n_src): rectangular


def test_diagram_shows_the_shapes():
    fig = encoder_decoder_diagram(batch=2, n_src=6, n_tgt=3)
    text = _texts(fig)
    assert "(batch=2, h=4, n_tgt=3, n_src=6)" in text and "K, V" in text
    plt.close(fig)


@pytest.mark.parametrize("sizes", [{}, dict(batch=8, n_src=12, n_tgt=11, d_model=64, h=8, tgt_vocab=100)])
def test_every_box_text_lies_inside_its_box(sizes):
    """The lesson's sizes and the explorer's largest: no text runs past its box (issue 29)."""
    fig = encoder_decoder_diagram(**sizes)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    boxes = [p.get_window_extent(renderer) for p in ax.patches
             if isinstance(p, FancyBboxPatch) and p.get_fill()]
    labels = [t for t in ax.texts if hasattr(t, "fits")]
    assert len(labels) == 19
    for label in labels:
        text = label.get_window_extent(renderer)
        box = next(b for b in boxes if b.contains((text.x0 + text.x1) / 2, (text.y0 + text.y1) / 2))
        assert box.x0 <= text.x0 and text.x1 <= box.x1 and box.y0 <= text.y0 and text.y1 <= box.y1, \
            f"{label.get_text()!r} runs past its box"
    plt.close(fig)


def test_the_lessons_sizes_all_differ_and_the_committed_svg_shows_them():
    s = trace_shapes()                       # the defaults: lesson 07's sizes
    batch, n_tgt, n_src = s["cross_weights"][0], s["cross_weights"][2], s["cross_weights"][3]
    h, d_model, vocab = s["cross_weights"][1], s["memory"][2], s["logits"][2]
    sizes = [batch, h, n_tgt, n_src, d_model // h, d_model, vocab]
    assert len(set(sizes)) == len(sizes), sizes
    tool = Path(__file__).resolve().parent.parent / "tools" / "encoder_decoder_svg.py"
    spec = importlib.util.spec_from_file_location("encoder_decoder_svg", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fig, text = module.diagram()
    plt.close(fig)
    assert module.committed_description() == text, \
        "assets/encoder_decoder_shapes.svg is out of date: run python tools/encoder_decoder_svg.py"



def test_the_committed_diagram_fits_a_laptop_screen():
    """Issue 45 §4: the SVG was 960 × 826 px, shown 907 × 780 px, where a 1366 × 768 screen shows
    ~522 px of a notebook beside JupyterLab's file browser. A browser draws an SVG at its own
    size (96 px an inch), and the notebook column is 913 px wide there."""
    import re

    svg = (Path(__file__).resolve().parent.parent / "assets" / "encoder_decoder_shapes.svg").read_text(encoding="utf-8")
    width, height = (float(v) * 96 / 72 for v in re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())
    assert width <= 913 and height <= 560, f"the diagram is {width:.0f} × {height:.0f} px"
    assert "<title>The encoder-decoder with the shape of every tensor</title>" in svg

def test_moving_a_slider_changes_the_drawn_shapes():
    w = shapes_explorer()
    w.update()
    before = _texts(w.draw.last_figure)
    n_src = [c for c in w.children if getattr(c, "description", "").startswith("n_src")][0]
    n_src.value = 9
    after = _texts(w.draw.last_figure)
    assert before != after and "n_src=9" in after and "n_src=9" not in before
    plt.close("all")


@pytest.mark.parametrize("kwargs, message", [(dict(d_model=10, h=4), "divisible"), (dict(batch=0), "batch must be"),
                                             (dict(n_src=2.5), "n_src must be an int")])
def test_bad_sizes_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        trace_shapes(**kwargs)


def test_heatmap_checks_labels():
    with pytest.raises(ValueError, match="2 labels for 3 rows"):
        attention_heatmap([[1, 0], [0, 1], [1, 0]], ["a", "b"], ["x", "y"])
    fig = attention_heatmap([[1.0, 0.0], [0.5, 0.5]], ["a", "b"], ["x", "y"])
    assert fig.axes[0].images[0].get_array().shape == (2, 2)
    plt.close(fig)
