"""Lesson 03's figures and widget, without a kernel."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.nn.positional import shift_matrix, sinusoidal_table  # noqa: E402
from course_lib.viz import (dimension_curves, extrapolation_figure, position_similarity,  # noqa: E402
                            rotary_relative_figure, rotation_figure, sinusoidal_heatmap,
                            sinusoidal_overview)
from course_lib.widgets import sinusoidal_explorer  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _image(fig, axis=0):
    return np.asarray(fig.axes[axis].images[0].get_array())


def test_heatmap_shows_the_table_with_positions_across():
    fig = sinusoidal_heatmap(d_model=16, length=30, base=100.0)
    np.testing.assert_allclose(_image(fig), sinusoidal_table(30, 16, 100.0).T.numpy())


def test_similarity_is_normalised_to_one_on_the_diagonal():
    img = _image(position_similarity(d_model=32, length=20))
    np.testing.assert_allclose(np.diag(img), 1.0, atol=1e-5)
    np.testing.assert_allclose(img, img.T, atol=1e-6)


def test_overview_has_both_panels():
    fig = sinusoidal_overview(d_model=8, length=12)
    assert _image(fig, 0).shape == (8, 12) and _image(fig, 1).shape == (12, 12)


def test_dimension_curves_plot_the_chosen_columns():
    fig = dimension_curves(dims=(0, 3), d_model=8, length=10, base=100.0)
    table = sinusoidal_table(10, 8, 100.0)
    dots = [ax.lines[1].get_ydata() for ax in fig.axes]
    np.testing.assert_allclose(dots[0], table[:, 0].numpy(), atol=1e-6)
    np.testing.assert_allclose(dots[1], table[:, 3].numpy(), atol=1e-6)


def test_rotation_figure_draws_m_k():
    fig = rotation_figure(k=2, d_model=8, pair=0, length=10)
    np.testing.assert_allclose(_image(fig), shift_matrix(2, 8).numpy())


def test_extrapolation_figure_draws_one_line_per_model():
    fig = extrapolation_figure([2, 4], {"none": [0.5, 0.2], "sinusoidal": [1.0, 0.9]},
                               {"none": [np.nan, 0.1, 0.2], "sinusoidal": [np.nan, 1, 1]}, train_len=2,
                               chance=0.1)
    assert len(fig.axes[0].get_lines()) >= 2
    np.testing.assert_allclose(fig.axes[0].get_lines()[1].get_ydata(), [100, 90])


def test_extrapolation_shading_starts_past_the_longest_training_length():
    """Issue 29: "shaded: longer" began at n = 16, a length the models were trained on."""
    fig = extrapolation_figure([12, 14, 16, 18, 20], {"learned": [1, 1, 1, 0.9, 0.8]},
                               {"learned": [np.nan] + [1.0] * 19}, train_len=16)
    (span,) = [p for p in fig.axes[0].patches]
    assert 16 < span.get_x() < 18
    (span,) = [p for p in fig.axes[1].patches]
    assert span.get_x() == 15.5                       # positions 0 … 15 were seen


def test_rotary_figure_reads_diagonals():
    s = torch.arange(10.0)[None, :] - torch.arange(10.0)[:, None]       # S[m, j] = j - m
    fig = rotary_relative_figure(s, max_offset=3)
    lines = fig.axes[1].get_lines()   # axes[-1] is the colour bar
    greys, rows = lines[0::2], lines[1::2]                               # each row over the first row's shape
    assert len(rows) >= 2
    for r, (grey, row) in enumerate(zip(greys, rows)):
        np.testing.assert_allclose(row.get_ydata(), grey.get_ydata())  # depends on the offset alone
        shift = row.get_ydata() - np.arange(-3, 4)
        np.testing.assert_allclose(shift, shift[0])                     # the same curve, only moved up...
        assert r == 0 and shift[0] == 0 or shift[0] > 6                 # ... clear of the row below


def test_rotary_figure_shows_a_position_dependent_row():
    s = torch.arange(10.0)[None, :] - torch.arange(10.0)[:, None]
    s[5] = 0.0                                                          # one query's row breaks the pattern
    fig = rotary_relative_figure(s, max_offset=3)
    rows, greys = fig.axes[1].get_lines()[1::2], fig.axes[1].get_lines()[0::2]
    assert any(not np.allclose(row.get_ydata(), grey.get_ydata()) for row, grey in zip(rows, greys))


def test_heatmap_colour_bar_spans_minus_one_to_one():
    fig = sinusoidal_heatmap(d_model=16, length=30)
    ticks = list(fig.axes[1].get_yticks())
    assert ticks[0] == -1 and ticks[-1] == 1


@pytest.mark.parametrize("fn, kwargs, message", [
    (sinusoidal_heatmap, dict(d_model=0), "d_model must be"),
    (sinusoidal_heatmap, dict(length=2.5), "length must be an int"),
    (position_similarity, dict(base=1.0), "base must be a number > 1"),
    (sinusoidal_overview, dict(base="10"), "base must be"),
    (dimension_curves, dict(dims=(0, 64), d_model=64), "dims must be between 0 and 63"),
    (dimension_curves, dict(dims=()), "at least one dimension"),
    (rotation_figure, dict(d_model=7), "d_model must be even"),
    (rotation_figure, dict(pair=8, d_model=16), "pair must be between"),
    (rotary_relative_figure, dict(scores=torch.zeros(3, 4)), "square"),
    (rotary_relative_figure, dict(scores=torch.zeros(2, 2)), "n >= 3"),
    (rotary_relative_figure, dict(scores=torch.zeros(4, 4), max_offset=4), "max_offset must be"),
    (extrapolation_figure, dict(lengths=[2, 4], by_length={"a": [1.0]}, by_position={"a": [1.0]},
                                train_len=2), "has 1 values for 2 lengths"),
    (extrapolation_figure, dict(lengths=[2], by_length={}, by_position={}, train_len=2), "at least one model"),
])
def test_bad_arguments_are_named(fn, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fn(**kwargs)


def test_explorer_redraws_when_each_slider_moves():
    w = sinusoidal_explorer()
    d_model, length, base = w.children[:3]
    w.update()                                      # what the first display does
    first = _image(w.draw.last_figure)
    assert first.shape == (64, 100)

    d_model.value = 16
    assert _image(w.draw.last_figure).shape == (16, 100)
    length.value = 50
    assert _image(w.draw.last_figure).shape == (16, 50)
    before = _image(w.draw.last_figure).copy()
    base.value = 10.0
    after = _image(w.draw.last_figure)
    assert after.shape == before.shape and not np.allclose(after, before)
    np.testing.assert_allclose(after, sinusoidal_table(50, 16, 10.0).T.numpy(), atol=1e-6)


def test_explorer_table_keeps_two_pixels_per_dimension():
    """At d_model = 256 the table's ~1 px rows of alternating sin and cos read as a moiré (issue
    29): the slider stops where every dimension still gets at least 2 pixels of the panel."""
    w = sinusoidal_explorer()
    d_model = w.children[0]
    d_model.value = d_model.max
    fig = w.draw.last_figure
    fig.canvas.draw()
    rows_px = fig.axes[0].get_window_extent().height / d_model.max
    assert _image(fig).shape[0] == d_model.max and rows_px >= 2, f"{rows_px:.2f} px per dimension"


def test_explorer_callback_is_fast():
    import time
    w = sinusoidal_explorer()
    d_model, length = w.children[:2]
    d_model.value, length.value = d_model.max, length.max          # the largest setting
    start = time.perf_counter()
    w.update()
    assert time.perf_counter() - start < 3.0        # generous: the test machine is shared
