"""Concept checks (issue 42): the questions, their cells in the lessons, how answers are judged,
recorded, shown in the progress table, listed, and cleared from the learner's copies.

The questions' content is tested where it meets the lessons: every `verify` (a question's
right answer recomputed as its lesson computes it) passes, every question is asked exactly
once in its own lesson, a prediction's answer cell follows it. The page's side (radio group,
feedback spoken, judging without a kernel) is in tests/test_concept_browser.py.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.classroom import progress, records
from course_lib.classroom.student import student_notebook
from course_lib.classroom.workspace import learner_notebook
from course_lib.exercises import concepts
from course_lib.exercises.concepts import __main__ as listing
from course_lib import mathtext
from course_lib.exercises.concepts import widget
from course_lib.exercises.concepts.questions import LETTERS, NUMBER, PREDICT, REGISTRY, Option, Question

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
QUESTIONS = concepts.all_questions()
ASK = re.compile(r"""\bask\(\s*["']([^"']+)["']\s*\)""")
TAG = "concept-answer"


@pytest.fixture
def progress_file(tmp_path, monkeypatch):
    path = tmp_path / "progress.json"
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(path))
    return path


def _saved(path):
    return json.loads(path.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- the questions
@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.id)
def test_every_question_has_feedback_for_every_wrong_answer(q):
    if q.kind == NUMBER:
        assert q.tolerance > 0 and q.right and q.too_low and q.too_high
        assert q.judge(q.answer) == (True, q.right)
        assert q.judge(q.answer - 2 * q.tolerance) == (False, q.too_low)
        assert q.judge(q.answer + 2 * q.tolerance) == (False, q.too_high)
    else:
        assert len(q.options) >= 3 and sum(o.right for o in q.options) == 1
        for i, o in enumerate(q.options):
            assert o.feedback.strip() and q.judge(LETTERS[i]) == (o.right, o.feedback)
        wrong = [o.feedback for o in q.options if not o.right]
        assert len(set(wrong)) == len(wrong), f"{q.id}: each wrong option needs its own feedback"
    assert q.text.strip() and q.text.count("$") % 2 == 0, f"{q.id}: unbalanced $ in the text"


# A wrong answer's feedback points to where the lesson shows it (issue 42: "points to the cell or
# figure that shows it", not only why): a section, cell, figure, table, exercise, explorer, demo,
# map, list, plot or output named, or "above"/"below"/"printed"/"the next cell".
PLACE = re.compile(r"§|\bsections?\b|\bcells?\b|\bfigures?\b|\btables?\b|\bexercises?\b|\bexplorer\b"
                   r"|\blessons?\b|\babove\b|\bbelow\b|\bprinted\b|\bdemo\b|\bmaps?\b|\blist\b|\bplots?\b"
                   r"|\bgrid\b|\bheatmap\b|\bpanel\b|\bwidget\b|\bslider\b", re.IGNORECASE)


def _wrong_feedback(q):
    if q.kind == NUMBER:
        return [("too low", q.too_low), ("too high", q.too_high)]
    return [(LETTERS[i], o.feedback) for i, o in enumerate(q.options) if not o.right]


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.id)
def test_every_wrong_answers_feedback_points_to_a_place_in_the_lesson(q):
    nowhere = [key for key, text in _wrong_feedback(q) if not PLACE.search(text)]
    assert not nowhere, f"{q.id}: the feedback of {nowhere} says why, but not where the lesson shows it"


def test_feedback_that_points_nowhere_is_found():
    planted = Question.__new__(Question)                      # never registered
    planted.id, planted.kind = "99.q2", "choice"
    planted.options = (Option("a", "Right (the table above).", right=True),
                       Option("b", "No: the rows no longer sum to 1."),          # why, but not where
                       Option("c", "No: see the figure after exercise 5.2."))
    assert [k for k, t in _wrong_feedback(planted) if not PLACE.search(t)] == ["b"]
    planted.kind, planted.too_low, planted.too_high = NUMBER, "Too low: the std, not the variance.", "Too high (§3)."
    assert [k for k, t in _wrong_feedback(planted) if not PLACE.search(t)] == ["too low"]


@pytest.mark.parametrize("q", [q for q in QUESTIONS if q.verify], ids=lambda q: q.id)
def test_every_answer_agrees_with_what_its_lesson_computes(q):
    q.verify()


def test_every_lesson_asks_at_least_four_questions():
    per_lesson = {f"{n:02d}": len(concepts.all_questions(f"{n:02d}")) for n in range(12)}
    short = {lesson: n for lesson, n in per_lesson.items() if n < 4}
    assert not short, f"lessons with fewer than 4 concept checks: {short}"
    assert sum(per_lesson.values()) >= 60


def test_a_malformed_question_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="every option needs its own feedback"):
        Question("99.q90", "?", options=(Option("a", "x", right=True), Option("b", ""), Option("c", "y")))
    with pytest.raises(ValueError, match="exactly one option must be right"):
        Question("99.q91", "?", options=(Option("a", "x"), Option("b", "y"), Option("c", "z")))
    with pytest.raises(ValueError, match="too low and too high"):
        Question("99.q92", "?", kind=NUMBER, answer=1.0, tolerance=0.1, right="r", too_low="l")
    assert not {"99.q90", "99.q91", "99.q92"} & set(REGISTRY)
    with pytest.raises(KeyError, match="ids look like 2.q1|this lesson has"):
        concepts.get("2.q999")


# ----------------------------------------------------------------------------- the lessons
def _code_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def _asked(path):
    return [(i, qid) for i, c in enumerate(_code_cells(path)) for qid in ASK.findall(c.source)]


def test_every_question_is_asked_once_in_its_own_lesson():
    asked = {}
    for path in LESSONS:
        for _, qid in _asked(path):
            assert qid in REGISTRY, f"{path.name} asks {qid!r}, which no lesson module defines"
            assert REGISTRY[qid].lesson == path.name[:2], f"{path.name} asks {qid}, a question of another lesson"
            asked[qid] = asked.get(qid, 0) + 1
    twice = {qid: n for qid, n in asked.items() if n > 1}
    never = [q.id for q in QUESTIONS if q.id not in asked]
    assert not twice, f"asked more than once: {twice}"
    assert not never, f"questions no lesson asks: {never}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_a_prediction_is_answered_by_a_tagged_cell_after_it(path):
    cells = _code_cells(path)
    asks = _asked(path)
    for k, (i, qid) in enumerate(asks):
        if qid not in REGISTRY or REGISTRY[qid].kind != PREDICT:
            continue
        end = asks[k + 1][0] if k + 1 < len(asks) else len(cells)
        tagged = [c for c in cells[i + 1:end] if TAG in c.metadata.get("tags", [])]
        assert tagged, f"{path.name}: prediction {qid} has no cell tagged {TAG!r} after it"
    for c in cells:
        if ASK.search(c.source):
            assert c.source.strip().splitlines()[-1].startswith("ask("), "an ask cell is the question alone"


def _seen(cell) -> str:
    """What a learner sees of a code cell's saved outputs: printed text, plain text, figures' alt text."""
    parts = []
    for out in cell.get("outputs", []):
        parts += [out.get("text", ""), out.get("data", {}).get("text/plain", "")]
        parts += [m.get("alt", "") for m in out.get("metadata", {}).values() if isinstance(m, dict)]
    return "\n".join(p if isinstance(p, str) else "".join(p) for p in parts)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_a_number_answer_is_not_in_sight_of_its_question(path):
    """In the learner's copy no output within two cells of a number question shows its answer
    (16.0, 4.3, 3.56, 0.50 …) before the learner has answered (issue 42's audit)."""
    cells = learner_notebook(nbformat.read(path, as_version=4), where=path.name).cells
    for i, cell in enumerate(cells):
        for qid in ASK.findall(cell.source) if cell.cell_type == "code" else []:
            q = REGISTRY[qid]
            if q.kind != NUMBER:
                continue
            shown = {f"{q.answer:.{decimals}f}" for decimals in (1, 2, 3)}
            for j in range(max(0, i - 2), min(len(cells), i + 3)):
                if j == i or cells[j].cell_type != "code":
                    continue
                found = [s for s in shown if re.search(rf"(?<![\d.]){re.escape(s)}(?!\d)", _seen(cells[j]))]
                assert not found, (f"{path.name}: cell {j}, {j - i:+d} from question {qid}, shows its answer "
                                   f"{found[0]} in the learner's copy: tag that cell {TAG!r} or move the question")


# ----------------------------------------------------------------------------- judging, recording
def _choice():
    return next(q for q in QUESTIONS if q.kind != NUMBER)


def _number():
    return next(q for q in QUESTIONS if q.kind == NUMBER)


def test_answers_are_recorded_first_kept_latest_follows(progress_file):
    q = _choice()
    wrong = next(LETTERS[i] for i, o in enumerate(q.options) if not o.right)
    w = widget.ConceptCheck(q)
    assert w.answer(wrong)[0] is False
    assert w.answer(q.right_key())[0] is True
    entry = _saved(progress_file)["concept_checks"][q.id]
    assert (entry["first"], entry["first_right"], entry["latest"], entry["right"], entry["attempts"]) == \
        (wrong, False, q.right_key(), True, 2)
    assert entry["lesson"] == q.lesson and entry["first_time"] <= entry["time"]
    w.answer(wrong)                                   # changing one's mind: latest follows, first stays
    entry = _saved(progress_file)["concept_checks"][q.id]
    assert (entry["first"], entry["latest"], entry["right"], entry["attempts"]) == (wrong, wrong, False, 3)
    assert w.verdict["key"] == wrong and w.verdict["n"] == 3 and not w.verdict["right"]


def test_a_number_is_judged_with_its_tolerance_and_text_is_not_an_answer(progress_file):
    q = _number()
    w = widget.ConceptCheck(q)
    assert w.answer("not a number") == (False, widget.NOT_A_NUMBER)
    assert not progress_file.exists(), "text that is no number is not recorded"
    typed = f"{q.answer + q.tolerance / 2:g}".replace(".", ",")     # a comma as decimal point
    assert w.answer(typed) == (True, q.right)
    entry = _saved(progress_file)["concept_checks"][q.id]
    assert entry["first"] == typed.replace(",", ".") and entry["first_right"] is True


def test_exercises_and_concept_checks_do_not_mix(progress_file):
    records.record("softmax", "02", "ok")
    records.record_answer("2.q1", "02", "b", False)
    data = _saved(progress_file)
    assert set(data) == {"softmax", "concept_checks"} and data["softmax"]["solved"]
    rows, warning = progress.progress_table()
    assert warning is None and "concept_checks" not in {name for _, name, _ in rows}


def test_recording_never_raises(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(blocker / "sub" / "progress.json"))
    assert records.record_answer("2.q1", "02", "a", True) is False
    assert records.record_answer("2.q1", "02", None, True) is False        # not an answer


def test_show_progress_numbers_exercises_and_lists_concept_checks_apart(progress_file, capsys):
    records.record("attention", "02", "wrong", "h")
    records.record("softmax", "02", "ok")
    right = REGISTRY["2.q1"].right_key()
    records.record_answer("2.q1", "02", right, True)
    other = "a" if right != "a" else "b"
    records.record_answer("2.q3", "02", other, REGISTRY["2.q3"].judge(other)[0])
    records.record_answer("2.q3", "02", REGISTRY["2.q3"].right_key(), True)
    progress.show_progress()
    out = capsys.readouterr().out
    lines = out.splitlines()
    ex = [line for line in lines if re.match(r"^\d\d\s+\d+\.\d+ \w+", line)]
    assert re.search(r"^02\s+2\.1 softmax\s+✅ solved$", out, re.M)
    assert re.search(r"^02\s+2\.2 attention\s+❌ attempted$", out, re.M)
    order = [tuple(int(p) for p in line.split()[1].split(".")) for line in ex]
    assert order == sorted(order), "exercises in lesson order, by their numbers"
    assert out.index("exercises solved") < out.index("Concept checks")
    assert re.search(r"^Lesson 02: 1 right the first time, 1 right after more tries, \d+ not answered$", out, re.M)
    assert re.search(r"^  2\.q1\s+right the first time$", out, re.M)
    assert re.search(r"^  2\.q3\s+right after 2 tries$", out, re.M)
    assert re.search(r"^  2\.q2\s+not answered$", out, re.M)
    assert re.search(r"^Lesson 05: \d+ not answered$", out, re.M), "a lesson not begun: one line"


def test_concept_states_in_words():
    assert progress.concept_state(None) == "not answered"
    assert progress.concept_state({"attempts": 3, "first_right": True, "right": False}) == "right the first time"
    assert progress.concept_state({"attempts": 3, "first_right": False, "right": True}) == "right after 3 tries"
    assert progress.concept_state({"attempts": 1, "first_right": False, "right": False}) == "not right yet (1 try)"


# ----------------------------------------------------------------------------- the forms
def test_the_forms_are_the_same_on_every_run_and_hold_the_question():
    q = REGISTRY["2.q1"]
    a, b = widget.ConceptCheck(q), widget.ConceptCheck(q)
    bundle_a, bundle_b = a._repr_mimebundle_()[0], b._repr_mimebundle_()[0]
    assert bundle_a["text/plain"] == bundle_b["text/plain"] and bundle_a["text/html"] == bundle_b["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in bundle_a
    plain = bundle_a["text/plain"].splitlines()
    assert plain[0].startswith("Concept check 2.q1 (choose one): ")
    assert plain[1:] == [f"  {LETTERS[i]}) {mathtext.plain_text(o.text)}" for i, o in enumerate(q.options)]
    page = bundle_a["text/html"]
    assert page.count('role="radio"') == len(q.options) and page.count('role="radiogroup"') == 1
    assert 'role="status" aria-live="polite"' in page and "http" not in page
    data = json.loads(re.search(r'class="course-concept-data">(.*?)</script>', page, re.S).group(1))
    assert [data["options"][k]["right"] for k in LETTERS[:len(q.options)]] == [o.right for o in q.options]
    sanitized = re.sub(r"<!--course-concept-code-->[\s\S]*?<!--/course-concept-code-->", "", page)
    assert "<script>" not in sanitized and "<style>" not in sanitized, "only the code is left to the sanitizer"


def test_a_number_question_is_a_labelled_field():
    page = widget.static_html(_number())
    field = re.search(r'<label for="([^"]+)">Your answer \(a number\)</label><input id="([^"]+)"', page)
    assert field and field.group(1) == field.group(2)


def test_ask_prints_the_question_outside_a_notebook(capsys):
    concepts.ask("2.q1")
    assert capsys.readouterr().out.startswith("Concept check 2.q1")
    with pytest.raises(KeyError, match="no concept check"):
        concepts.ask("2.q99")


@pytest.mark.parametrize("tex, words", [
    (r"\sqrt{d_k}", "square root of d sub k"),
    (r"QK^\top", "Q K transpose"),
    (r"\frac{1}{\sqrt{d}}", "1 over square root of d"),
    (r"W^Q", "W Q"),
    (r"x^2 \le \alpha", "x squared less than or equal to alpha"),
    (r"\operatorname{softmax}(x)", "softmax of x"),
])
def test_math_is_drawn_and_said(tex, words):
    shown, said = mathtext.tex_html(tex)
    assert said == words and "\\" not in shown and "$" not in shown


def test_every_question_renders_without_tex_left():
    for q in QUESTIONS:
        texts = [q.text] + [o.text for o in q.options] + [o.feedback for o in q.options] + \
            [q.right, q.too_low, q.too_high]
        for text in texts:
            rendered = re.sub(r"<code>.*?</code>", "", mathtext.markdown_html(text))
            assert not re.search(r"\\[A-Za-z]+", rendered), f"{q.id}: TeX left in {rendered[:120]!r}"


# ----------------------------------------------------------------------------- the listing
def test_questions_lists_one_line_each(capsys):
    assert listing.main(["--lesson", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ids = [q.id for q in concepts.all_questions("02")]
    assert [line.split()[0] for line in lines[:-1]] == ids
    assert all(len(line) <= listing.WIDTH for line in lines)
    assert lines[-1] == f"{len(ids)} question(s)."
    assert listing.lessons_chosen("02,5") == ["02", "05"]
    with pytest.raises(ValueError, match="02, 2 or 02,05"):
        listing.lessons_chosen("two")


def test_questions_listing_says_formulas_in_words_not_tex():
    """An instructor reads the listing in a terminal: no backslash, brace, $ or ^ of TeX."""
    tex = re.compile(r"\\[A-Za-z]+|[{}$^]")     # (code names such as d_k may keep their _)
    lines = listing.listing()
    assert len(lines) == len(QUESTIONS)
    raw = [line for line in lines if tex.search(line)]
    assert not raw, f"{len(raw)} lines show raw TeX, e.g. {raw[:3]}"
    by_id = {line.split()[0]: line for line in lines}
    assert "q dot k over square root of d sub k" in by_id["2.q3"], by_id["2.q3"]
    planted = Question.__new__(Question)                     # a question never registered
    planted.id, planted.kind, planted.text = "99.q1", "choice", r"Why $q \cdot k / \sqrt{d_k}$?"
    assert not tex.search(listing.line(planted)) and "square root of d sub k" in listing.line(planted)


def test_course_py_has_the_questions_command():
    sys.path.insert(0, str(ROOT))
    import course
    args = course.parser().parse_args(["questions", "--lesson", "02"])
    assert args.func is course.cmd_questions and args.lesson == "02"


# ----------------------------------------------------------------------------- learner's copies
def _lesson_with_a_prediction():
    nb = nbformat.v4.new_notebook()
    ask = nbformat.v4.new_code_cell('from course_lib.exercises.concepts import ask\nask("2.q2")')
    view = {"model_id": "m1", "version_major": 2, "version_minor": 0}
    ask.outputs = [nbformat.v4.new_output("display_data", data={
        "text/plain": "Concept check 2.q2", "application/vnd.jupyter.widget-view+json": view})]
    answer = nbformat.v4.new_code_cell("print(shuffled_equal)", metadata={"tags": [TAG]})
    answer.outputs = [nbformat.v4.new_output("stream", name="stdout", text="True\n")]
    answer.execution_count = 7
    graded = nbformat.v4.new_code_cell("# Graded when you hand in the lesson\n### BEGIN HIDDEN TESTS\n"
                                       "assert True\n### END HIDDEN TESTS")
    nb.cells = [ask, answer, graded]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"m1": {
        "model_name": "AnyModel", "state": {"question_id": "2.q2",
                                            "verdict": {"key": "b", "right": False, "n": 1}}}}}}
    return nb


def test_the_learners_copies_hold_no_answers():
    nb = _lesson_with_a_prediction()
    mine = learner_notebook(nb, keep_graded=False)
    assert mine.cells[0].outputs == nb.cells[0].outputs, "the question itself stays"
    assert mine.cells[1].outputs == [] and mine.cells[1].execution_count is None
    state = mine.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]["m1"]["state"]
    assert state["verdict"] == {}, "a saved concept check shows no answer"
    assert len(mine.cells) == 2, "nbgrader's graded cell is left out of a learner's own copy"
    assert len(learner_notebook(nb).cells) == 3, "the hub's class copy keeps it (handed in)"
    student = student_notebook(nb)
    assert all(c.outputs == [] for c in student.cells) and "widgets" not in student.metadata
    assert "### BEGIN HIDDEN TESTS" not in student.cells[2].source and len(student.cells) == 3


def test_the_export_keeps_the_page_form_of_a_concept_check():
    sys.path.insert(0, str(ROOT / "tools"))
    from html_export.widgets import WIDGET_VIEW, replace_widgets

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('ask("2.q1")')
    bundle = widget.ConceptCheck(REGISTRY["2.q1"])._repr_mimebundle_()[0]
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells = [cell]
    assert replace_widgets(nb) == 1
    (out,) = cell.outputs
    assert WIDGET_VIEW not in out["data"] and out["data"]["text/html"] == bundle["text/html"]


def test_a_verify_reads_the_lessons_saved_output_and_fails_when_it_disagrees():
    """Numbers from training or pretrained weights are read from the lesson's saved output (what
    nbval holds to a re-run); a pattern the lesson no longer prints, or a wrong number, fails."""
    from course_lib.exercises.concepts.questions import printed
    assert printed("02", "lookup_figure", r"soft lookup returns ([\d.]+) kg") == ("7.66",)
    with pytest.raises(AssertionError, match="no longer prints"):
        printed("02", "lookup_figure", r"soft lookup returns ([\d.]+) tonnes")
    with pytest.raises(AssertionError, match="no saved output"):
        printed("02", "no cell has this source", r"x")
