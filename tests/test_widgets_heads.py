"""Lesson 04's figures and the head explorer, without a kernel."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.experiments.toy_tasks import BindingModel, bindings_batch  # noqa: E402
from course_lib.viz import attention_map, head_maps, heads_timing_plot, relation_scores_plot  # noqa: E402
from course_lib.widgets import head_explorer  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _image(fig):
    return np.asarray(fig.axes[0].images[0].get_array())


def test_attention_map_shows_the_weights_and_the_marks():
    w = torch.softmax(torch.randn(4, 4), -1)
    fig = attention_map(w, list("abcd"), "t", marks={"prev": torch.eye(4, dtype=torch.bool)})
    assert np.allclose(_image(fig), w.numpy())
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list("abcd")
    assert len(fig.axes[0].collections[0].get_offsets()) == 4       # one ring per marked cell


@pytest.mark.parametrize("call, message", [
    (lambda: attention_map(torch.ones(2, 3)), "must be a square"),
    (lambda: attention_map(torch.ones(2, 2), labels=["a"]), "1 labels"),
    (lambda: attention_map(torch.ones(2, 2), marks={"m": torch.ones(3, 3, dtype=torch.bool)}), "has shape"),
    (lambda: head_maps([]), "at least one"),
    (lambda: head_maps([torch.ones(2, 2), torch.ones(3, 3)]), "same size"),
    (lambda: head_maps([torch.ones(2, 2)], titles=["a", "b"]), "2 titles for 1 maps"),
    (lambda: heads_timing_plot([1, 2], {"loop": [0.1]}), "1 values for 2 head counts"),
    (lambda: heads_timing_plot([], {}), "must not be empty"),
    (lambda: relation_scores_plot(torch.ones(2, 2)), "must be"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_head_maps_and_plots_draw_one_panel_or_bar_each():
    fig = head_maps([torch.eye(3), torch.ones(3, 3) / 3], titles=["a", "b"])
    assert [ax.get_title() for ax in fig.axes[:2]] == ["a", "b"]
    fig = heads_timing_plot([1, 2, 4], {"loop": [1e-3, 2e-3, 4e-3], "batched": [1e-3] * 3})
    assert len(fig.axes[0].lines) == 2 and fig.axes[0].lines[0].get_ydata()[-1] == pytest.approx(4.0)
    fig = relation_scores_plot({"m": torch.rand(2, 3, 2), "k": torch.rand(1, 1, 2)})
    assert len(fig.axes[0].patches) == 2 * (6 + 1)


def test_relation_scores_are_readable_for_the_lessons_seven_heads():
    """Issue 29: with lesson 04's seven heads the figure was 12 in wide, so its legend and two-line
    tick labels were ~7 pt once the notebook column shrank it. Now at most 9.4 in (not shrunk in
    the 950 px column) and every text at least 10 pt."""
    scores = {"1 head": torch.rand(1, 1, 2), "2 heads": torch.rand(1, 2, 2), "2 layers × 2 heads": torch.rand(2, 2, 2)}
    fig = relation_scores_plot(scores, title="where each head looks")
    assert fig.get_size_inches()[0] <= 9.4
    fig.canvas.draw()
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    assert min(t.get_fontsize() for t in texts) >= 10
    assert {"1 head", "2 heads", "2 layers × 2 heads"} <= {t.get_text() for t in texts}   # one name per group


def test_moving_the_sliders_redraws_another_head():
    torch.manual_seed(0)
    model = BindingModel(d_model=16, h=2, n_layers=2)
    tokens = bindings_batch(3, 12, torch.Generator().manual_seed(0)).tokens
    w = head_explorer(model, tokens)
    example, layer, head = w.children[:3]
    w.update()
    first = _image(w.draw.last_figure).copy()
    head.value = 1
    assert not np.allclose(_image(w.draw.last_figure), first)
    layer.value = 1
    assert "layer 1, head 1" in w.draw.last_figure.axes[0].get_title()
    labels_before = [t.get_text() for t in w.draw.last_figure.axes[0].get_xticklabels()]
    example.value = 2
    labels_after = [t.get_text() for t in w.draw.last_figure.axes[0].get_xticklabels()]
    assert labels_before != labels_after
