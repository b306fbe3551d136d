"""ipywidgets explorers, each a thin layer of sliders over a `viz` function.

One module per lesson topic; each module's `__all__` is re-exported here.
"""
from .._discover import export_submodules

__all__ = export_submodules(__name__, globals())
