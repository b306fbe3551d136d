"""Every checker, both ways: it accepts the reference and valid alternatives, and
rejects each planted mistake with exactly that mistake's hint. Then the bad
inputs a learner can hand it: a stub, a crash, None, NaN, a wrong shape or dtype.
"""
import pytest
import torch

from course_lib.exercises import framework
from course_lib.exercises.framework import CRASHED, OK, TODO, WRONG
import course_lib.exercises  # noqa: F401  (fills the registry)

EXERCISES = sorted(framework.REGISTRY.values(), key=lambda e: e.name)
FUNCTION_EXERCISES = [e for e in EXERCISES if e.run is None]


def _ids(items):
    return [getattr(i, "name", str(i)) for i in items]


@pytest.mark.parametrize("ex", EXERCISES, ids=_ids(EXERCISES))
def test_reference_is_accepted(ex):
    assert ex.verdict(ex.reference).status == OK


ALTERNATIVES = [(ex, i, alt) for ex in EXERCISES for i, alt in enumerate(ex.alternatives)]


@pytest.mark.parametrize("ex, i, alt", ALTERNATIVES,
                         ids=[f"{ex.name}-alt{i}" for ex, i, _ in ALTERNATIVES])
def test_valid_alternative_is_accepted(ex, i, alt):
    v = ex.verdict(alt)
    assert v.status == OK, v.message


MISTAKES = [(ex, i, m) for ex in EXERCISES for i, m in enumerate(ex.mistakes)]


@pytest.mark.parametrize("ex, i, mistake", MISTAKES,
                         ids=[f"{ex.name}-mistake{i}" for ex, i, _ in MISTAKES])
def test_planted_mistake_gets_its_own_hint(ex, i, mistake):
    v = ex.verdict(mistake.fn)
    assert v.status == WRONG
    assert v.message == mistake.hint


def test_every_exercise_has_mistakes_and_an_alternative():
    for ex in EXERCISES:
        assert ex.mistakes, f"{ex.name} has no planted mistakes"
        assert ex.alternatives, f"{ex.name} has no valid alternative implementation"


def _map(out, f):
    return tuple(f(t) for t in out) if isinstance(out, tuple) else f(out)


def _stub(*args):
    raise NotImplementedError("exercise: write your solution here")


def _crash(*args):
    return args[0].no_such_method()


BAD = {
    "stub": (_stub, TODO, "not solved yet"),
    "crash": (_crash, CRASHED, "raised AttributeError"),
    "none": (lambda *a: None, WRONG, "returned None"),
    "not a tensor": (lambda *a: 3.0, WRONG, "object of type float"),
}


@pytest.mark.parametrize("ex", FUNCTION_EXERCISES, ids=_ids(FUNCTION_EXERCISES))
@pytest.mark.parametrize("kind", list(BAD))
def test_bad_learner_code_gives_a_specific_message(ex, kind):
    fn, status, words = BAD[kind]
    v = ex.verdict(fn)
    assert v.status == status and words in v.message, v.message


@pytest.mark.parametrize("ex", FUNCTION_EXERCISES, ids=_ids(FUNCTION_EXERCISES))
@pytest.mark.parametrize("kind, transform, words", [
    ("shape", lambda t: t.unsqueeze(0), "has shape"),
    ("dtype", lambda t: t.double(), "has dtype torch.float64"),
    ("nan", lambda t: t * float("nan"), "contains NaN"),
])
def test_wrong_output_kind_is_named(ex, kind, transform, words):
    v = ex.verdict(lambda *a: _map(ex.reference(*a), transform))
    assert v.status == WRONG and words in v.message, v.message


def test_crash_names_the_learners_line():
    def center_rows(x):
        y = x.mean(dim=5)
        return y
    v = framework.REGISTRY["center_rows"].verdict(center_rows)
    assert v.status == CRASHED and "in center_rows" in v.message and "x.mean(dim=5)" in v.message


def test_check_prints_once_and_returns_the_verdict(capsys):
    ex = framework.REGISTRY["center_rows"]
    v = ex.check(ex.reference)
    assert capsys.readouterr().out.strip() == str(v)
    assert v.passed


def test_a_bug_in_the_checker_is_reported_not_raised(capsys):
    broken = framework.Exercise("broken", reference=lambda x: x,
                                make_inputs=lambda g: 1 / 0)
    framework.REGISTRY.pop("broken")
    v = broken.check(lambda x: x)
    assert v.status == CRASHED and "checker itself failed" in capsys.readouterr().out


def test_a_non_callable_is_refused():
    v = framework.REGISTRY["center_rows"].verdict(None)
    assert v.status == WRONG and "expected a function" in v.message


def test_inputs_are_not_shared_with_the_learner():
    seen = []
    ex = framework.REGISTRY["center_rows"]
    ex.verdict(lambda x: seen.append(x) or x - x.mean(-1, keepdim=True))
    assert seen and all(isinstance(t, torch.Tensor) for t in seen)


def test_every_exercise_knows_its_lesson_even_from_a_split_module():
    """Lesson 06's checkers live in lesson06_masking.py and lesson06_sampling.py (issue 38)."""
    assert {ex.name: ex.lesson for ex in EXERCISES if ex.lesson == "06"}.keys() == \
        {"causal_mask", "masked_attention", "next_token_probs", "generate"}
    assert all(len(ex.lesson) == 2 and ex.lesson.isdigit() for ex in EXERCISES), \
        [(ex.name, ex.lesson) for ex in EXERCISES]
