"""Looking ahead (course_lib/widgets/_look_ahead.py and the worker in _wiring.py): while
the learner pauses, an explorer draws the pictures one step away; the next press shows
one of them at once, and it is the picture a fresh drawing would give.

A kernel is simulated: `_wiring._kernel_shell` returns a stand-in shell whose cell events
the tests fire (no look-ahead while a cell runs), and each test gets its own cell clock.
"""
import io
import re
import time

import matplotlib

matplotlib.use("Agg")

import ipywidgets as W  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from course_lib.viz.live import LivePlot  # noqa: E402
from course_lib.widgets import _look_ahead, _wiring  # noqa: E402
from course_lib.viz.describe import description  # noqa: E402
from course_lib.widgets._look_ahead import Pictures, key_of, neighbours, with_serial  # noqa: E402
from course_lib.widgets._wiring import figure_png, live_figure  # noqa: E402

from test_widgets_live import SlowViz, _explorers, _figure, _status  # noqa: E402


class Events:
    def __init__(self):
        self.handlers = {}

    def register(self, name, fn):
        self.handlers.setdefault(name, []).append(fn)

    def fire(self, name):
        for fn in self.handlers.get(name, []):
            fn(None)


class Shell:
    """Enough of a kernel's IPython shell: `.kernel` and `.events`."""
    kernel = object()

    def __init__(self):
        self.events = Events()

    def cell_done(self):
        self.events.fire("post_run_cell")

    def cell_starts(self):
        self.events.fire("pre_run_cell")


@pytest.fixture
def kernel(monkeypatch):
    """A simulated kernel (threaded explorers that look ahead); the test runs in a cell
    until it calls `kernel.cell_done()`."""
    shell = Shell()
    monkeypatch.setattr(_wiring, "_kernel_shell", lambda: shell)
    monkeypatch.setattr(_wiring, "CELLS", _look_ahead._CellClock())
    yield shell
    _wiring._stop_workers()        # no worker of this test draws beside the next one


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(bytes(png))).convert("RGB")).astype(int)


# How long a drawing may take at most: a bound on waiting, not a claim about speed (these tests
# run at low priority beside the browser pass, where a 2 s walk was seen to take over 30 s).
PATIENCE = 180.0


def _settled(w, timeout=PATIENCE):
    """Wait until the figure is current and nothing is left to draw ahead."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with w._lock:
            if w._up_to_date() and not w._busy and w._look_ahead_pause() is None:
                return True
        time.sleep(0.02)
    return False


# -- the parts ---------------------------------------------------------------------------
def test_a_serial_is_a_text_chunk_and_leaves_the_pixels_alone():
    png = figure_png(_figure(1))
    marked = with_serial(png, 41)
    image = Image.open(io.BytesIO(marked))
    assert image.text["course-live-figure"] == "41"
    assert (_pixels(marked) == _pixels(png)).all() and marked != with_serial(png, 42)
    with pytest.raises(ValueError, match="not a complete PNG"):
        with_serial(png[:-4], 1)
    plt.close("all")


def test_one_step_away_on_every_kind_of_control_the_touched_one_first():
    controls = {"n": W.IntSlider(value=4, min=0, max=10, step=2),
                "t": W.FloatSlider(value=0.85, min=0.0, max=0.9, step=0.05),
                "base": W.FloatLogSlider(value=100.0, base=10, min=1, max=4, step=0.5),
                "h": W.Dropdown(options=[1, 2, 4, 8], value=8),
                "mode": W.SelectionSlider(options=[("pre", "pre-norm"), ("post", "post-norm")], value="pre-norm"),
                "rings": W.Checkbox(value=True)}
    got = neighbours(controls, touched="t", direction=-1)
    moved = [(name, v[name]) for v in got for name in v if v[name] != controls[name].value]
    assert moved[:2] == [("t", 0.8), ("t", 0.9)], moved                  # touched, its direction first
    assert ("n", 6) in moved and ("n", 2) in moved
    assert [m for m in moved if m[0] == "base"] == [("base", round(10 ** 2.5, 12)), ("base", round(10 ** 1.5, 12))]
    assert [m for m in moved if m[0] == "h"] == [("h", 4)]                # 8 is the last option
    assert [m for m in moved if m[0] == "mode"] == [("mode", "post-norm")]
    assert [m for m in moved if m[0] == "rings"] == [("rings", False)]
    assert len(got) == 9 and all(sum(v[k] != controls[k].value for k in v) == 1 for v in got)
    up = neighbours(controls, touched="n", direction=1)
    assert up[0]["n"] == 6 and up[1]["n"] == 2


def test_keys_forget_float_noise_and_pictures_keep_the_latest():
    assert key_of({"t": 0.9}) == key_of({"t": 0.85 + 0.05}) != key_of({"t": 0.95})
    kept = Pictures(size=2)
    kept.keep({"x": 1}, b"one")
    kept.keep({"x": 2}, b"two")
    assert kept.get({"x": 1}) == b"one"           # now the most recent
    kept.keep({"x": 3}, b"three", "x is 3")
    assert {"x": 2} not in kept and kept.get({"x": 1}) == b"one" and len(kept) == 2
    assert kept.text({"x": 3}) == "x is 3" and kept.text({"x": 1}) == "" and kept.text({"x": 2}) == ""


# -- the worker ----------------------------------------------------------------------------
def _drawn_ms(w):
    return int(re.search(r'data-drawn-ms="(\d+)"', w.status.value).group(1))


def test_the_next_press_shows_a_picture_drawn_ahead(kernel):
    viz = SlowViz(0.03)
    slider = W.IntSlider(value=5, min=0, max=10)
    w = live_figure(viz, x=slider)
    assert w._threaded and w._pictures is not None
    time.sleep(0.4)
    assert viz.calls == [5], "nothing is drawn ahead while the cell runs"
    kernel.cell_done()
    assert _drawn_ms(w) >= 30, "the first picture took one drawing"
    assert _settled(w) and viz.calls == [5, 6, 4], viz.calls           # up first, then down
    sent = []
    w.image.observe(lambda change: sent.append(bytes(change["new"])), names="value")
    slider.value = 6
    assert w.wait(5) and _status(w) == (1, 1, 1)
    assert len(sent) == 1 and viz.calls[:3] == [5, 6, 4], "6 was drawn ahead: not drawn again"
    fresh = figure_png(_figure(6))
    assert (_pixels(sent[0]) == _pixels(fresh)).all(), "the picture shown is not 6's"
    assert Image.open(io.BytesIO(sent[0])).text["course-live-figure"] == str(w._serial)
    assert _drawn_ms(w) == 0, "the status says the picture was drawn ahead"
    assert _settled(w) and viz.calls == [5, 6, 4, 7], viz.calls        # moving up: 7 next
    slider.value = 5                                                   # back: shown before
    assert w.wait(5) and viz.calls == [5, 6, 4, 7] and (_pixels(sent[-1]) == _pixels(figure_png(_figure(5)))).all()
    plt.close("all")


def test_a_burst_is_not_slowed_by_drawing_ahead(kernel):
    viz = SlowViz(0.02)
    slider = W.IntSlider(value=0, min=0, max=20)
    w = live_figure(viz, x=slider)
    w.LOOK_AHEAD_AFTER_S = 2.0
    kernel.cell_done()
    assert _settled(w)
    drawn_ahead = list(viz.calls)
    for value in range(2, 12):                     # one change every 0.1 s: never still for 2 s
        slider.value = value
        time.sleep(0.1)
    during = [x for x in viz.calls[len(drawn_ahead):] if x not in range(2, 12)]
    assert during == [], f"drew ahead ({during}) while the slider was moving"
    assert _settled(w) and 12 in viz.calls and 10 in viz.calls             # then it looks ahead
    plt.close("all")


def test_nothing_is_drawn_ahead_while_a_cell_runs(kernel):
    viz = SlowViz(0)
    slider = W.IntSlider(value=3, min=0, max=10)
    w = live_figure(viz, x=slider)
    kernel.cell_done()
    assert _settled(w)
    kernel.cell_starts()                           # the learner runs a long cell
    slider.value = 4                               # (a slider moved meanwhile, say)
    assert w.wait(5)
    time.sleep(0.5)
    assert viz.calls == [3, 4, 2], viz.calls        # 4 was ahead; 5 waits for the cell
    kernel.cell_done()
    assert _settled(w) and viz.calls == [3, 4, 2, 5], viz.calls
    plt.close("all")


def test_update_forgets_the_pictures_and_a_refused_value_is_reported_when_chosen(kernel):
    state = {"offset": 0}

    def viz(x):
        if x == 7:
            raise ValueError("7 is not allowed")
        return _figure(x + state["offset"])

    slider = W.IntSlider(value=6, min=0, max=10)
    w = live_figure(viz, x=slider)
    kernel.cell_done()
    assert _settled(w) and {5} == {k[0][1] for k in w._pictures._kept} - {6}   # 7 refused: not kept
    state["offset"] = 100                          # what the figure shows changed
    w.update()
    assert w.wait(5) and _settled(w)
    slider.value = 5
    assert w.wait(5) and (_pixels(w.image.value) == _pixels(figure_png(_figure(105)))).all()
    slider.value = 6
    slider.value = 7
    assert w.wait(5) and "7 is not allowed" in w.status.value
    plt.close("all")


def test_course_look_ahead_0_turns_it_off(kernel, monkeypatch):
    monkeypatch.setenv("COURSE_LOOK_AHEAD", "0")
    viz = SlowViz(0)
    w = live_figure(viz, x=W.IntSlider(value=5, max=10))
    kernel.cell_done()
    time.sleep(0.4)
    assert w._threaded and w._pictures is None and viz.calls == [5]
    monkeypatch.setenv("COURSE_LOOK_AHEAD", "1")
    assert live_figure(viz, x=W.IntSlider(value=5, max=10))._pictures is not None


def test_a_cell_waits_for_the_drawing_in_progress(kernel):
    """matplotlib is not thread-safe: a cell that starts while the worker draws the
    learner's last change (or a picture ahead) runs once that drawing is done."""
    viz = SlowViz(0.5)
    w = live_figure(viz, x=W.IntSlider(value=0, max=10))
    kernel.cell_done()
    w.children[0].value = 3
    kernel.cell_starts()
    assert w._up_to_date() and not w._busy, f"the cell started beside the worker drawing x=3 ({viz.calls})"
    assert viz.calls[-1] == 3 and _wiring.CELLS.running
    kernel.cell_done()
    plt.close("all")


def test_look_ahead_needs_a_worker():
    with pytest.raises(ValueError, match="look_ahead needs threaded=True"):
        live_figure(_figure, threaded=False, look_ahead=True, value=W.IntSlider())
    with pytest.raises(ValueError, match="look_ahead needs threaded=True and streams=False"):
        live_figure(lambda show, value: _figure(value), streams=True, threaded=True, look_ahead=True,
                    value=W.IntSlider())


# -- every explorer: pictures drawn ahead are the plain figures' ------------------------------
def _step(control, direction):
    """The control's value one step up (+1) or down (-1), or None at the end."""
    if getattr(control, "options", None):
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        i = control.index + direction
        return values[i] if 0 <= i < len(values) else None
    cands = [v for v in _look_ahead._steps(control) if (v > control.value) == (direction > 0)]
    return cands[0] if cands else None


def _walk_with_look_ahead(name, kernel):
    """Steps up, up, down, down on the first control of explorer `name`, waiting each time
    for the worker to draw ahead on every control (a live plot goes to each neighbour and
    back): each new value must have been drawn ahead, and the picture shown must be the
    plain figure's for the controls' values. The plain figure is drawn in a cell, as a
    learner's would be: the worker's drawing ahead finishes first and waits for the cell."""
    w = _explorers()[name]()
    assert w._pictures is not None
    kernel.cell_done()                          # the explorer's cell is done
    first, control = next(iter(w._controls.items()))
    plot = w._viz
    for direction in (+1, +1, -1, -1):
        assert _settled(w), f"{name}: still drawing ahead after {PATIENCE:.0f} s"
        value = _step(control, direction)
        if value is None:                       # at the end of its range: the other way
            value = _step(control, -direction)
        assert dict(w.values(), **{first: value}) in w._pictures, f"{name}: {first}={value} not drawn ahead"
        control.value = value
        assert w.wait(PATIENCE), f"{name}: {first}={value} not shown after {PATIENCE:.0f} s"
        kernel.cell_starts()
        plain = plot.figure(**w.values()) if isinstance(plot, LivePlot) else plot(**w.values())
        a, b = _pixels(w.image.value), _pixels(figure_png(plain))
        assert a.shape == b.shape, f"{name} {w.values()}: shown {a.shape}, plain {b.shape}"
        off = np.abs(a - b).max(axis=2) > 60
        assert off.sum() <= max(10, off.size // 20000), f"{name} {w.values()}: {off.sum()} pixels differ"
        said = description(plain)       # the caption (alt and live text) says what is shown
        assert said is not None and w.caption.text == said.text, \
            f"{name} {w.values()}: caption {w.caption.text!r}, figure says {said and said.text!r}"
        plt.close("all")
        kernel.cell_done()


@pytest.mark.parametrize("name", list(_explorers()))
def test_each_explorer_shows_the_plain_figure_after_drawing_ahead(name, kernel):
    _walk_with_look_ahead(name, kernel)


def test_the_walk_catches_a_picture_kept_under_the_wrong_values(kernel, monkeypatch):
    """A planted mistake: the worker draws the values it shows, and keeps that picture as
    the neighbour's."""
    def planted(self, values):
        fig = self._viz(**self.values())
        with self._lock:
            self._pictures.keep(values, figure_png(fig))

    monkeypatch.setattr(_wiring.LiveFigure, "_draw_ahead", planted)
    with pytest.raises(AssertionError, match="pixels differ"):
        _walk_with_look_ahead("03", kernel)
    plt.close("all")


def test_the_walk_catches_a_caption_kept_from_another_picture(kernel, monkeypatch):
    """A planted mistake: pictures drawn ahead are kept with the caption of the one shown."""
    def planted(self, values):
        fig = self._viz(**values)
        with self._lock:
            self._pictures.keep(values, figure_png(fig), self.caption.text)

    monkeypatch.setattr(_wiring.LiveFigure, "_draw_ahead", planted)
    with pytest.raises(AssertionError, match="caption"):
        _walk_with_look_ahead("03", kernel)
    plt.close("all")


_EXIT_WHILE_DRAWING = r"""
import sys, threading, time, atexit
import matplotlib
matplotlib.use("Agg")
import ipywidgets as W
from matplotlib.figure import Figure
from course_lib.widgets import _wiring

import torch

PLANTED = sys.argv[1] == "planted"
drawing_ahead = threading.Event()    # set by the worker once it is inside a drawing ahead

def viz(x):                          # a model run: C++ code that lets other threads run
    a = torch.randn(300, 300)
    if x != 5:                       # the first picture (5) at once; those ahead slowly
        drawing_ahead.set()
        steps = 0
        while PLANTED or steps < 100:    # planted: still drawing whenever the exit comes
            a = torch.tanh(a @ a)
            steps += 1
    fig = Figure(figsize=(1, 1))
    fig.add_subplot().set_title(str(x))
    return fig


class HoldFinalisation:
    # Dropped when Python clears __main__, after it has begun finalising: from then on a
    # thread that wants the interpreter back is ended. Sleeping here gives the planted
    # worker, between two short torch calls, the seconds it needs to come back inside
    # C++ code, so the abort does not depend on how the machine schedules it.
    def __del__(self, sleep=time.sleep):
        sleep(5)


if PLANTED:                          # the planted mistake: no waiting for the workers at exit
    atexit.unregister(_wiring._stop_workers)
    hold = HoldFinalisation()
widget = _wiring.live_figure(viz, threaded=True, look_ahead=True, x=W.IntSlider(value=5, max=10))
if not drawing_ahead.wait(60):
    sys.exit("the worker never started drawing ahead")
"""


@pytest.mark.parametrize("planted", [False, True], ids=["as-built", "planted-no-stop"])
def test_exiting_while_a_worker_draws_ahead_is_a_clean_exit(planted):
    """A kernel shut down while an explorer draws ahead must exit, not abort (a daemon
    thread stopped inside C++ code calls std::terminate). The planted version, which does
    not wait for the workers, aborts every time: the script exits only once the worker is
    inside a drawing that never ends, and holds Python's finalisation open long enough for
    the worker to come back from torch into the interpreter there (the crash itself)."""
    import subprocess
    import sys
    from pathlib import Path

    if planted and sys.version_info >= (3, 14):
        pytest.skip("Python 3.14 parks a thread that wants the interpreter back during "
                    "finalisation instead of ending it (gh-87135): the planted crash cannot happen")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", _EXIT_WHILE_DRAWING, "planted" if planted else "as-built"],
                          cwd=root, capture_output=True, timeout=120)
    if planted:
        assert done.returncode != 0 and b"terminate called" in done.stderr, (done.returncode, done.stderr[-300:])
    else:
        assert done.returncode == 0, (done.returncode, done.stderr[-300:])
