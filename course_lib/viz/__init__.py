"""Pure plotting functions: data in, matplotlib Figure out (no widgets, no display).

One module per lesson topic; everything is re-exported here.
"""
from .basics import softmax_temperature_bars  # noqa: F401
