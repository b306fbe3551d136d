"""Transformers, hands-on: the code the lessons build, importable and tested.

Heavy optional imports (transformers, bertviz) live inside the functions that
need them, so `import course_lib` stays fast.
"""

__version__ = "0.1.0"
