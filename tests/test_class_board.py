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
    # show_solution() before the first correct check, or after it (issue 36).
    helped = {"last": "ok", "attempts": 2, "solved": True, "solved_time": 20.0, "solution_seen": 10.0}
    assert board._cell(helped) == (board.HELPED, 2)
    assert board._cell(dict(helped, solution_seen=30.0)) == (board.SOLVED, 2)
    assert board._cell({"last": "todo", "attempts": 0, "solution_seen": 5.0}) == (board.WAITING, 0)
    html_cell = board._cell_html(board.HELPED, 2)
    assert "solved after seeing the solution, 2 checks" in html_cell and 'class="c helped"' in html_cell


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


# ---------------------------------------------------------------- who is stuck (issue 30 §3)
NOW = 1_000_000.0


def _wrong(times, hint="the mask was applied after `softmax`"):
    return {"lesson": "02", "last": "wrong", "attempts": len(times), "hint": hint,
            "time": max(times), "wrong_times": list(times)}


def test_exercises_in_lesson_order_numbered_as_in_the_lessons():
    numbers = board.exercise_numbers()
    assert numbers["softmax"] == "2.1" and numbers["attention"] == "2.2" and numbers["self_attention"] == "2.3"
    b = board.build({"x": {}}, board.exercise_lessons(), lesson="02", numbers=numbers, now=NOW)
    assert [name for _, name in b.exercises] == ["softmax", "attention", "self_attention"]   # not alphabetical
    page = board.render(b, ["02"], lesson="02")
    assert page.index("2.1 softmax") < page.index("2.2 attention") < page.index("2.3 self_attention")
    every = board.build({"x": {}}, board.exercise_lessons(), numbers=numbers, now=NOW).exercises
    assert [n for _, n in every][:6] == ["center_rows", "rnn_forward", "grad_norm", "softmax", "attention",
                                        "self_attention"]
    assert len(numbers) == len(board.exercise_lessons()), "an exercise no lesson numbers"


def test_the_stuck_student_comes_first_and_the_rule_is_on_the_page():
    records = {
        "amy": {"softmax": {"lesson": "02", "last": "ok", "attempts": 1, "time": NOW - 30}},
        "bob": {"attention": _wrong([NOW - 400, NOW - 200, NOW - 60])},          # 3 wrong in 7 min: stuck
        "cem": {"attention": _wrong([NOW - 3000, NOW - 2000, NOW - 60])},        # only 1 recent: not stuck
        "dan": {"attention": dict(_wrong([NOW - 300, NOW - 200, NOW - 100]), last="ok")},   # solved it
        "eve": {},
        "zoe": {"softmax": _wrong([NOW - 590, NOW - 500, NOW - 400, NOW - 10])},  # stuck longest
    }
    exercises = {"softmax": "02", "attention": "02"}
    numbers = {"softmax": "2.1", "attention": "2.2"}
    b = board.build(records, exercises, numbers=numbers, now=NOW)
    assert b.students[:2] == ["zoe", "bob"] and b.students[2:] == ["amy", "cem", "dan", "eve"]
    assert b.stuck["bob"] == [("attention", 3, 400.0)] and not b.stuck["cem"] and not b.stuck["dan"]
    page = board.render(b, ["02"])
    assert page.index('<th scope="row">zoe</th>') < page.index('<th scope="row">bob</th>') \
        < page.index('<th scope="row">amy</th>')
    assert "<b>stuck</b>: 2.2 attention: 3 wrong in 7 min" in page and "2 stuck" in page
    assert f"{board.STUCK_FAILS} or more of its\nchecks were wrong in the last {board.STUCK_WINDOW_S // 60} minutes" in page
    assert "1 min ago" in page and "30 s ago" in page and "no check yet" in page
    by_name = board.build(records, exercises, numbers=numbers, now=NOW, sort="name")
    assert by_name.students == sorted(records)
    assert 'href="?sort=stuck"' in board.render(by_name, ["02"], sort="name")


def test_hints_are_text_with_code_formatting():
    assert board.hint_html("softmax over `dim=-1`, not `dim=0` <b>") == \
        "softmax over <code>dim=-1</code>, not <code>dim=0</code> &lt;b&gt;"
    b = board.build({"bob": {"attention": _wrong([NOW - 5])}}, {"attention": "02"}, numbers={"attention": "2.2"}, now=NOW)
    assert "the mask was applied after <code>softmax</code>" in board.render(b, ["02"])
    assert "`" not in board.render(b, ["02"]).split("<h2>")[1]


def test_a_check_keeps_the_times_of_the_last_wrong_checks(tmp_path, monkeypatch):
    from course_lib.classroom import records

    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(tmp_path / "progress.json"))
    clock = iter(range(100, 200))
    monkeypatch.setattr(records.time, "time", lambda: float(next(clock)))
    for _ in range(records.WRONG_TIMES_KEPT + 2):
        records.record("attention", "02", "wrong", "h")
    records.record("attention", "02", "ok")
    entry = json.loads((tmp_path / "progress.json").read_text(encoding="utf-8"))["attention"]
    assert entry["wrong_times"] == [float(t) for t in range(102, 112)] and entry["last"] == "ok"


def test_folder_sizes_are_shown_and_a_folder_past_the_share_is_flagged(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "bob").mkdir()
    (tmp_path / "disk.json").write_text(json.dumps({
        "alice": {"bytes": 300 * 2**20, "at": 1.0}, "bob": {"bytes": 5 * 2**30, "at": 1.0}}),
        encoding="utf-8")
    disk = board.read_disk(tmp_path)
    assert disk == {"alice": 300 * 2**20, "bob": 5 * 2**30}
    records, unreadable = board.read_records(tmp_path)
    built = board.build(records, {"softmax": "02"}, numbers={"softmax": "2.1"})
    page = board.render(built, ["02"], disk=disk, share=2 * 2**30)
    assert '<th scope="col">folder size</th>' in page
    assert '<td class="ago">300 MB</td>' in page
    assert "<b>5.0 GB</b>, over the 2.0 GB share" in page
    assert '<p class="warn">Over the 2.0 GB folder share: bob</p>' in page
    # A damaged file is no sizes, not a crash; without the hub's sizes, no column.
    (tmp_path / "disk.json").write_text("{not json", encoding="utf-8")
    assert board.read_disk(tmp_path) == {}
    assert "folder size" not in board.render(built, ["02"])
