"""Lesson 07's shape diagram and its widget, without a kernel."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

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
