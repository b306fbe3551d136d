"""Live plots (course_lib/viz/live.py): built once, the frame drawn once, only what moves
drawn again — and the picture the same as the plain figure's for the same values.

Every explorer that passes a `LivePlot` to its wiring is checked here against its own
plain figure, along a walk over its controls' ranges (tests/test_widgets_live.py lists
the explorers).
"""
import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from PIL import Image  # noqa: E402

from course_lib.viz.basics import TemperatureBars  # noqa: E402
from course_lib.viz.live import LivePlot, is_rendered  # noqa: E402
from course_lib.widgets._wiring import figure_png  # noqa: E402

from test_widgets_live import _explorers  # noqa: E402


def _pixels(fig):
    return np.asarray(Image.open(io.BytesIO(figure_png(fig))).convert("RGB")).astype(int)


def assert_same_picture(live, plain, what):
    """Blitting draws the moving artists over the frame, so antialiased edges where they
    cross a grid line may differ by a few levels; anything more is a wrong picture."""
    a, b = _pixels(live), _pixels(plain)
    assert a.shape == b.shape, f"{what}: live picture {a.shape[1]}×{a.shape[0]} px, plain {b.shape[1]}×{b.shape[0]} px"
    off = np.abs(a - b).max(axis=2) > 60
    assert off.sum() <= max(10, off.size // 20000), f"{what}: {off.sum()} of {off.size} pixels differ from the plain figure's"


@pytest.fixture
def full_draws(monkeypatch):
    """Whole-figure draws (FigureCanvasAgg.draw) from here on: a list, one entry per draw."""
    draws = []
    full_draw = FigureCanvasAgg.draw
    monkeypatch.setattr(FigureCanvasAgg, "draw", lambda self: (draws.append(1), full_draw(self))[1])
    return draws


def assert_walk_matches(plot, values_list, what):
    """Step the live plot through `values_list`; after each step its picture must be the
    plain figure's for the same values."""
    for values in values_list:
        live = plot(**values)
        plain = plot.figure(**values)
        assert_same_picture(live, plain, f"{what} {values}")
        plt.close(plain)


class Line(LivePlot):
    """A toy: y = a·x on a fixed frame; `top` changes the y limit (a redraw), `panels` the layout."""

    figsize = (3, 2)
    redraw_on = ("top",)
    rebuild_on = ("panels",)

    def build(self, fig, a, top, panels):
        axes = fig.subplots(1, panels, squeeze=False)[0]
        self.ax = axes[0]
        (self.line,) = self.ax.plot([0, 1], [0, a])
        return [self.line]

    def update(self, a, top, panels):
        self.line.set_ydata([0, a])
        self.ax.set_ylim(0, top)


def test_the_frame_is_drawn_once_and_only_the_moving_artists_after(full_draws):
    draws = full_draws
    plot = TemperatureBars([2.0, 1.0, 0.5], ["a", "b", "c"])
    figures = {id(plot(temperature=t)) for t in np.linspace(0.2, 5, 12)}
    assert len(figures) == 1, "a new figure for each value"
    assert len(draws) == 1, f"the whole figure drawn {len(draws)} times for 12 values"
    fig = plot(temperature=1.5)
    assert is_rendered(fig)
    before = len(draws)
    figure_png(fig)
    assert len(draws) == before, "figure_png drew a live figure its plot had just drawn"


def test_a_live_figure_is_off_pyplot():
    plt.close("all")
    plot = TemperatureBars([2.0, 1.0], ["a", "b"])
    for t in (0.5, 1.0, 2.0):
        plot(temperature=t)
    assert plt.get_fignums() == []             # the inline backend never shows or closes it
    fig = plot.figure(temperature=1.0)          # the plain figure is pyplot's, shown inline
    assert plt.get_fignums() == [fig.number] and not is_rendered(fig)
    plt.close("all")


def test_redraw_on_draws_the_frame_again_and_rebuild_on_makes_a_new_figure(full_draws):
    draws = full_draws
    plot = Line()
    first = plot(a=0.5, top=1.0, panels=1)
    plot(a=0.7, top=1.0, panels=1)
    assert len(draws) == 1
    assert plot(a=0.7, top=2.0, panels=1) is first and len(draws) == 2
    assert plot.ax.get_ylim() == (0.0, 2.0)
    assert_same_picture(first, Line().figure(a=0.7, top=2.0, panels=1), "y limit 2")
    before = len(draws)
    second = plot(a=0.7, top=2.0, panels=2)
    assert second is not first and len(second.axes) == 2 and len(draws) == before + 1
    plt.close("all")


def test_a_value_the_plot_cannot_draw_is_refused_before_anything_changes():
    plot = TemperatureBars([2.0, 1.0], ["a", "b"])
    fig = plot(temperature=1.0)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        plot(temperature=0.0)
    assert plot(temperature=1.0) is fig
    with pytest.raises(ValueError, match="temperature must be > 0"):
        plot.figure(temperature=-1.0)


def _walk(control):
    """Values along a control's range: both ends, the middle, back to the start."""
    if getattr(control, "options", None):
        options = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return [options[-1], options[len(options) // 2], options[0]]
    lo, hi = control.min, control.max
    if hasattr(control, "base"):                # a log slider: min and max are exponents
        return [control.base ** hi, control.base ** ((lo + hi) / 2), control.base ** lo, control.value]
    mid = type(control.value)(lo + (hi - lo) / 2) if not isinstance(control.value, int) else (lo + hi) // 2
    return [hi, mid, lo, control.value]


def _live_explorers():
    return {name: make for name, make in _explorers().items()}


@pytest.mark.parametrize("name", list(_live_explorers()))
def test_each_live_explorer_shows_the_picture_of_its_plain_figure(name):
    w = _live_explorers()[name]()
    plot = w._viz
    if not isinstance(plot, LivePlot):
        pytest.skip(f"{name} draws a new figure for each value (no LivePlot)")
    sliders = [c for c in w.children[:-2] if hasattr(c, "min") or getattr(c, "options", None)]
    for control in sliders:
        for value in _walk(control):
            control.value = value
            plain = plot.figure(**w.values())
            assert_same_picture(w.draw.last_figure, plain, f"{name}, {control.description} = {value}")
            plt.close(plain)
    plt.close("all")


class ForgetsTheTitle(TemperatureBars):
    """A planted mistake: the title changes but is not listed as moving, so the frame's
    old title stays on screen."""

    def build(self, fig, temperature):
        return [a for a in super().build(fig, temperature) if a is not self.title]


def test_the_comparison_catches_an_artist_left_out_of_the_moving_ones():
    plot = ForgetsTheTitle([2.0, 1.0, 0.5], ["a", "b", "c"])
    plot(temperature=1.0)
    live = plot(temperature=4.0)
    with pytest.raises(AssertionError, match="pixels differ"):
        assert_same_picture(live, plot.figure(temperature=4.0), "planted")
    plt.close("all")


def test_a_full_draw_of_a_live_figure_shows_what_the_blit_showed():
    """Tests, savefig and the HTML export draw a figure the ordinary way: the moving
    artists must not be left out of it."""
    plot = TemperatureBars([2.0, 1.0, 0.5], ["a", "b", "c"])
    plot(temperature=1.0)
    fig = plot(temperature=0.3)
    blitted = np.asarray(fig.canvas.buffer_rgba()).astype(int)
    fig.canvas.draw()
    drawn = np.asarray(fig.canvas.buffer_rgba()).astype(int)
    assert (np.abs(blitted - drawn).max(axis=2) > 60).sum() <= 10
