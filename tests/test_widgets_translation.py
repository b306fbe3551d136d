"""Lesson 08's figures and widgets, without a kernel."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.data.translation import NumberTranslationData
from course_lib.experiments.translator import TrainState, TranslatorConfig
from course_lib.experiments.translator_eval import translate  # noqa: E402
from course_lib.viz import (  # noqa: E402
    accuracy_by_length, cross_attention_grid, label_smoothing_bars, loss_curve, translation_figure,
    warmup_schedule_plot,
)
from course_lib.widgets import label_smoothing_explorer, translator_widget  # noqa: E402


@pytest.fixture(scope="module")
def setup():
    data = NumberTranslationData()
    cfg = TranslatorConfig(d_model=16, h=2, d_ff=32, n_enc=2, n_dec=2)
    return TrainState.fresh(data, cfg).model.eval(), data


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _image(fig):
    return fig.axes[0].images[0].get_array().data.copy()


def test_translator_widget_redraws_for_new_input(setup):
    model, data = setup
    w = translator_widget(model, data)
    text, layer, head = w.children[:3]
    w.update()
    first = w.draw.last_figure
    assert first is not None and _image(first).shape == (len(translate(model, data, "twenty-one")["pieces"]) + 1, 2)
    text.value = "4512"
    second = w.draw.last_figure
    assert _image(second).shape[1] == len(data.src_ids(4512))
    assert "four thousand five hundred and twelve" in second.axes[0].get_title()
    before = _image(second)
    head.value = 1
    assert not np.allclose(before, _image(w.draw.last_figure))
    layer.value = 0
    assert w.draw.last_figure is not None


@pytest.mark.parametrize("bad, words", [("zwanzig", "unknown word(s) ['zwanzig']"),
                                        ("1234567", "out of range"), ("", "type a number")])
def test_bad_input_prints_a_message_not_a_traceback(setup, bad, words, capsys):
    model, data = setup
    w = translator_widget(model, data)
    w.update()
    w.children[0].value = bad
    assert w.draw.last_figure is None and words in w.draw.message
    assert words in capsys.readouterr().out
    w.children[0].value = "21"  # and it recovers
    assert w.draw.last_figure is not None and w.draw.message == ""


def test_label_smoothing_slider_moves_the_bars():
    w = label_smoothing_explorer()
    w.update()
    before = [p.get_height() for p in w.draw.last_figure.axes[0].patches]
    w.children[0].value = 0.3
    after = [p.get_height() for p in w.draw.last_figure.axes[0].patches]
    smoothed = slice(12, 24)  # the second bar series: the smoothed target
    assert before != after and max(after[smoothed]) < max(before[smoothed])


def test_label_smoothing_figure_values():
    fig = label_smoothing_bars(vocab_size=10, smoothing=0.2, right=3)
    heights = [round(p.get_height(), 6) for p in fig.axes[0].patches]
    assert heights[3] == 1.0 and heights[10 + 3] == pytest.approx(0.8 + 0.02)


def test_loss_curve_marks_resume_and_floor():
    hist = {"step": list(range(50)), "loss": list(np.linspace(3, 0.7, 50))}
    fig = loss_curve(hist, resumed_at=20, floor=0.66)
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    assert any("resumed" in s for s in labels) and any("floor" in s for s in labels)


def test_schedule_plot_peaks_at_the_end_of_warmup():
    fig = warmup_schedule_plot(warmup=10, total=100, peak_lr=1e-3)
    y = fig.axes[0].get_lines()[0].get_ydata()
    assert int(np.argmax(y)) in (9, 10) and y.max() == pytest.approx(1e-3)


def test_grid_and_accuracy_figures(setup):
    model, data = setup
    r = translate(model, data, "21")
    fig = cross_attention_grid(r["cross"], r["source"], r["pieces"] + ["<eos>"])
    assert len(fig.axes) == 2 * 3 + 1          # 2 layers × (2 heads + mean), and the colour bar
    fig = accuracy_by_length({"a": ([5, 50, 500], [True, False, True])})
    assert [round(p.get_height(), 3) for p in fig.axes[0].patches] == [0.0, 1.0, 0.0]   # share wrong


@pytest.mark.parametrize("call, message", [
    (lambda m, d: label_smoothing_bars(smoothing=1.0), "smoothing must be"),
    (lambda m, d: label_smoothing_bars(right=99), "right must be"),
    (lambda m, d: warmup_schedule_plot(warmup=50, total=10), "warmup"),
    (lambda m, d: loss_curve({"loss": []}), "history must be"),
    (lambda m, d: translation_figure(m, d, "21", layer=5), "layer must be"),
    (lambda m, d: translation_figure(m, d, "21", head=7), "head must be"),
    (lambda m, d: translation_figure(m, d, "banana"), "unknown word"),
    (lambda m, d: cross_attention_grid([torch.ones(2, 3, 2)], ["a"], ["b"]), "cross\\[0\\] has shape"),
    (lambda m, d: accuracy_by_length({}), "non-empty"),
])
def test_bad_arguments_are_named(setup, call, message):
    with pytest.raises(ValueError, match=message):
        call(*setup)
