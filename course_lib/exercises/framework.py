"""The checker framework behind every exercise.
Length: one procedure (run the learner's code, match it against the planted mistakes on every
input and probe, then fall back to feedback.py) whose steps share one Exercise's state.

An :class:`Exercise` knows the reference solution, how to make random inputs,
and a list of :class:`Mistake` s. A mistake is a *planted wrong implementation*
with its hint: when the learner's code does what a mistake does on every input of
the check (including `probes`, shapes on which the mistakes differ from one another),
we print that mistake's hint. A mistake is matched by what it computes: one that crashes on
every input would be matched by its error text alone, which other slips share, so a probe must
let it run — unless its error names it (`Mistake.by_error`). The same list doubles as the
test suite (tests plant each mistake and expect exactly its hint). Past the list,
`feedback.py` names a failed property of the right answer, else the smallest input where the
learner's code differs (or crashes).

A check never raises into "Run All": stubs, crashes, ``None``, wrong shapes,
dtypes and NaNs all become a printed :class:`Verdict`.
"""
from __future__ import annotations

import contextlib
import copy
import inspect
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from .feedback import explain, past_the_mistakes, smallest_crash, where_not_finite

OK, WRONG, TODO, CRASHED = "ok", "wrong", "todo", "crashed"
_ICONS = {OK: "✅", WRONG: "❌", TODO: "⏳", CRASHED: "💥"}
# The words right after the mark: a font without emoji shows the marks as empty boxes, and a
# screen reader names them ("cross mark"); the words carry the verdict either way.
_WORDS = {OK: "correct", WRONG: "not right yet", TODO: "not solved yet", CRASHED: "crashed"}


@dataclass
class Verdict:
    """What a check concluded. Printed once by the checker; returned for tests."""

    exercise: str
    status: str          # "ok" | "wrong" | "todo" | "crashed"
    message: str

    @property
    def passed(self) -> bool:
        return self.status == OK

    def __str__(self) -> str:
        """"❌ not right yet — softmax: <the message>": mark, words, exercise, message (a
        message that starts with the words, "correct — matches …", does not repeat them)."""
        word, message = _WORDS[self.status], self.message
        if message.lower().startswith(word):
            message = message[len(word):].lstrip(" —–-:,")
        return f"{_ICONS[self.status]} {word} — {self.exercise}: {message}"

    def _ipython_display_(self):
        # The checker already printed the verdict; showing it again as the
        # cell's value would print it twice.
        pass


@dataclass
class Mistake:
    """A common wrong answer: `fn` reproduces it, `hint` explains it.

    by_error: the mistake crashes on every valid input, and its error says what the hint says
    (a TypeError on `torch.return_types.max`; a torch.cat along dim 0). Only then may a crash
    that matches the error text earn the hint; any other mistake is matched on inputs where it
    runs (tests/test_hint_truth.py holds both rules).
    """

    hint: str
    fn: Callable
    by_error: bool = False


@dataclass
class Result:
    """The outcome of calling learner code once."""

    value: Any = None
    error: BaseException | None = None
    where: str = ""            # "line 3 in center_rows" — the learner's frame
    not_implemented: bool = False
    mutated_input: bool = False


def _learner_frame(exc: BaseException) -> str:
    """Describe the innermost frame outside course_lib and torch: the learner's line."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if "course_lib" not in f.filename and "/torch/" not in f.filename]
    if not mine:
        return ""
    f = mine[-1]
    line = f" — `{f.line.strip()}`" if f.line else ""
    return f"line {f.lineno} in {f.name}{line}"


def _describe_arg(name: str, a) -> str | None:
    """One input as the learner would name it: "x (2, 4, 6)", "eps = 0.01"; None to skip."""
    if isinstance(a, torch.Tensor):
        return f"{name} {tuple(a.shape)}" if a.dim() else f"{name} = {a.item():g}"
    if isinstance(a, bool) or a is None:
        return f"{name} = {a}"
    if isinstance(a, (int, float)):
        odd = ", an odd size" if isinstance(a, int) and name.startswith("d_") and a % 2 else ""
        return f"{name} = {a:g}{odd}"
    if isinstance(a, (list, tuple)) and a and all(isinstance(r, (list, tuple)) for r in a):
        return f"{name}: {len(a)} lists of lengths {', '.join(str(len(r)) for r in a)}"
    if isinstance(a, torch.nn.Module):
        return f"{name}: {type(a).__name__}"
    return None          # state dicts and other plumbing: not something the learner passed


def describe_inputs(names: Sequence[str], args: tuple) -> str:
    """'x (2, 4, 6), gamma (6,), eps = 0.01' — the sizes of one call, for crash messages."""
    names = list(names) + [f"argument {i + 1}" for i in range(len(names), len(args))]
    parts = [_describe_arg(n, a) for n, a in zip(names, args)]
    return ", ".join(p for p in parts if p)


def _param_names(fn) -> list[str]:
    """The reference's parameter names (a class: its forward's), or [] if they can't be read."""
    try:
        target = fn.forward if inspect.isclass(fn) else fn
        names = list(inspect.signature(target).parameters)
    except (TypeError, ValueError, AttributeError):
        return []
    return names[1:] if inspect.isclass(fn) and names[:1] == ["self"] else names


def _same_crash(a: BaseException | None, b: BaseException | None) -> bool:
    return a is not None and b is not None and type(a) is type(b) and str(a) == str(b)


_DEMO = [False]   # True inside `demo()`: checks print their verdict but record nothing


@contextlib.contextmanager
def demo():
    """Run checks as a demonstration: the verdict is printed, the progress file is not touched.

    with demo():
        check_cross_attention(cross_attention_causal)   # a slip shown on purpose
    """
    before, _DEMO[0] = _DEMO[0], True
    try:
        yield
    finally:
        _DEMO[0] = before


def _clone(x):
    return copy.deepcopy(x)


def _same(a, b) -> bool:
    """Exact equality for the inputs we hand out (tensors, numbers, nested tuples)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return True   # modules, callables: not checked for mutation


def run_learner_code(fn: Callable, *args) -> Result:
    """Call `fn(*args)` on copies of the inputs, catching everything it may do wrong."""
    given = _clone(args)
    try:
        with torch.no_grad():
            value = fn(*given)
    except NotImplementedError as e:
        return Result(error=e, not_implemented=True)
    except Exception as e:   # noqa: BLE001 — learner code may raise anything
        return Result(error=e, where=_learner_frame(e))
    return Result(value=value, mutated_input=not _same(given, args))


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _describe(t) -> str:
    if isinstance(t, torch.Tensor):
        return f"a tensor of shape {tuple(t.shape)} and dtype {t.dtype}"
    return f"an object of type {type(t).__name__}"


def problem_with_output(value, expected, names: Sequence[str]) -> str | None:
    """A specific message if `value` is not even the right kind of thing, else None.

    Checks, in order: None, tuple length, tensor type, shape, dtype, NaN/inf.
    """
    if value is None:
        return "your function returned None — did you forget the `return`?"
    got, want = _as_tuple(value), _as_tuple(expected)
    if len(want) > 1 and not isinstance(value, (tuple, list)):
        return f"expected a tuple ({', '.join(names)}), got {_describe(value)}"
    if len(got) != len(want):
        return f"expected {len(want)} value(s) ({', '.join(names)}), got {len(got)}"
    for name, g, w in zip(names, got, want):
        if not isinstance(g, torch.Tensor):
            return f"`{name}` should be a torch tensor, got {_describe(g)}"
        if g.shape != w.shape:
            return f"`{name}` has shape {tuple(g.shape)}, expected {tuple(w.shape)}"
        if g.dtype != w.dtype:
            return f"`{name}` has dtype {g.dtype}, expected {w.dtype}"
        if g.is_floating_point() and not torch.isfinite(g).all():
            bad = "NaN" if torch.isnan(g).any() else "inf"
            return f"`{name}` contains {bad} values — look for a division by zero or exp overflow"
    return None


def close(a, b, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """True if every tensor in a matches the one in b (tuples compared element-wise)."""
    a, b = _as_tuple(a), _as_tuple(b)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            return False
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        x_f, y_f = x.detach().double(), y.detach().double()
        if not torch.allclose(x_f, y_f, atol=atol, rtol=rtol, equal_nan=True):
            return False
    return True


REGISTRY: dict[str, "Exercise"] = {}   # every exercise, by name (the tests walk it)


@dataclass
class Exercise:
    """One exercise: reference, inputs, known mistakes.

    make_inputs(gen) -> tuple of positional args for one trial.
    run(fn, args) -> what fn produced (override to build a module first, etc.).
    """

    name: str
    reference: Callable
    make_inputs: Callable[[torch.Generator], tuple]
    mistakes: list[Mistake] = field(default_factory=list)
    output_names: Sequence[str] = ("output",)
    # Issue 44: past the planted mistakes a check names a failed property of the right answer
    # (feedback.Property), else the smallest input on which the learner's code differs.
    properties: list = field(default_factory=list)
    # probes(gen) -> more inputs, of other shapes (a square matrix, one row…), on which the planted
    # mistakes differ from one another: a mistake's hint needs a match on these too.
    probes: Callable[[torch.Generator], list] | None = None
    # small_inputs(gen) -> inputs from the smallest up, for the counterexample search.
    small_inputs: Callable[[torch.Generator], list] | None = None
    # The inputs' names when the reference's parameters do not name them (a class's inputs).
    input_names: Sequence[str] | None = None
    trials: int = 3
    atol: float = 1e-5
    run: Callable | None = None
    # Other correct solutions (einsum, loops...): tests check they are accepted.
    alternatives: list[Callable] = field(default_factory=list)
    # How a crash message names the inputs: describe(args) -> "x (2, 4, 6), eps = 0.01".
    # Default: the reference's parameter names with each input's shape or value.
    describe: Callable[[tuple], str] | None = None

    def __post_init__(self):
        REGISTRY[self.name] = self
        # The module that created this exercise (frame 0: here, 1: dataclass __init__).
        self._module = sys._getframe(2).f_globals.get("__name__", "")

    @property
    def lesson(self) -> str:
        """'02' for an exercise defined in course_lib/exercises/lesson02.py; a lesson with many
        exercises may spread them over modules named lesson06_masking.py, lesson06_sampling.py …"""
        m = re.match(r"lesson(\d+)(?:_\w+)?$", self._module.rsplit(".", 1)[-1])
        return m.group(1) if m else "??"

    def _call(self, fn, args) -> Result:
        if self.run is None:
            return run_learner_code(fn, *args)
        return run_learner_code(lambda *a: self.run(fn, a), *args)

    def _describe(self, args) -> str:
        if self.describe is not None:
            return self.describe(args)
        return describe_inputs(self._names(), args)

    def _same_behaviour(self, res: Result, out: Result) -> bool:
        """Two runs on the same inputs did the same thing: the same crash, or close values."""
        if res.error is not None or out.error is not None:
            return _same_crash(res.error, out.error)
        return out.value is not None and close(res.value, out.value, self.atol)

    def _known_mistake(self, inputs, runs) -> Mistake | None:
        """The first planted mistake that did what the learner's code did on every input of the
        check: the same values where it ran, the same crash where it crashed. The inputs include
        the probes, on which the planted mistakes differ from one another, so a match is a
        diagnosis and not a coincidence (issue 44: a max without keepdim crashes like a sum
        without it on a 5 × 7 input, but not on a square one). A mistake that crashed on every
        input matched on error text alone, which another slip may share (scores transposed with
        the right keys raise what keys from x raise): it counts only when its error names it
        (`Mistake.by_error`); then the learner's code may also run where it crashes (a greedy
        branch that drops the token's axis, a sampling branch that keeps it), as long as it
        crashed, and crashed alike, somewhere. Lazily: a mistake is dropped at its first mismatch."""
        crashed = any(r.error is not None for r in runs)
        for mistake in self.mistakes:
            ran = False
            for args, res in zip(inputs, runs):
                out = self._call(mistake.fn, args)
                if self._same_behaviour(res, out):
                    ran = ran or out.error is None
                elif not (mistake.by_error and crashed and res.error is None and out.error is not None):
                    break
            else:
                if ran or mistake.by_error:
                    return mistake
        return None

    def _inputs(self) -> list[tuple]:
        """The check's inputs: `trials` random ones, then the probes."""
        gen = torch.Generator().manual_seed(1234)
        inputs = [self.make_inputs(gen) for _ in range(self.trials)]
        return inputs + (list(self.probes(gen)) if self.probes is not None else [])

    def _names(self) -> list[str]:
        return list(self.input_names) if self.input_names else _param_names(self.reference)

    def verdict(self, fn) -> Verdict:
        """Compare `fn` with the reference on the check's inputs; never raises.

        In order: a stub; an input changed in place; a planted mistake that did what `fn` did
        on every input (its hint); a crash; the wrong kind of output; NaN or inf; the first
        property of the right answer that fails; the smallest input on which `fn` differs.
        """
        def say(status, msg):
            return Verdict(self.name, status, msg)

        if not callable(fn):
            return say(WRONG, f"expected a function, got {_describe(fn)}")
        inputs = self._inputs()
        runs = []
        for args in inputs:
            res = self._call(fn, args)
            if res.not_implemented:
                return say(TODO, "not solved yet — replace the `raise NotImplementedError` "
                                 "with your code, then run this check again.")
            runs.append(res)
        expected = [self._call(self.reference, args).value for args in inputs]
        crash = next(((args, r) for args, r in zip(inputs, runs) if r.error is not None), None)
        if crash is None and all(not r.mutated_input and close(r.value, e, self.atol)
                                 for r, e in zip(runs, expected)):
            return say(OK, f"correct — matches the reference on {self.trials} random inputs.")
        if crash is None and any(r.mutated_input for r in runs):
            return say(WRONG, "your function changed its input in place (e.g. `x -= ...`); "
                              "compute a new tensor instead, the caller still needs the original")
        known = self._known_mistake(inputs, runs)
        if known is not None:
            return say(WRONG, known.hint)
        if crash is not None:
            # The crash on the smallest input that crashes, if a small one does (issue 44 §3).
            said = smallest_crash(self, fn)
            if said:
                return say(CRASHED, said)
            args, res = crash
            where = f" ({res.where})" if res.where else ""
            used = self._describe(args)
            used = f" — the checker called it with {used}" if used else ""
            return say(CRASHED, f"your code raised {type(res.error).__name__}: "
                                f"{res.error}{where}{used}")
        problems = [problem_with_output(r.value, e, self.output_names) for r, e in zip(runs, expected)]
        problem = next((p for p in problems if p and " contains " not in p), None)
        if problem:
            return say(WRONG, problem)
        if any(problems):
            # NaN or inf, but the right kind of output: a failed property (on the inputs where
            # the output is finite) or a small input where it differs says more than the NaN
            # (a column's max subtracted gives NaN on a row of -60s, and [0.5, 0.5] on [[0, 1]]).
            said = explain(self, fn, inputs, runs, expected, close, finite_only=True)
            return say(WRONG, said or where_not_finite(self, inputs, runs))
        return say(WRONG, past_the_mistakes(self, fn, inputs, runs, expected, close))

    def check(self, fn, record: bool = True) -> Verdict:
        """Show the verdict for a learner's function and return it.

        The verdict (and, when it is not ✅, how to see a solution) is one paragraph, shown
        as text and announced once to a screen reader (`course_lib.classroom.speak.say`).
        record=False (or a surrounding `with demo():`) shows the verdict without storing
        it in the learner's progress file: for a lesson's own demonstration of a slip.
        """
        from ..classroom.speak import say   # local: display plumbing, like the records below

        try:
            v = self.verdict(fn)
        except Exception as e:   # noqa: BLE001 — a bug here must not stop "Run All"
            v = Verdict(self.name, CRASHED, f"the checker itself failed ({type(e).__name__}: {e}); "
                                            "please report this")
        recording = record and not _DEMO[0]
        said = str(v)
        if recording:
            from ..classroom.solutions import solutions_enabled
            if v.status in (WRONG, CRASHED) and solutions_enabled():
                said += ("\n   Stuck? In a new cell, `from course_lib.exercises import show_solution; "
                         f'show_solution("{self.name}")` shows one way to solve it: compare it with '
                         "yours, then write your own without looking.")
        say(said)
        if recording:
            from ..classroom.records import record as store   # local: progress is optional plumbing
            store(self.name, self.lesson, v.status, hint=v.message)
        return v
