"""Concept checks of lesson 00 (start here): how checks, demos and solutions work.

0.q1 is the lesson's demonstration of a concept check (what ⏳ means); the others ask back
what the first exercise showed. Each `verify` reruns the lesson's own check on the slip the
question is about and asserts the verdict the right option names.
"""
import contextlib
import io

import torch

from .questions import Choice, Option, Predict

__all__ = ["QUESTIONS"]


def _verdict_of(fn):
    """The verdict check_center_rows gives `fn`, as a demonstration (nothing recorded, nothing printed)."""
    from course_lib.exercises import check_center_rows, demo
    with demo(), contextlib.redirect_stdout(io.StringIO()):
        return check_center_rows(fn)


def _verify_hourglass():
    def stub(x):
        raise NotImplementedError("center_rows: write your solution here")
    verdict = _verdict_of(stub)
    assert verdict.status == "todo", f"a stub should give ⏳ not solved yet, got {verdict}"


def _verify_column_mean():
    verdict = _verdict_of(lambda x: x - x.mean(dim=0, keepdim=True))
    assert verdict.status == "wrong" and "column" in verdict.message, \
        f"the column mean should be rejected by name, got {verdict}"


def _verify_in_place():
    def center_rows_in_place(x):
        x -= x.mean(dim=-1, keepdim=True)
        return x
    x = torch.randn(4, 5)
    assert torch.allclose(center_rows_in_place(x.clone()), x - x.mean(dim=-1, keepdim=True)), \
        "the in-place version's returned values should be right"
    verdict = _verdict_of(center_rows_in_place)
    assert verdict.status == "wrong" and "in place" in verdict.message, \
        f"changing the input should be rejected by name, got {verdict}"


def _verify_run_all():
    # A check never raises, whatever the learner's function does: Run All carries on.
    def crashes(x):
        return x @ x                       # (n, d) @ (n, d) with n != d: a shape error
    for fn in (crashes, lambda x: x - x.mean(dim=0, keepdim=True)):
        verdict = _verdict_of(fn)          # would raise here if a check could stop Run All
        assert not verdict.passed


QUESTIONS = [
    Choice(
        "0.q1",
        "You run the check after an exercise, and it prints **⏳ not solved yet**. What does that mean?",
        [
            Option("Your function is still the stub that raises `NotImplementedError`; the lesson "
                   "carries on with the course's own code.",
                   "Right: ⏳ *not solved yet* means the check found the stub. Replace it with your "
                   "code, run that cell, then the check again.", right=True),
            Option("The check is still running: wait for it to finish.",
                   "No: the check has finished when it prints. ⏳ *not solved yet* is its verdict on "
                   "a stub, not a progress sign — see the legend in §4."),
            Option("Your answer is wrong.",
                   "No: a wrong answer gets ❌ *not right yet*, with the likely mistake (the next "
                   "cells show two). ⏳ *not solved yet* means there is no answer yet."),
            Option("Your code raised an error.",
                   "No: an error in your code gets 💥 *crashed*, with the line where it happened. "
                   "⏳ *not solved yet* means the stub is still there. (The verdicts are listed in section 4.)"),
        ],
        verify=_verify_hourglass,
    ),
    Predict(
        "0.q2",
        "The next cell hands the checker a slip: `x - x.mean(dim=0, keepdim=True)` for `x` of shape "
        "$(n, d)$. What will the check print?",
        [
            Option("✅ correct: the result still sums to zero.",
                   "No: what sums to zero now is each *column*. `dim=0` averages down the columns; a "
                   "row's own mean is over the last axis, `dim=-1`. (The demo cell below prints the check's verdict.)"),
            Option("❌ not right yet, naming the column mean.",
                   "Right: `dim=0` is the mean of each column, and the checker recognises that slip "
                   "by name. A row's mean is `x.mean(dim=-1, keepdim=True)`.", right=True),
            Option("💥 crashed: the shapes $(n, d)$ and $(1, d)$ cannot be subtracted.",
                   "No: with `keepdim=True` the column means have shape $(1, d)$, which broadcasts "
                   "against $(n, d)$. It runs, and computes the wrong thing. (The demo cell below: no crash, a ❌.)"),
            Option("⏳ not solved yet.",
                   "No: ⏳ *not solved yet* is only for the stub. Here there is a function, and it "
                   "gives an answer — the wrong one. (The demo cell below prints ❌, naming the column mean.)"),
        ],
        reveal="3d811b7a",
        verify=_verify_column_mean,
    ),
    Choice(
        "0.q3",
        "`center_rows_in_place` returns the right values, yet the checker rejects it. Why?",
        [
            Option("`x -= m` computes something different from `x - m`.",
                   "No: the values are the same — the lesson says the returned values are right. What "
                   "differs is *where* they are written: into the caller's tensor."),
            Option("The checker rejects every use of `-=`.",
                   "No: `-=` on a tensor your function made itself is fine. The slip is changing the "
                   "input the caller handed you. (The in-place demo above: the check says the function changed its input.)"),
            Option("It changed the caller's `x`: after the call, the caller's tensor holds the centred values.",
                   "Right: `x -= …` writes into the tensor the caller passed in. The caller may still "
                   "need it; build a new tensor, `x - …`.", right=True),
        ],
        verify=_verify_in_place,
    ),
    Choice(
        "0.q4",
        "In your copy of a lesson, your answer to an exercise raises an error, so its check prints **💥 crashed**. "
        "You choose *Run All*. What happens to the cells after the check?",
        [
            Option("Run All stops at the check, like at any error.",
                   "No: your function raised *inside* the check, which caught it and printed 💥 crashed with "
                   "the line where it happened. The check cell itself does not fail."),
            Option("They run: a check never raises, and later cells use the course's own reference code.",
                   "Right: a check prints its verdict and returns; later cells import the library's "
                   "version, so an unsolved exercise never blocks a lesson.", right=True),
            Option("They run, but every later cell uses your broken function.",
                   "No: later cells use the course's reference implementation from `course_lib`, not "
                   "yours — so the rest of the lesson works whatever your answer is."),
        ],
        verify=_verify_run_all,
    ),
    # 0.q5 has no verify: how the course's own tools behave (recorded, one step away): tested in
    # tests/test_solutions*, not a number the lesson computes.
    Choice(
        "0.q5",
        "You are stuck and run `show_solution(\"0.1\")`. What does it do?",
        [
            Option("Writes the solution into your exercise cell.",
                   "No: it only shows the solution. Your cell stays as you wrote it; you type (or "
                   "copy) the code yourself."),
            Option("Shows the solution and records nothing.",
                   "No: looking is recorded in your progress file — §5 says so, and "
                   "`show_progress()` then lists the exercise as *solved after seeing the solution*."),
            Option("Shows the instructor's solution, and your progress notes that you looked: "
                   "*solved after seeing the solution*.",
                   "Right: it shows the solution and records that you looked, so your progress says "
                   "honestly how an exercise was solved. *Run All* never runs it.", right=True),
            Option("Marks the exercise as failed, so it can no longer be solved.",
                   "No: you can still solve it and run its check; the progress then says *solved after "
                   "seeing the solution*. (Section 5, *Your copy of the course*.)"),
        ],
    ),
]
