"""The class board's page (deploy/board/board.py): a checker records the hint it showed
beside its verdict (never code); the board turns students' records into the grid — ✅ solved,
❌ last check wrong, ⏳ not yet, with checks run — and counts each hint the room sees now;
a lesson filter; a damaged record is named, not guessed; every name is escaped."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy" / "board"))
import board  # noqa: E402

from course_lib.exercises.framework import REGISTRY  # noqa: E402


@pytest.fixture()
def attention_exercise():
    import course_lib.exercises  # noqa: F401  (fills the registry)
    return REGISTRY["scaled_dot_product_attention"] if "scaled_dot_product_attention" in REGISTRY \
        else next(ex for ex in REGISTRY.values() if ex.lesson == "02" and ex.mistakes)


def _check_as(student: str, records: Path, fn, ex, monkeypatch) -> None:
    """Run a check the way a student's kernel does: its record goes to their file."""
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(records / student / "progress.json"))
    ex.check(fn)


def test_a_check_records_its_hint_and_the_board_counts_it(tmp_path, monkeypatch, attention_exercise):
    ex = attention_exercise
    mistake = ex.mistakes[0]
    _check_as("alice", tmp_path, ex.reference, ex, monkeypatch)          # right
    _check_as("bob", tmp_path, mistake.fn, ex, monkeypatch)              # a planted mistake
    _check_as("carol", tmp_path, mistake.fn, ex, monkeypatch)
    bob = json.loads((tmp_path / "bob" / "progress.json").read_text(encoding="utf-8"))
    assert bob[ex.name]["hint"] == mistake.hint and bob[ex.name]["last"] == "wrong"
    assert "def " not in json.dumps(bob), "records hold verdicts, never code"

    records, unreadable = board.read_records(tmp_path)
    exercises = board.exercise_lessons()
    b = board.build(records, exercises, unreadable=unreadable)
    assert b.students == ["alice", "bob", "carol"]
    assert b.cells["alice"][ex.name] == (board.SOLVED, 1)
    assert b.cells["bob"][ex.name] == (board.WRONG, 1)
    other = next(n for n in exercises if n != ex.name)
    assert b.cells["alice"][other] == (board.WAITING, 0)
    assert b.hints[ex.name] == {mistake.hint: 2}
    page = board.render(b, sorted(set(exercises.values())))
    assert f"<b>2 ×</b> <code>{ex.name}</code>" in page
    assert 'id="auto-refresh" checked' in page and "location.reload()" in page   # stoppable refresh
    assert '<span class="sr">solved, 1 check</span>' in page and '<th scope="row">alice</th>' in page


def test_the_last_check_decides_and_a_stub_is_not_yet():
    entry = {"last": "wrong", "attempts": 3, "solved": True, "hint": "h"}
    assert board._cell(entry) == (board.WRONG, 3)          # solved once, broken since
    assert board._cell({"last": "todo", "attempts": 2}) == (board.WAITING, 0)
    assert board._cell({"last": "todo", "attempts": 4, "solved": True}) == (board.SOLVED, 4)
    assert board._cell(None) == (board.WAITING, 0)


def test_lesson_filter_and_damaged_records(tmp_path):
    (tmp_path / "dave").mkdir()
    (tmp_path / "dave" / "progress.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "erin").mkdir()                                         # no check run yet
    records, unreadable = board.read_records(tmp_path)
    assert unreadable == ["dave"] and records == {"erin": {}}
    exercises = {"a": "02", "b": "02", "c": "03"}
    b = board.build(records, exercises, lesson="03", unreadable=unreadable)
    assert b.exercises == [("03", "c")]
    page = board.render(b, ["02", "03"], lesson="03")
    assert '<option value="03" selected>' in page and "Records unreadable: dave" in page


def test_names_and_hints_are_escaped():
    b = board.build({"<script>x</script>": {"e": {"last": "wrong", "attempts": 1,
                                                   "hint": "<img src=x onerror=alert(1)>"}}},
                    {"e": "02"})
    page = board.render(b, ["02"])
    assert "<script>x" not in page and "<img" not in page and "&lt;img" in page
