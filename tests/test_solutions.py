"""Solutions on purpose (issue 36): `show_solution` finds every exercise's solution, records
that the learner looked, and is absent from a class's copy unless the instructor allows it."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import torch

from course_lib.classroom import progress, records, solutions
from course_lib.exercises import check_softmax, show_solution
from course_lib.exercises.framework import REGISTRY

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def own_progress(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(tmp_path / "progress.json"))
    monkeypatch.delenv("COURSE_SOLUTIONS", raising=False)
    monkeypatch.delenv("COURSE_SOLUTIONS_FROM", raising=False)


def _said(fn, *args) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    return out.getvalue()


def test_every_exercise_has_its_solution_under_its_number_and_name():
    found = solutions.index()
    assert set(found) == set(REGISTRY), set(REGISTRY) ^ set(found)
    for s in found.values():
        assert s.lesson[:2] == REGISTRY[s.name].lesson
        assert "### BEGIN SOLUTION" not in s.code and "NotImplementedError" not in s.code
        assert solutions.find(s.number).name == s.name == solutions.find(s.name).name
    assert "exp" in solutions.find("2.1").code


def test_show_solution_shows_it_and_records_that_the_learner_looked():
    said = _said(show_solution, "2.1")
    assert "Solution to exercise 2.1" in said and "def softmax" in said
    entry = records._load(records.progress_file())[0]["softmax"]
    assert entry["solution_seen"] > 0 and entry["lesson"] == "02"
    assert dict((n, s) for _, n, s in progress.progress_table()[0])["softmax"] == records.ATTEMPTED


def test_solved_after_seeing_is_told_apart_from_solved():
    ref = REGISTRY["softmax"].reference
    _said(show_solution, "softmax")
    _said(check_softmax, ref)
    _said(check_softmax, ref)
    _said(show_solution, "attention")            # looked only after solving it
    _said(REGISTRY["attention"].check, REGISTRY["attention"].reference)
    _said(REGISTRY["center_rows"].check, REGISTRY["center_rows"].reference)
    _said(show_solution, "center_rows")
    states = dict((n, s) for _, n, s in progress.progress_table()[0])
    assert states["softmax"] == records.SOLVED_AFTER_SOLUTION
    assert states["attention"] == records.SOLVED_AFTER_SOLUTION   # seen, then the first ✅
    assert states["center_rows"] == records.SOLVED                  # solved, then looked
    table = _said(progress.show_progress)
    assert "softmax" in table and "solved after seeing the solution" in table
    assert "solved on your own, 2 after seeing the solution" in table


def test_unknown_exercise_lists_the_exercises():
    said = _said(show_solution, "9.9")
    assert "no exercise '9.9'" in said and "2.1 (softmax)" in said
    assert not records.progress_file().exists()


def test_a_class_copy_has_no_solutions(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_SOLUTIONS", "off")
    said = _said(show_solution, "2.1")
    assert "ask your instructor" in said and "def softmax" not in said
    monkeypatch.delenv("COURSE_SOLUTIONS")
    monkeypatch.setenv("COURSE_SOLUTIONS_FROM", str(tmp_path))      # a pack: no instructor lessons
    said = _said(show_solution, "2.1")
    assert "no solutions" in said and "def softmax" not in said
    assert not records.progress_file().exists()


def _wrong_softmax(scores):
    return torch.softmax(scores, dim=0)


def test_a_wrong_check_says_how_to_see_a_solution_and_a_right_one_does_not(monkeypatch):
    wrong = _said(check_softmax, _wrong_softmax)
    assert wrong.startswith("❌") and 'show_solution("softmax")' in wrong
    right = _said(check_softmax, REGISTRY["softmax"].reference)
    assert right.startswith("✅") and "show_solution" not in right
    monkeypatch.setenv("COURSE_SOLUTIONS", "off")
    assert "show_solution" not in _said(check_softmax, _wrong_softmax)
