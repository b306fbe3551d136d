"""Exercise checkers, one module per lesson (`lesson00.py`, `lesson02.py` …).

Each `check_*` takes the learner's function (or class), compares it with the
reference on random inputs, prints a one-line verdict and returns it. It never
raises: a stub prints "not solved yet", a crash prints where it happened.
Every lesson module's `__all__` is re-exported here. Inside `with demo():` a check
prints its verdict but is not recorded as the learner's attempt. `show_solution("2.1")`
shows an exercise's solution on purpose (and records that the learner looked).
"""
from .._discover import export_submodules
from ..classroom.solutions import show_solution  # noqa: F401  (a solution on purpose)
from .framework import Exercise, Mistake, Verdict, demo  # noqa: F401

_OWN = ("Exercise", "Mistake", "Verdict", "demo", "show_solution")
__all__ = list(_OWN) + [n for n in export_submodules(__name__, globals()) if n not in _OWN]
