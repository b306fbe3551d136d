"""Lesson 00's figure and widget, without a kernel."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib.viz import softmax_temperature_bars  # noqa: E402
from course_lib.widgets import temperature_explorer  # noqa: E402


def _heights(fig):
    return [round(p.get_height(), 6) for p in fig.axes[0].patches]


def test_bars_are_the_softmax_and_sum_to_one():
    fig = softmax_temperature_bars([0.0, 0.0], temperature=1.0)
    assert _heights(fig) == [0.5, 0.5]
    plt.close(fig)


@pytest.mark.parametrize("kwargs, message", [
    (dict(scores=[1.0, 2.0], temperature=0.0), "temperature must be > 0"),
    (dict(scores=[[1.0]], temperature=1.0), "scores must be 1-D"),
    (dict(scores=[1.0, 2.0], labels=["a"], temperature=1.0), "1 labels for 2 scores"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        softmax_temperature_bars(**kwargs)


def test_moving_the_slider_redraws_a_sharper_distribution():
    w = temperature_explorer()
    slider = w.children[0]
    w.update()                              # what the first display does
    before = _heights(w.draw.last_figure)
    slider.value = 0.1                      # what dragging does
    after = _heights(w.draw.last_figure)
    assert before != after
    assert max(after) > max(before) > 0.25  # lower T: the top score takes more mass
    plt.close("all")
