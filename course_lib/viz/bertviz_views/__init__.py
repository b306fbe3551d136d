"""Attention weights -> bertviz views that render offline, with a text alternative
(lessons 08, 09, 10, 11).

    from course_lib.viz import bertviz_views
    bertviz_views.show("head", attention, tokens=labels, layer=3, heads=[1])

- views.py: `show(view, attention, ...)` returns a `BertvizView`, the whole view as one
  HTML output that survives save and reload;
- offline.py: what makes bertviz 1.4.1's HTML render with no network (d3 and jQuery
  inlined from installed packages, a require.js shim, the drawing fitted to the page);
- text.py: the view in words — its strongest links, computed from the same weights —
  under the drawing and as its `text/plain`, for a screen reader and a keyboard;
- queries.py: `collect_queries_keys(model, ...)`, the q and k the neuron view needs.

A subpackage of `course_lib.viz` (not re-exported by it: import it by its name).
"""
from .offline import VIEWS, offline_libraries
from .queries import collect_queries_keys
from .views import BertvizView, show

__all__ = ["show", "BertvizView", "collect_queries_keys", "offline_libraries", "VIEWS"]
