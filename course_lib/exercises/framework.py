"""The checker framework behind every exercise.

An :class:`Exercise` knows the reference solution, how to make random inputs,
and a list of :class:`Mistake` s. A mistake is a *planted wrong implementation*
with its hint: when the learner's output matches a mistake's output on the same
inputs, we print that mistake's hint. The same list doubles as the test suite
(tests plant each mistake and expect exactly its hint).

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

OK, WRONG, TODO, CRASHED = "ok", "wrong", "todo", "crashed"
_ICONS = {OK: "✅", WRONG: "❌", TODO: "⏳", CRASHED: "💥"}


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
        return f"{_ICONS[self.status]} {self.exercise}: {self.message}"

    def _ipython_display_(self):
        # The checker already printed the verdict; showing it again as the
        # cell's value would print it twice.
        pass


@dataclass
class Mistake:
    """A common wrong answer: `fn` reproduces it, `hint` explains it."""

    hint: str
    fn: Callable


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
    generic_hint: str = "the values differ from the reference; print a small example and compare by hand"
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
        return describe_inputs(_param_names(self.reference), args)

    def _mistake_like(self, args, res: Result) -> Mistake | None:
        """A planted mistake that, on these inputs, crashes exactly like `res` or returns the
        same (possibly wrong-shaped) value — so a crash or a shape message can name the slip."""
        for mistake in self.mistakes:
            out = self._call(mistake.fn, args)
            if res.error is not None and _same_crash(res.error, out.error):
                return mistake
            if res.error is None and out.error is None and out.value is not None \
                    and close(res.value, out.value, self.atol):
                return mistake
        return None

    def _inputs(self) -> list[tuple]:
        gen = torch.Generator().manual_seed(1234)
        return [self.make_inputs(gen) for _ in range(self.trials)]

    def verdict(self, fn) -> Verdict:
        """Compare `fn` with the reference on random inputs; never raises."""
        def say(status, msg):
            return Verdict(self.name, status, msg)

        if not callable(fn):
            return say(WRONG, f"expected a function, got {_describe(fn)}")
        trials = self._inputs()
        results, non_finite = [], None
        for args in trials:
            res = self._call(fn, args)
            if res.not_implemented:
                return say(TODO, "not solved yet — replace the `raise NotImplementedError` "
                                 "with your code, then run this check again.")
            if res.error is not None:
                known = self._mistake_like(args, res)
                if known is not None:
                    return say(WRONG, known.hint)
                where = f" ({res.where})" if res.where else ""
                used = self._describe(args)
                used = f" — the checker called it with {used}" if used else ""
                return say(CRASHED, f"your code raised {type(res.error).__name__}: "
                                    f"{res.error}{where}{used}")
            if res.mutated_input:
                return say(WRONG, "your function changed its input in place (e.g. `x -= ...`); "
                                  "compute a new tensor instead, the caller still needs the original")
            expected = self._call(self.reference, args).value
            problem = problem_with_output(res.value, expected, self.output_names)
            if problem and " contains " in problem:
                # NaN/inf: a planted mistake may produce exactly this (e.g. an
                # unstable softmax), so its hint gets the first chance below.
                non_finite = non_finite or problem
            elif problem:
                known = self._mistake_like(args, res)
                return say(WRONG, known.hint if known is not None else problem)
            results.append((args, res.value, expected))

        if non_finite is None and all(close(v, e, self.atol) for _, v, e in results):
            return say(OK, "correct — matches the reference on "
                           f"{len(results)} random inputs.")
        for mistake in self.mistakes:
            # Lazily: a mistake is dropped at the first trial it does not reproduce, so a wrong
            # answer no mistake explains costs about one trial per mistake, not all of them.
            outs = (self._call(mistake.fn, args).value for args, _, _ in results)
            if all(o is not None and close(v, o, self.atol) for (_, v, _), o in zip(results, outs)):
                return say(WRONG, mistake.hint)
        return say(WRONG, non_finite or self.generic_hint)

    def check(self, fn, record: bool = True) -> Verdict:
        """Print the verdict for a learner's function and return it.

        record=False (or a surrounding `with demo():`) prints the verdict without storing
        it in the learner's progress file: for a lesson's own demonstration of a slip.
        """
        try:
            v = self.verdict(fn)
        except Exception as e:   # noqa: BLE001 — a bug here must not stop "Run All"
            v = Verdict(self.name, CRASHED, f"the checker itself failed ({type(e).__name__}: {e}); "
                                            "please report this")
        print(v)
        if record and not _DEMO[0]:
            from ..classroom.records import record as store   # local: progress is optional plumbing
            from ..classroom.solutions import solutions_enabled
            store(self.name, self.lesson, v.status, hint=v.message)
            if v.status in (WRONG, CRASHED) and solutions_enabled():
                print(f"   Stuck? A new cell with `from course_lib.exercises import show_solution; "
                      f'show_solution("{self.name}")` shows a solution (your progress notes that you looked).')
        return v
