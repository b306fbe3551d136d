"""Pure plotting functions: data in, matplotlib Figure out (no widgets, no display).

One module per lesson topic; each module's `__all__` is re-exported here.
"""
from .._discover import export_submodules

__all__ = export_submodules(__name__, globals())
