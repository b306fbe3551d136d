"""Progress: each check records its verdict locally; a table shows every exercise."""
import json

import pytest

from course_lib.classroom import progress
from course_lib.exercises import framework
import course_lib.exercises  # noqa: F401


@pytest.fixture
def progress_file(tmp_path, monkeypatch):
    path = tmp_path / "progress.json"
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(path))
    return path


def _states(rows):
    return {name: state for _, name, state in rows}


def test_checks_are_recorded_and_tabulated(progress_file, capsys):
    ex = framework.REGISTRY["center_rows"]
    assert _states(progress.progress_table()[0])["center_rows"] == "not started"

    def stub(x):
        raise NotImplementedError
    ex.check(stub)
    assert _states(progress.progress_table()[0])["center_rows"] == "not started"
    ex.check(lambda x: x)                       # wrong
    assert _states(progress.progress_table()[0])["center_rows"] == "attempted"
    ex.check(ex.reference)
    ex.check(lambda x: x)                       # a later wrong try doesn't un-solve it
    assert _states(progress.progress_table()[0])["center_rows"] == "solved"
    saved = json.loads(progress_file.read_text(encoding="utf-8"))["center_rows"]
    assert saved["attempts"] == 4 and saved["lesson"] == "00"

    capsys.readouterr()
    progress.show_progress()
    out = capsys.readouterr().out
    assert "center_rows" in out and "✅ solved" in out and "exercises solved" in out


def test_every_registered_exercise_appears_with_its_lesson(progress_file):
    rows, warning = progress.progress_table()
    assert warning is None
    assert {name for _, name, _ in rows} == set(framework.REGISTRY) - {"broken"}
    assert all(lesson.isdigit() and len(lesson) == 2 for lesson, _, _ in rows)


@pytest.mark.parametrize("garbage", ["{not json", "[1, 2, 3]", '{"x": 5}'])
def test_a_corrupt_file_is_set_aside_and_progress_restarts(progress_file, garbage, capsys):
    progress_file.write_text(garbage, encoding="utf-8")
    progress.show_progress()
    out = capsys.readouterr().out
    assert "unreadable" in out and "starts afresh" in out
    aside = list(progress_file.parent.glob("progress.corrupt-*.json"))
    assert len(aside) == 1 and aside[0].read_text(encoding="utf-8") == garbage
    # and recording works again afterwards
    framework.REGISTRY["center_rows"].check(framework.REGISTRY["center_rows"].reference)
    assert json.loads(progress_file.read_text(encoding="utf-8"))["center_rows"]["solved"]


def test_an_unwritable_location_does_not_break_a_check(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(blocker / "sub" / "progress.json"))
    v = framework.REGISTRY["center_rows"].check(framework.REGISTRY["center_rows"].reference)
    assert v.passed
