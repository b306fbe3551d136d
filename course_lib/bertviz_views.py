"""Moved to `course_lib.viz.bertviz_views` (issue 39): this name stays so that a lesson
saved before the move (a learner's edited copy keeps its old import) still runs.

New code: `from course_lib.viz import bertviz_views`.
"""
from .viz.bertviz_views import VIEWS, BertvizView, collect_queries_keys, offline_libraries, show  # noqa: F401

__all__ = ["show", "BertvizView", "collect_queries_keys", "offline_libraries", "VIEWS"]
