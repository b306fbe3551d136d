"""Shared wiring: turn a `viz` function into an `interact` callback."""
from __future__ import annotations

import functools

import matplotlib.pyplot as plt


def show_figure(viz_fn):
    """Wrap `viz_fn` (returns a Figure) so that interact displays it.

    The wrapper ends with plt.show(), which interact needs to refresh its output
    in ipywidgets 8 (the `%matplotlib inline` magic would break that).
    """
    @functools.wraps(viz_fn)
    def callback(**kwargs):
        fig = viz_fn(**kwargs)
        callback.last_figure = fig          # kept for tests: inspect what was drawn
        plt.show()
        return None

    callback.last_figure = None
    return callback
