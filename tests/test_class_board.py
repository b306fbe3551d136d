"""The class board's page (deploy/board/board.py): a checker records the hint it showed
beside its verdict (never code); the board turns students' records into the grid — ✅ solved,
❌ last check wrong, ⏳ not yet, with checks run — and counts each hint the room sees now;
a lesson filter; a damaged record is named, not guessed; every name is escaped. The class
votes (deploy/board/votes.py, issue 42 §3): 20 students answer concept checks in two rounds
through the course's recorder; the page shows the first and the latest vote per option, the right
one in words, no name unless asked, and passes axe-core in Chromium."""
from __future__ import annotations

import html
import json
import os
import re
import sys
from pathlib import Path
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy" / "board"))
import board  # noqa: E402
import votes  # noqa: E402

from course_lib.exercises.concepts.questions import REGISTRY as QUESTIONS, Choice, Number, Option  # noqa: E402
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


# ---------------------------------------------------------------- the class votes (issue 42 §3)

ROOM = [f"pupil{i:02d}" for i in range(20)]          # "pupil" is nowhere else on the page


@pytest.fixture()
def asked():
    """Two questions of a lesson no course file uses (98), taken out of the registry after."""
    made = [Choice("98.q1", r"Why divide the scores by $\sqrt{d_k}$?", [
                Option("To make the weights sum to 1", "softmax does that."),
                Option(r"To keep the scores' variance near 1 as $d_k$ grows", "Right.", right=True),
                Option("To make attention cheaper", "the cost is the same."),
                Option("<script>alert(1)</script>", "escaped?")]),
            Number("98.q2", "The std of $q \\cdot k$ at $d_k = 256$?", answer=16, tolerance=0.5,
                   right="Right: √256.", too_low="Too low.", too_high="Too high.")]
    yield made
    for q in made:
        QUESTIONS.pop(q.id, None)


def _vote(records: Path, student: str, qid: str, answer: str) -> None:
    """Answer a concept check as `student`'s kernel does: the course's recorder writes to the
    progress file the hub gives them (RECORDS/<student>/progress.json); the first answer stays."""
    from course_lib.classroom.records import record_answer

    question = QUESTIONS[qid]
    with mock.patch.dict(os.environ, {"COURSE_PROGRESS_FILE": str(records / student / "progress.json")}):
        assert record_answer(qid, question.lesson, answer, question.judge(answer)[0])


def _rows(page: str, qid: str) -> dict[str, tuple[int, int]]:
    """{row label: (first-vote count, latest-vote count)} from the question's table."""
    table = re.search(rf"<caption>{re.escape(qid)}: votes.*?</tbody>", page, re.S)
    assert table, f"no table for {qid}"
    found = {}
    for head, cells in re.findall(r'<tr[^>]*><th scope="row">(.*?)</th>(.*?)</tr>', table.group(0), re.S):
        counts = [int(n) for n in re.findall(r"<b>(\d+)</b>", cells)]
        found[html.unescape(re.sub(r"<[^>]+>", "", head)).split(" (")[0].replace("✓ right answer", "").strip()] = tuple(counts)
    return found


# Round 1: 7 of 20 right (b); after the discussion, 15 of 20.
FIRST = ["a"] * 8 + ["b"] * 7 + ["c"] * 5
LATEST = ["b"] * 6 + ["a"] * 2 + ["b"] * 7 + ["c"] * 3 + ["b"] * 2


def test_twenty_students_vote_twice_and_the_board_shows_both_rounds(tmp_path, asked):
    for student, answer in zip(ROOM, FIRST):
        _vote(tmp_path, student, "98.q1", answer)
    records, _ = board.read_records(tmp_path)
    page = votes.render_votes(votes.tallies(records, asked, lesson="98"), asked, len(records))
    assert _rows(page, "98.q1") == {"a. To make the weights sum to 1": (8, 8),
                                    "b. To keep the scores' variance near 1 as d_k grows": (7, 7),
                                    "c. To make attention cheaper": (5, 5),
                                    "d. <script>alert(1)</script>": (0, 0)}
    for student, answer in zip(ROOM, LATEST):                  # round 2: only the latest moves
        _vote(tmp_path, student, "98.q1", answer)
    records, _ = board.read_records(tmp_path)
    results = votes.tallies(records, asked, lesson="98")
    page = votes.render_votes(results, asked, len(records), lesson="98")
    rows = _rows(page, "98.q1")
    assert [v for v in rows.values()] == [(8, 2), (7, 15), (5, 3), (0, 0)]
    assert "(35 %)" in page and "(75 %)" in page                # the share printed beside each bar
    assert ("Right at the first vote: 7 of 20 (35 %); at the latest: 15 of 20 (75 %). "
            "8 of 20 changed their answer since their first vote.") in page
    assert re.search(r'<tr class="right"><th scope="row">b\. To keep.*?<strong class="mark">'
                     r'<span aria-hidden="true">✓</span> right answer</strong>', page), "right answer in words"
    assert page.count("right answer</strong>") == 1
    assert '<td class="n">20 of 20</td>' in page
    assert "&lt;script&gt;alert(1)" in page and "<script>alert" not in page
    assert "√(d_k)" in page and "$" not in page                  # math as text, no TeX
    # Safe on a projector: no student's name anywhere, unless asked for.
    assert "pupil" not in page
    named = votes.render_votes(results, asked, len(records), lesson="98", names=True)
    assert all(s in named for s in ROOM)
    first_a = re.search(r'<th scope="row">a\. .*?</th><td class="n">(.*?)</td><td class="n">(.*?)</td>', named, re.S)
    assert first_a.group(1).count("pupil") == 8 and first_a.group(2).count("pupil") == 2
    assert "pupil00, pupil01" in first_a.group(1) and "pupil06, pupil07" in first_a.group(2)
    # The number question nobody answered yet is listed, not drawn.
    assert "No votes yet: 98.q2." in page


def test_a_number_question_shows_the_values_given_and_which_side_they_miss(tmp_path, asked):
    given = ["16"] * 6 + ["4"] * 5 + ["256"] * 4 + ["15.8"] * 2 + ["0.0625", "1e9", "sixteen"]
    for i, (student, value) in enumerate(zip(ROOM, given)):
        _vote(tmp_path, student, "98.q2", value)
        _vote(tmp_path, student, "98.q2", "16" if i < 15 else value)
    records, _ = board.read_records(tmp_path)
    page = votes.render_votes(votes.tallies(records, asked, question_id="98.q2"), asked, len(records),
                              question_id="98.q2")
    assert _rows(page, "98.q2") == {"0.0625": (1, 1), "4": (5, 0), "15.8": (2, 2), "16": (6, 15),
                                    "256": (4, 0), "1e+09": (1, 1), "not a number": (1, 1)}
    assert "value given (right: 16 ± 0.5)" in page
    assert re.search(r'<th scope="row">4 <span class="side">\(too low\)</span>', page)
    assert re.search(r'<th scope="row">256 <span class="side">\(too high\)</span>', page)
    assert page.count("right answer</strong>") == 2                     # 15.8 and 16: within ± 0.5
    assert "Right at the first vote: 8 of 20 (40 %); at the latest: 17 of 20 (85 %)." in page


def test_the_right_answer_can_be_kept_off_the_screen_until_the_discussion(tmp_path, asked):
    for student, answer in zip(ROOM, FIRST):
        _vote(tmp_path, student, "98.q1", answer)
        _vote(tmp_path, student, "98.q2", "4")
    records, _ = board.read_records(tmp_path)
    page = votes.render_votes(votes.tallies(records, asked), asked, len(records), show_answer=False)
    assert "right answer</strong>" not in page and 'class="right"' not in page and "too low" not in page
    assert "± 0.5" not in page and "Right at" not in page
    assert "Most given now: a (8 of 20); the right answer is hidden." in page
    assert 'name="answer" value="hide"' in page            # the selectors keep it hidden
    assert _rows(page, "98.q1")["a. To make the weights sum to 1"] == (8, 8)


def test_odd_records_are_skipped_not_guessed(asked):
    records = {"x": {"concept_checks": "not a dict"}, "y": {"concept_checks": {"98.q1": "b"}},
               "z": {"concept_checks": {"98.q1": {"latest": "b"}}},          # only a latest: both
               "w": {"concept_checks": {"98.q1": {"first": "h", "latest": "c"}}}, "v": {}}
    t = votes.tally(records, asked[0])
    with pytest.raises(ValueError, match="no concept check '98.q7'"):
        votes.tallies(records, asked, question_id="98.q7")
    assert (t.answered, t.students, t.first["b"], t.latest["b"]) == (2, 5, 1, 1)
    assert t.first[votes.OTHER] == 1 and t.latest["c"] == 1 and t.rows[-1].key == votes.OTHER


def test_math_is_written_as_text_for_the_projector():
    assert votes._plain(r"Scale by $\sqrt{d_k}$") == "Scale by √(d_k)"
    assert votes._plain(r"$\operatorname{softmax}(QK^\top / \sqrt{d_k})V$") == "softmax(QKᵀ / √(d_k))V"
    assert votes._plain(r"**$\frac{1}{d}$** and $\sigma \approx 1$") == "(1)/(d) and σ ≈ 1"
    assert votes._plain(r"step $t$ needs $h_{t-1}$, not $d_{model}$") == "step t needs h_(t-1), not d_model"
    assert votes._plain(r"$X \to \Pi X$ when $\rho > 1$") == "X → Π X when ρ > 1"


def test_the_board_links_to_the_votes_and_the_votes_page_refreshes(tmp_path, asked):
    b = board.build({"x": {}}, {"softmax": "02"}, lesson="02", now=NOW)
    assert '<a href="?view=votes&amp;lesson=02">The class votes</a>' in board.render(b, ["02"], lesson="02")
    page = votes.render_votes([], asked, 0, refresh=board.refresh_control(5))
    assert 'id="auto-refresh" checked' in page and "location.reload()" in page
    assert '<optgroup label="lesson 98"><option value="98.q1">' in page


def test_the_votes_page_for_twenty_students_two_rounds_renders_within_its_time(tmp_path):
    """Issue 42: "the board test stays within its time". One refresh of the votes page (read every
    progress file, tally, render) for 20 students who answered all 71 concept checks twice.
    Measured 2026-11-29 on the 2-core machine at load 3: a median 34 ms wall, 33 ms of CPU
    (docs/instructor_guide.md). The bounds are generous on purpose: CPU time is what the page
    costs and a busy machine barely inflates it; the wall bound only catches a page that has
    become many times slower (at load 10 the wall time can be several times the CPU time)."""
    import shutil
    import statistics
    import time

    from course_lib.exercises.concepts import all_questions

    questions = all_questions()
    first = tmp_path / "pupil00"
    for rnd in range(2):                                        # two rounds, through the recorder
        for q in questions:
            answer = "16" if q.kind == "number" else "abc"[rnd]
            with mock.patch.dict(os.environ, {"COURSE_PROGRESS_FILE": str(first / "progress.json")}):
                assert _record(q, answer)
    for student in ROOM[1:]:                                    # the room: the same file, 19 copies
        shutil.copytree(first, tmp_path / student)
    walls, cpus = [], []
    for _ in range(5):
        wall, cpu = time.perf_counter(), time.process_time()
        records, _ = board.read_records(tmp_path)
        page = votes.render_votes(votes.tallies(records, questions), questions, len(records))
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    assert len(records) == 20 and page.count("<caption>") == len(questions)
    assert statistics.median(cpus) < 0.5, f"votes page: a median {statistics.median(cpus):.3f} s of CPU (measured 0.033 s)"
    assert statistics.median(walls) < 2.0, f"votes page: a median {statistics.median(walls):.3f} s (measured 0.034 s)"


def _record(question, answer: str) -> bool:
    from course_lib.classroom.records import record_answer
    return record_answer(question.id, question.lesson, answer, question.judge(answer)[0])


def test_every_question_of_the_course_has_its_table(tmp_path):
    """The course's own questions, answered by five students: a table each, every option a row."""
    questions = votes.concept_questions()
    assert questions, "no concept checks in course_lib/exercises/concepts"
    for i, student in enumerate(ROOM[:5]):
        for q in questions:
            answer = f"{q.answer + i:g}" if q.kind == "number" else q.option_key(i % len(q.options))
            _vote(tmp_path, student, q.id, answer)
    records, _ = board.read_records(tmp_path)
    page = votes.render_votes(votes.tallies(records, questions), questions, len(records))
    for q in questions:
        rows = _rows(page, q.id)
        assert sum(f for f, _ in rows.values()) == 5, q.id
        assert q.kind == "number" or len(rows) == len(q.options), q.id


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_the_votes_page_passes_axe_in_chromium(tmp_path, asked):
    """Projected at 1366×768, with names and without, answers shown and hidden: 0 axe-core
    violations; the counts are in the accessibility tree, not only drawn."""
    import axe_support
    import browser_support as bs

    for student, first, latest in zip(ROOM, FIRST, LATEST):
        _vote(tmp_path, student, "98.q1", first)
        _vote(tmp_path, student, "98.q1", latest)
        _vote(tmp_path, student, "98.q2", "16" if first == "b" else "4")
    records, _ = board.read_records(tmp_path)
    results = votes.tallies(records, asked)
    with bs.chromium_browser() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        for names, show in ((False, True), (True, True), (False, False)):
            page.set_content(votes.render_votes(results, asked, len(records), names=names, show_answer=show,
                                                refresh=board.refresh_control()))
            violations = axe_support.audit(page)
            assert not violations, (names, show, axe_support.summary(violations))
            assert page.evaluate("document.documentElement.scrollWidth") <= 1366
        page.set_content(votes.render_votes(results, asked, len(records), refresh=board.refresh_control()))
        tree = page.locator("table").first.aria_snapshot()
        out = ROOT / "test-artifacts" / "accessibility"
        out.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out / "class-votes-1366x768.png"), full_page=True)
    assert "right answer" in tree and "15 (75 %)" in tree and "8 (40 %)" in tree, tree
