"""ipywidgets explorers, each a thin layer of sliders over a `viz` function."""
from .basics import temperature_explorer  # noqa: F401
