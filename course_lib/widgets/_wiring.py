"""Shared wiring: controls over a `viz` function, with a figure that follows the hand.

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
"""
from __future__ import annotations

import functools
import html
import io
import threading

import ipywidgets as W
import matplotlib.pyplot as plt

from ..viz.live import is_rendered

__all__ = ["live_figure", "show_figure", "Superseded"]


class Superseded(Exception):
    """A newer value is wanted: the drawing for this one is dropped."""


def _in_kernel():
    """Whether we run inside a Jupyter kernel (where comm messages arrive)."""
    try:
        from IPython import get_ipython
    except ImportError:                       # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def figure_png(fig, pad=10, serial=None):
    """`fig` as PNG bytes, cropped to its ink plus `pad` pixels (what the inline backend's
    tight crop shows), at the figure's dpi. `serial`, when given, is written into the
    PNG as a text chunk, so two drawings of the same picture are different bytes.

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
    out = io.BytesIO()
    info = None
    if serial is not None:
        from PIL.PngImagePlugin import PngInfo
        info = PngInfo()
        info.add_text("course-live-figure", str(serial))
    Image.fromarray(np.ascontiguousarray(rgb)).save(out, format="png", compress_level=1, pnginfo=info)
    return out.getvalue()


class _Drawn:
    """`widget.draw.last_figure`: the latest figure drawn (what tests inspect)."""

    last_figure = None


class LiveFigure(W.VBox):
    """Controls (children[:-2]), the figure (an Image) and a status line.

    `draw(**values)` returns a Figure; with `streams=True` it is called as
    `draw(show, **values)`, calls `show(make_figure)` for each partial answer (a
    function that builds the Figure, called only when it will be shown) and returns the
    final Figure. `show` raises `Superseded` once a newer value is wanted; `show()`
    only checks that (call it often in a long computation).
    The status line carries `data-wanted` (changes received), `data-shown` (the change
    the figure shows) and `data-final` (0 while a streaming answer fills in).
    """

    def __init__(self, draw, controls, streams=False, threaded=None):
        self._viz, self._streams = draw, streams
        self._controls = dict(controls)
        self._threaded = _in_kernel() if threaded is None else threaded
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%", height="auto", align_self="flex-start"))
        self.status = W.HTML()
        super().__init__(list(self._controls.values()) + [self.image, self.status])
        self.add_class("widget-interact")
        self.add_class("course-live")
        self.draw = _Drawn()
        self._lock = threading.Condition()
        self._status_lock = threading.Lock()
        self._wanted = self._shown = self._serial = 0
        self._final, self._busy, self._worker = True, False, None
        for control in self._controls.values():
            control.observe(self._on_change, names="value")
        self._render(0)                 # the first figure, drawn before the cell ends

    def values(self):
        """The controls' current values, by name."""
        return {name: control.value for name, control in self._controls.items()}

    def __repr__(self):
        # The text/plain a notebook shows where the widget cannot render: say what to do.
        # Kept short: ipywidgets cuts it at 110 characters.
        return "[an explorer (sliders over a figure): run this cell to bring it to life]"

    def update(self):
        """Draw again with the controls' current values (as `interactive.update` does)."""
        self._on_change(None)

    def _up_to_date(self):
        return self._shown == self._wanted and self._final

    def _set_status(self, message="", error=False):
        with self._status_lock:         # the worker and the kernel's thread both write it
            text = message or ("" if self._up_to_date() else "updating …")
            colour = "#b00020" if error else "#666"
            self.status.value = (
                f'<span class="course-live-status" data-wanted="{self._wanted}" '
                f'data-shown="{self._shown}" data-final="{int(self._final)}" '
                f'style="color:{colour}; font-size:90%">{html.escape(text)}</span>')

    def _on_change(self, _change):
        with self._lock:
            self._wanted += 1
            version = self._wanted
            if self._threaded:
                self._start_worker()
                self._lock.notify_all()
        if self._threaded:
            self._set_status()          # "updating …" until the worker catches up
        else:
            self._render(version)

    def _display(self, fig, version, final):
        """Show `fig` as the figure of change number `version`."""
        # A serial number in every PNG: JupyterLab's widget manager drops an Image value
        # equal to one it showed before (seen in Chromium: T 1.00 -> 1.12 -> 1.00 left the
        # 1.12 figure on screen), so the same picture drawn again must be new bytes.
        self._serial += 1
        png = figure_png(fig, serial=self._serial)
        plt.close(fig)                  # pyplot forgets it: the inline backend never shows it twice
        self.draw.last_figure = fig
        self.image.value = png
        self._shown, self._final = version, final
        self._set_status()

    def _render(self, version):
        """Draw change number `version` with the current values; drop it once stale."""
        values = self.values()
        try:
            fig = self._draw_once_more_if_closed(values, version)
            if version != self._wanted:
                plt.close(fig)
                raise Superseded
            self._display(fig, version, final=True)
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

    def _work(self):
        """The worker: whenever the figure is behind, draw the newest change."""
        while True:
            with self._lock:
                self._busy = False
                self._lock.notify_all()
                while self._up_to_date():
                    self._lock.wait()
                self._busy = True
                version = self._wanted
            self._render(version)

    def wait(self, timeout=30.0):
        """Block until the figure shows the latest change (True), or `timeout` s pass."""
        with self._lock:
            return self._lock.wait_for(lambda: self._up_to_date() and not self._busy, timeout)


def live_figure(viz_fn, streams=False, threaded=None, **controls):
    """The controls, then the figure `viz_fn(**values)` draws, kept up to date.

    viz_fn returns a matplotlib Figure (or, with streams=True, is called as
    viz_fn(show, **values), see `LiveFigure`). Returns the `LiveFigure` widget.
    """
    return LiveFigure(viz_fn, controls, streams=streams, threaded=threaded)


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
