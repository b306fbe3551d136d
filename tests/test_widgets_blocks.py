"""Lesson 05's figures and the depth explorer, without a kernel."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.viz import (fit_plot, grad_norm_vs_depth_plot, layer_profile_plot, loss_curves_plot,  # noqa: E402
                            stream_parts_plot)
from course_lib.viz.describe import description  # noqa: E402
from course_lib.widgets import depth_explorer  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread_and_close():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
    plt.close("all")


@pytest.mark.parametrize("call, message", [
    (lambda: fit_plot([0, 1], [0]), "x has 2 values but target has 1"),
    (lambda: fit_plot([0, 1], [0, 1], lines={"l": [1]}), "1 values for 2 x values"),
    (lambda: fit_plot([0, 1], [0, 1], points={"p": ([0, 1], [1])}), "2 x values and 1 predictions"),
    (lambda: grad_norm_vs_depth_plot([1, 2], {"a": [1.0]}), "1 values for 2 depths"),
    (lambda: grad_norm_vs_depth_plot([], {}), "must not be empty"),
    (lambda: loss_curves_plot({}), "at least one run"),
    (lambda: loss_curves_plot({"a": [1.0]}, smooth=0), "smooth must be"),
    (lambda: loss_curves_plot({"a": []}), "is empty"),
    (lambda: stream_parts_plot(["a"], [1.0, 2.0]), "1 names for 2 sizes"),
    (lambda: layer_profile_plot([1.0], [1.0, 2.0]), "grad_norms has 1 values"),
    (lambda: depth_explorer(wiring="sideways"), "wiring must be one of"),
    (lambda: depth_explorer(depth=99), "depth must be in"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_figures_draw_what_they_are_given():
    fig = fit_plot([0, 1, 2], [0, 1, 2], lines={"f": [0, 0, 0]}, points={"p": ([0, 1], [3, 4])})
    assert len(fig.axes[0].lines) == 2 and len(fig.axes[0].collections) == 1
    fig = grad_norm_vs_depth_plot([1, 2], {"plain": [1e-3, 0.0], "res": [1.0, 1.0]})
    plain, zero_marker = fig.axes[0].lines[0].get_ydata(), fig.axes[0].lines[1]
    assert np.isnan(plain[1])                              # a zero norm is not drawn as an ordinary point...
    assert zero_marker.get_marker() == "v" and list(zero_marker.get_xdata()) == [2]   # ... but marked at the floor
    assert zero_marker.get_ydata()[0] > 0 and "underflow" in zero_marker.get_label()
    assert [t.get_text() for t in fig.axes[0].texts] == ["0"]
    fig = loss_curves_plot({"a": [3.0] * 30, "b": [3.0, float("nan")]}, chance=3.0, ncols=2)
    assert [ax.get_title() for ax in fig.axes] == ["a", "b"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]   # one legend, true for every panel
    assert legend == ["mean of the last 10 steps", "loss of each step", "chance"]
    fig = stream_parts_plot(["embedding", "block 0 attn", "block 0 ffn", "block 1 attn", "block 1 ffn"],
                            [1.0, 2.0, 0.5, 1.0, 1.0])
    assert [round(p.get_height(), 3) for p in fig.axes[0].patches[:5]] == [1.0, 2.0, 0.5, 1.0, 1.0]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["emb.", "0", "1"]   # one label per block
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["embedding", "attention", "FFN"]


def test_changing_the_wiring_and_depth_redraws():
    w = depth_explorer(wiring="plain", depth=6)
    wiring, depth = w.children[:2]
    w.update()
    plain = w.draw.last_figure.axes[0].lines[0].get_ydata().copy()
    assert plain[0] < plain[-1] / 100                      # plain: the gradient vanishes towards the input
    wiring.value = "pre-norm"
    pre = w.draw.last_figure.axes[0].lines[0].get_ydata()
    assert not np.allclose(plain, pre) and pre.min() > pre.max() / 100
    depth.value = 9
    assert len(w.draw.last_figure.axes[0].lines[0].get_ydata()) == 9
    assert "pre-norm, 9 blocks" in w.draw.last_figure.texts[0].get_text()


def test_loss_curves_axis_follows_the_runs_and_marks_a_spike():
    """Issue 29: one early spike (9.1) squashed the range where the runs differ (1.7 … 3.3) into
    a sixth of the axis, and a flat run's per-step line hid under its mean. The axis now ends at
    the highest moving average, the spike is marked on the top edge with its peak written, and
    each step's loss is drawn over the mean."""
    spiky = [4.0, 9.1, 6.0] + [3.2 - 1.5 * i / 76 for i in range(77)]
    fig = loss_curves_plot({"flat": [3.22] * 80, "spiky": spiky}, chance=3.22)
    low, high = fig.axes[0].get_ylim()
    assert 1.4 < low < 1.7 and high < 6.0, (low, high)
    spike_ax = fig.axes[1]
    marks = [line for line in spike_ax.lines if line.get_marker() == "^"]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [2, 3]        # steps 2 (9.1) and 3 (6.0)
    assert any("9.10" in t.get_text() for t in spike_ax.texts)
    flat_ax = fig.axes[0]
    mean_line = next(line for line in flat_ax.lines if line.get_label().startswith("mean"))
    step_line = next(line for line in flat_ax.lines if line.get_label() == "loss of each step")
    assert step_line.get_zorder() > mean_line.get_zorder()
    assert "9.10" in description(fig).text
