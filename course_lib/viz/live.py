"""Figures that follow a slider: built once, then only what moved is drawn again.

An explorer's slider asks for the same picture with one number changed, many times a
second. Building a matplotlib figure (axes, ticks, `tight_layout`) and drawing all of it
costs about 140 ms on a 2-core laptop; most of that is the frame (axes, tick labels,
titles of the panels) which does not change with the slider. A `LivePlot` builds the
figure once, draws the frame once and keeps its pixels; a new value then changes the
*moving* artists' data (bar heights, an image's array, a title) and draws only those
over the kept frame (matplotlib's "blitting", here on an Agg canvas).

A subclass says which artists move and how::

    class Bars(LivePlot):
        def build(self, fig, temperature):      # everything; return the moving artists
            ...
        def update(self, temperature):           # new data on the moving artists
            ...
        def describe(self, temperature):         # the figure in words, from the same data
            ...

`plot.figure(**values)` is the plain figure (pyplot's, shown inline like any other);
`plot(**values)` is the live one: the same `Figure` object every time, off pyplot, its
Agg buffer already holding the picture (`course_lib.widgets` turns it into a PNG).
Values named in `redraw_on` change the frame (axis limits, ticks): the frame is drawn
again. Values in `rebuild_on` change the figure's layout (number of panels): it is built
again.
"""
from __future__ import annotations

import copy

import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .describe import describe as describe_figure

__all__: list = []     # imported from here by name: not re-exported as a figure by course_lib.viz


def is_rendered(fig) -> bool:
    """Whether `fig`'s Agg buffer already holds its picture (a live plot just drew it)."""
    return bool(getattr(fig, "_course_rendered", False))


class LivePlot:
    """A figure drawn once, then updated in place as values change (see the module doc)."""

    figsize = (6.4, 4.8)
    rebuild_on: tuple = ()     # values whose change needs a new figure (layout)
    redraw_on: tuple = ()      # values whose change needs the frame drawn again

    def build(self, fig, **values):
        """Draw everything on `fig` for `values`; return the artists `update` changes."""
        raise NotImplementedError

    def update(self, **values):
        """Set the moving artists to `values` (data, text, colours); draw nothing."""
        raise NotImplementedError

    def describe(self, **values):
        """What the figure shows for `values`, in words: a text, or a dict of
        `course_lib.viz.describe.describe`'s keyword arguments (text, table, extra_values).
        Called after `update`, so it may read the moving artists' data. The default says
        nothing (None): every course figure overrides it (tests/test_figure_descriptions.py)."""
        return None

    def _describe(self, fig, values):
        said = self.describe(**values)
        if said is not None:
            describe_figure(fig, **(said if isinstance(said, dict) else {"text": said}))

    def redraw_frame(self):
        """Call from `update` when the new values moved the frame (the layout follows the
        data): the frame is drawn again before the moving artists."""
        self._background = None

    def check(self, **values):
        """Raise ValueError for values the plot cannot draw (the default accepts all)."""

    # -- the plain figure -------------------------------------------------------------
    def figure(self, **values):
        """A new pyplot figure for `values`, drawn the ordinary way. Returns the Figure."""
        self.check(**values)
        plot = copy.copy(self)          # its own artists: the live figure's stay as they are
        fig = plt.figure(figsize=self.figsize)
        plot.build(fig, **values)
        plot.update(**values)
        plot._describe(fig, values)
        return fig

    # -- the live figure --------------------------------------------------------------
    def __call__(self, **values):
        """The live figure for `values`: the same Figure as last time where the layout
        allows, with only the moving artists drawn again. Its Agg buffer is current."""
        self.check(**values)
        last = getattr(self, "_values", None)
        changed = set(values) if last is None else {k for k, v in values.items() if last.get(k) != v}
        fig = getattr(self, "_fig", None)
        if fig is None or changed & set(self.rebuild_on):
            fig = Figure(figsize=self.figsize)      # off pyplot: nothing closes or shows it
            FigureCanvasAgg(fig)
            self._fig, self._background = fig, None
            self._moving = list(self.build(fig, **values))
        elif changed & set(self.redraw_on):
            self._background = None
        self.update(**values)
        self._describe(fig, values)
        self._values = dict(values)
        canvas = fig.canvas
        if not isinstance(canvas, FigureCanvasAgg):   # pragma: no cover - defensive
            canvas, self._background = FigureCanvasAgg(fig), None
        if self._background is None:            # the frame: everything but what moves
            for artist in self._moving:           # laid out, not drawn (a title keeps its place)
                artist.set_animated(True)
            canvas.draw()
            self._background = canvas.copy_from_bbox(fig.bbox)
            for artist in self._moving:           # any other full draw shows them all
                artist.set_animated(False)
        else:
            canvas.restore_region(self._background)
        # In matplotlib's order: the spines (zorder 2.5) lie above bars, images and curves,
        # and below texts and legends (a label at the axes' edge covers the spine).
        above = [a for a in self._moving if a.axes is None or a.get_zorder() > 2.5]
        for artist in self._moving:
            if not any(artist is a for a in above):
                fig.draw_artist(artist)
        for ax in {a.axes for a in self._moving if a.axes is not None and a.axes.axison}:
            for spine in ax.spines.values():
                fig.draw_artist(spine)
        for artist in above:
            fig.draw_artist(artist)
        fig._course_rendered = True
        return fig
