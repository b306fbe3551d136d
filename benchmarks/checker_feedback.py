"""How long a check spends past its planted mistakes (issue 44), measured, not asserted.

    python benchmarks/checker_feedback.py            # 1 thread, every checker
    python benchmarks/checker_feedback.py softmax    # some checkers only

For each mistake no checker plants (the learners' slips of tests/test_hint_truth.py), the check
runs as a learner's would; the table shows, per checker, the slowest time of

- search: the smallest-counterexample search (bounded by feedback.SEARCH_BUDGET_S = 0.5 s) —
  for code that crashed, the search for the smallest input that crashes,
- past: everything after the planted mistakes — the properties, then the search,
- verdict: the whole check, planted mistakes included,

and which kind of message each slip got (property, counterexample, crash on a small input or on
the check's input). Goal: search ≤ 0.5 s per check.
"""
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))   # the slips are defined beside their tests

import course_lib.exercises  # noqa: E402,F401  (fills the registry)
from course_lib.console import utf8_output  # noqa: E402
from course_lib.exercises import feedback, framework  # noqa: E402


def _timed(fn, store):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            store.append(time.perf_counter() - start)
    return wrapper


def _kind(message):
    if "fails on a small input" in message:
        return "crash (small)"
    if "your code raised" in message:
        return "crash"
    if "small input" in message or "differs from the reference" in message:
        return "counterexample"
    return "property"


def main(names):
    from test_hint_truth import UNLISTED

    utf8_output()
    torch.set_num_threads(1)
    search, past = [], []
    feedback.smallest_counterexample = _timed(feedback.smallest_counterexample, search)
    for step in ("past_the_mistakes", "explain", "smallest_crash"):   # what the check calls after them
        setattr(framework, step, _timed(getattr(feedback, step), past))
    rows, worst_search = [], 0.0
    print(f"{'checker':<24} {'slips':>5} {'search max s':>13} {'past max s':>11} {'verdict max s':>14}  messages")
    for name, cases in UNLISTED.items():
        if names and name not in names:
            continue
        ex = framework.REGISTRY[name]
        search.clear(), past.clear()
        verdicts, kinds = [], []
        for _, fn, *_ in cases:
            start = time.perf_counter()
            v = ex.verdict(fn)
            verdicts.append(time.perf_counter() - start)
            kinds.append(_kind(v.message) if v.message not in {m.hint for m in ex.mistakes} else "planted")
        s_max = max(search, default=0.0)
        worst_search = max(worst_search, s_max)
        rows.append(max(verdicts))
        print(f"{name:<24} {len(cases):>5} {s_max:>13.3f} {max(past, default=0.0):>11.3f} "
              f"{max(verdicts):>14.3f}  {', '.join(kinds)}")
    print(f"\nslowest counterexample search: {worst_search:.3f} s (budget {feedback.SEARCH_BUDGET_S} s); "
          f"median slowest verdict per checker: {statistics.median(rows):.3f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
