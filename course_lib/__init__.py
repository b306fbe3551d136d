"""Transformers, hands-on: the code the lessons build, importable and tested.

    nn/            the transformer the course builds (attention … models), decoding, training
    data/          corpora and tasks: Shakespeare, number words, dates
    experiments/   one lesson's measurements on small models (extrapolation … induction heads)
    classroom/     the environment check, progress, the student versions
    viz/ → widgets/   figures (data in, Figure out) and the explorers over them
    exercises/     one checker per exercise, with hints for common mistakes

Dependencies point one way: widgets → viz → nn → torch (tests/test_package_layout.py).
This file imports nothing, and heavy optional imports (transformers, bertviz) live inside
the functions that need them, so `import course_lib` stays fast.
"""

__version__ = "0.1.0"
