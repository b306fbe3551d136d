"""Shared wiring: controls over a `viz` function, with a figure that follows the hand.
Length: one module on purpose — the worker that draws the latest value, the controls'
spoken values and the not-live guard act on the same few objects of one explorer.

`live_figure(viz_fn, **controls)` is the course's `interact`: the controls, then the
figure, then one status line. Inside a Jupyter kernel the figure is drawn by a worker
thread and **the latest value wins**: a control change only records what is wanted and
returns, so the kernel reads the next key press at once; when the worker is free it draws
the newest value and skips every value already left behind. A drawing function that
*streams* (lesson 06's and 11's samplers) shows a first answer quickly, fills in the rest,
and is abandoned as soon as a newer value is wanted.

The figure is an `ipywidgets.Image` holding the PNG matplotlib's inline backend would
show (same dpi, cropped to the ink), so a saved lesson shows its last figure without a
kernel. Outside a kernel (pytest, scripts) every change is drawn at once, in the caller's
thread, so tests can set `slider.value` and read `widget.draw.last_figure`.

While the learner pauses, the worker draws ahead: the pictures one step away on every
control (`_look_ahead.py`), so that the next press is answered with a picture already
drawn. It does so only in a kernel, for explorers that do not stream, and never while a
cell runs.
"""
from __future__ import annotations

import atexit
import functools
import html
import io
import os
import threading
import time
import weakref

import ipywidgets as W
import matplotlib.pyplot as plt

from ..viz.describe import description
from ..viz.live import is_rendered
from . import _spoken
from ._caption import FigureCaption
from ._look_ahead import CELLS, Pictures, neighbours, png_size, with_serial

__all__ = ["live_figure", "show_figure", "Superseded"]


class Superseded(Exception):
    """A newer value is wanted: the drawing for this one is dropped."""


def _kernel_shell():
    """The IPython shell of the Jupyter kernel we run in (comm messages arrive), or None."""
    try:
        from IPython import get_ipython
    except ImportError:                       # pragma: no cover - IPython comes with ipywidgets
        return None
    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None


def _in_kernel():
    """Whether we run inside a Jupyter kernel."""
    return _kernel_shell() is not None


def figure_png(fig, pad=10, serial=None, at_least=None):
    """`fig` as PNG bytes, cropped to its ink plus `pad` pixels (what the inline backend's
    tight crop shows), at the figure's dpi. `serial`, when given, is written into the
    PNG as a text chunk, so two drawings of the same picture are different bytes.
    `at_least` (width, height) in pixels: white is added right and below up to that size
    (a streaming explorer's partial answer as large as the picture before it).

    One Agg draw, then the crop in numpy: the inline backend's `bbox_inches="tight"` draws
    the figure twice (once to measure it), which is half of a slider's wait. Nothing a viz
    function draws lies outside its canvas (tests/test_widgets_live.py checks the explorers).
    """
    import numpy as np
    from PIL import Image

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    # Drawn on an Agg canvas of its own: a figure built in the worker thread does not
    # always have one (seen in a kernel: "'FigureCanvasBase' object has no attribute
    # 'buffer_rgba'" about one press in six), and the PNG must not depend on the backend.
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    if not (canvas is fig.canvas and is_rendered(fig)):   # a live plot's buffer is current
        canvas.draw()
    rgb = np.asarray(canvas.buffer_rgba())[..., :3]
    ink = (rgb < 250).any(axis=2)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if rows.size:
        rgb = rgb[max(rows[0] - pad, 0):rows[-1] + pad + 1, max(cols[0] - pad, 0):cols[-1] + pad + 1]
    if at_least is not None:            # white right and below, up to at_least
        rgb = np.pad(rgb, ((0, max(0, at_least[1] - rgb.shape[0])), (0, max(0, at_least[0] - rgb.shape[1])), (0, 0)),
                     constant_values=255)
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(out, format="png", compress_level=1)
    return out.getvalue() if serial is None else with_serial(out.getvalue(), serial)


def _text_of(fig):
    """The figure's words: (its description, its result-first caption source; describe.py),
    or ("", "") when it has none."""
    desc = description(fig)
    return (desc.text, desc.result) if desc is not None else ("", "")


class _Drawn:
    """`widget.draw.last_figure`: the latest figure drawn (what tests inspect)."""

    last_figure = None


class LiveFigure(W.VBox):
    """Controls (children[:-3]), the figure (an Image), its caption (the figure's
    description: the picture's alt and a live text, `_caption.py`) and a status line.

    `draw(**values)` returns a Figure; with `streams=True` it is called as
    `draw(show, **values)`, calls `show(make_figure)` for each partial answer (a
    function that builds the Figure, called only when it will be shown) and returns the
    final Figure. `show` raises `Superseded` once a newer value is wanted; `show()`
    only checks that (call it often in a long computation).
    The status line carries `data-wanted` (changes received), `data-shown` (the change
    the figure shows), `data-final` (0 while a streaming answer fills in) and
    `data-drawn-ms` (the ms from starting to draw it to sending it; 0: drawn ahead).
    `look_ahead` (default: in a kernel, unless it streams) draws the pictures one step
    away while the controls rest (see the module doc); it needs `threaded`.
    """

    LOOK_AHEAD_AFTER_S = 0.15   # the controls and the cells this still: the learner pauses

    def __init__(self, draw, controls, streams=False, threaded=None, look_ahead=None, title=None):
        self._viz, self._streams = draw, streams
        self._controls = dict(controls)
        self._threaded = _in_kernel() if threaded is None else threaded
        if look_ahead is None:          # COURSE_LOOK_AHEAD=0: never (e.g. a hub short of CPU)
            look_ahead = self._threaded and not streams and _in_kernel() and \
                os.environ.get("COURSE_LOOK_AHEAD", "1") != "0"
        if look_ahead and (streams or not self._threaded):
            raise ValueError("look_ahead needs threaded=True and streams=False")
        self._pictures = Pictures() if look_ahead else None
        self._ahead, self._touched, self._direction, self._changed_at = [], None, 1, 0.0
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%", height="auto", align_self="flex-start"))
        self.caption = FigureCaption(title=title or _title(controls))
        self.status = W.HTML()
        super().__init__(list(self._controls.values()) + [self.image, self.caption, self.status])
        self.add_class("widget-interact")
        self.add_class("course-live")
        self.draw = _Drawn()
        self._lock = threading.Condition()
        self._status_lock = threading.Lock()
        self._wanted = self._shown = self._serial = 0
        self._started, self._drawn_ms = time.perf_counter(), 0   # how long the shown picture took
        self._final, self._busy, self._worker, self._stopping = True, False, None, False
        self._shown_size = None          # (width, height) px of the last picture shown
        for control in self._controls.values():
            control.observe(self._on_change, names="value")
        if self._pictures is not None and _in_kernel():
            shell = _kernel_shell()
            if CELLS.watch(shell):      # after the clock's own handler: the cell counts as running
                shell.events.register("pre_run_cell", _let_drawings_finish)
        self._render(0)                 # the first figure, drawn before the cell ends
        if self._pictures is not None:
            with self._lock:
                self._start_worker()    # it draws ahead once the cell (and Run All) is done

    def values(self):
        """The controls' current values, by name."""
        return {name: control.value for name, control in self._controls.items()}

    def __repr__(self):
        # The text/plain a notebook shows where the widget cannot render: say what to do.
        # Kept short: ipywidgets cuts it at 110 characters.
        return "[an explorer (sliders over a figure): run this cell to bring it to life]"

    def update(self):
        """Draw again with the controls' current values (as `interactive.update` does);
        the pictures drawn ahead are forgotten (what they show may have changed)."""
        if self._pictures is not None:
            with self._lock:
                self._pictures.clear()
                self._ahead = []
        self._on_change(None)

    def _lead(self, values):
        """What changed, as the caption says it first ("d_k 128"); "" before any change."""
        control = self._controls.get(self._touched)
        if control is None:
            return ""
        value = (values or {}).get(self._touched, control.value)
        return _spoken.lead(control, value)

    def _up_to_date(self):
        return self._shown == self._wanted and self._final

    def _set_status(self, message="", error=False):
        with self._status_lock:         # the worker and the kernel's thread both write it
            text = message or ("" if self._up_to_date() else "updating …")
            colour = "#b00020" if error else "#666"
            self.status.value = (
                f'<span class="course-live-status" data-wanted="{self._wanted}" '
                f'data-shown="{self._shown}" data-final="{int(self._final)}" '
                f'data-drawn-ms="{self._drawn_ms}" '
                f'style="color:{colour}; font-size:90%">{html.escape(text)}</span>')

    def _on_change(self, change):
        with self._lock:
            self._changed_at = time.monotonic()
            if change is not None:          # which control moved, which way: looked ahead first
                self._touched = next((n for n, c in self._controls.items() if c is change["owner"]), None)
                try:
                    self._direction = 1 if change["new"] >= change["old"] else -1
                except TypeError:           # not ordered (a menu of strings): up first
                    self._direction = 1
            self._wanted += 1
            version = self._wanted
            if self._threaded:
                self._start_worker()
                self._lock.notify_all()
        if self._threaded:
            self._set_status()          # "updating …" until the worker catches up
        else:
            self._render(version)

    def _display(self, fig, version, final, values=None):
        """Show `fig` as the figure of change number `version` (drawn for `values`). A partial
        answer is as large as the picture before it at least: its text is short, and cropped
        to its ink the output shrank and the page below jumped (issue 29)."""
        png, text = figure_png(fig, at_least=None if final else self._shown_size), _text_of(fig)
        plt.close(fig)                  # pyplot forgets it: the inline backend never shows it twice
        self.draw.last_figure = fig
        if final and values is not None and self._pictures is not None:
            with self._lock:
                self._pictures.keep(values, png, text)
        self._drawn_ms = round(1000 * (time.perf_counter() - self._started))
        self._show_png(png, version, final, values, text)

    def _show_png(self, png, version, final, values=None, text=("", "")):
        # A serial number in every PNG: JupyterLab's widget manager drops an Image value
        # equal to one it showed before (seen in Chromium: T 1.00 -> 1.12 -> 1.00 left the
        # 1.12 figure on screen), so the same picture drawn again must be new bytes.
        self._serial += 1
        self._shown_size = png_size(png)
        self.image.value = with_serial(png, self._serial)
        text, result = text if isinstance(text, tuple) else (text, "")
        if text and (final or not self.caption.text):   # a partial answer: said once it is final
            self.caption.show(text, self._lead(values), result)
        self._shown, self._final = version, final
        if final and values is not None and self._pictures is not None:
            with self._lock:            # what to draw ahead from here
                self._ahead = [v for v in neighbours(self._controls, self._touched, self._direction)
                               if v not in self._pictures]
        self._set_status()

    def _render(self, version):
        """Draw change number `version` with the current values; drop it once stale."""
        self._started = time.perf_counter()
        values = self.values()
        if self._pictures is not None:
            with self._lock:
                png, text = self._pictures.get(values), self._pictures.text(values)
            if png is not None:         # drawn ahead (or shown before): sent at once
                self._drawn_ms = 0
                self._show_png(png, version, True, values, text)
                return
        try:
            fig = self._draw_once_more_if_closed(values, version)
            if version != self._wanted:
                plt.close(fig)
                raise Superseded
            self._display(fig, version, final=True, values=values)
        except Superseded:
            pass
        except Exception as error:      # a bad value: say so, keep the last figure
            self._shown, self._final = version, True
            self._set_status(f"{type(error).__name__}: {error}", error=True)
            if not self._threaded:
                raise

    def _draw(self, values, version):
        if not self._streams:
            return self._viz(**values)

        def show(make_figure=None):
            if version != self._wanted:
                raise Superseded
            if self._threaded and make_figure is not None:   # partial answers: only live
                fig = make_figure()
                if version != self._wanted:     # wanted no more while it was drawn: no PNG, not sent
                    plt.close(fig)
                    raise Superseded
                self._display(fig, version, final=False)
        return self._viz(show, **values)

    def _draw_once_more_if_closed(self, values, version):
        """Draw; once more if pyplot closed the figure under the worker.

        In a kernel, pyplot (a process-wide registry) now and then closes a figure the
        worker is still building, which resets its canvas ("'FigureCanvasBase' object has
        no attribute 'get_renderer'" in tight_layout, about one press in twenty in Chromium,
        lesson 07); the figure is then drawn once more.
        """
        try:
            return self._draw(values, version)
        except AttributeError as error:
            if "FigureCanvasBase" not in str(error):
                raise
            return self._draw(values, version)

    def _start_worker(self):
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="course-live-figure", daemon=True)
            self._worker.start()
            _WORKING.add(self)

    def _stop(self, timeout):
        """Let the worker finish what it draws, then end (at exit: see `_stop_workers`)."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        if self._worker is not None and self._worker is not threading.current_thread():
            self._worker.join(timeout)

    def _work(self):
        """The worker: whenever the figure is behind, draw the newest change; while the
        learner pauses, draw ahead (one picture at a time, so a new change waits for at
        most one drawing)."""
        while True:
            with self._lock:
                self._busy = False
                self._lock.notify_all()
                ahead = None
                while self._up_to_date() and ahead is None and not self._stopping:
                    pause = self._look_ahead_pause()
                    if pause is None or pause > 0:
                        self._lock.wait(pause)
                    else:
                        ahead = self._ahead.pop(0)
                if self._stopping:
                    return
                self._busy = True
                version = self._wanted
            if ahead is None:
                self._render(version)
            else:
                self._draw_ahead(ahead)

    def _look_ahead_pause(self):
        """Seconds until the worker may draw ahead (0: now); None: nothing to draw ahead.
        Called with the lock held."""
        if self._pictures is None:
            return None
        while self._ahead and self._ahead[0] in self._pictures:
            self._ahead.pop(0)
        if not self._ahead:
            return None
        still = time.monotonic() - self._changed_at
        if CELLS.shells:                # in a kernel: no cell running either
            still = min(still, CELLS.idle_for())
        return max(0.0, self.LOOK_AHEAD_AFTER_S - still)

    def _draw_ahead(self, values):
        """Draw the picture for `values` (one step away) and keep it; show nothing."""
        try:
            fig = self._draw_once_more_if_closed(values, None)
            png, text = figure_png(fig), _text_of(fig)
            plt.close(fig)
        except Exception:               # a value the figure refuses: said when it is chosen
            return
        with self._lock:
            self._pictures.keep(values, png, text)

    def wait(self, timeout=30.0):
        """Block until the figure shows the latest change (True), or `timeout` s pass."""
        with self._lock:
            return self._lock.wait_for(lambda: self._up_to_date() and not self._busy, timeout)


_WORKING = weakref.WeakSet()       # the explorers with a worker thread


def _let_drawings_finish(*_, timeout=10.0):
    """Before a cell runs: let each worker finish the picture it is drawing and the
    learner's last change (none starts drawing ahead while the cell runs), so the cell's
    figures are not drawn beside it: matplotlib is not thread-safe, and lesson 00's figure
    drawn beside a worker came out 558×206 px instead of 592×250 once in a full test run.
    A drawing takes a second or two; `timeout` bounds the wait."""
    deadline = time.monotonic() + timeout
    for widget in list(_WORKING):
        with widget._lock:
            widget._lock.wait_for(lambda w=widget: (w._up_to_date() and not w._busy) or w._stopping,
                                  max(0.0, deadline - time.monotonic()))


@atexit.register
def _stop_workers(timeout=30.0):
    """At exit (a kernel shut down or restarted), let each worker finish its drawing
    before Python finalises: a daemon thread stopped inside matplotlib's C++ code aborts
    the process ("terminate called without an active exception"). A drawing takes a
    second or two, on a busy machine several times that (5 s was too short beside the test
    suite); Jupyter stops a kernel that has not exited after its own shutdown wait anyway."""
    for widget in list(_WORKING):
        widget._stop(timeout)


def _title(controls) -> str:
    """An explorer's heading when none is given: "Explorer: " and what its controls set."""
    names = [(getattr(c, "description", "") or name).strip() for name, c in dict(controls).items()]
    return "Explorer: " + ", ".join(n for n in names if n)


def live_figure(viz_fn, streams=False, threaded=None, look_ahead=None, title=None, **controls):
    """The controls, then the figure `viz_fn(**values)` draws, kept up to date.

    viz_fn returns a matplotlib Figure (or, with streams=True, is called as
    viz_fn(show, **values), see `LiveFigure`); it must depend on the values only (the
    pictures drawn ahead are kept: call the widget's `update()` when something else
    changed). `title`: its heading (default: "Explorer: " and its controls' labels).
    Returns the `LiveFigure` widget.
    """
    return LiveFigure(viz_fn, controls, streams=streams, threaded=threaded, look_ahead=look_ahead, title=title)


def show_figure(viz_fn):
    """Wrap `viz_fn` (returns a Figure) so that `interact` displays it (kept for code
    written against the older wiring; the course's explorers use `live_figure`)."""
    @functools.wraps(viz_fn)
    def callback(**kwargs):
        fig = viz_fn(**kwargs)
        callback.last_figure = fig          # kept for tests: inspect what was drawn
        plt.show()
        return None

    callback.last_figure = None
    return callback
