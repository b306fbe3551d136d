"""Pure plotting functions: data in, matplotlib Figure out (no widgets, no display).

One module per lesson topic; each module's `__all__` is re-exported here.
"""
from .._discover import export_submodules

__all__ = export_submodules(__name__, globals())

# In a notebook, a described Figure is shown with its description as the image's alt
# (output metadata and text/html): see describe.py. Outside IPython this does nothing.
from .describe import enable_in_ipython as _enable_in_ipython  # noqa: E402

_enable_in_ipython()
