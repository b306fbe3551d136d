"""nbgrader with the course's checkers (tools/nbgrader_metadata.py, tools/nbgrader_grade.py):
the metadata tool on a copy of a lesson, and a real nbgrader course graded end to end —
instructor version full marks, planted mistakes partial marks with their hints in the
feedback, a stub 0, a careless submission graded as far as possible, a bad config one line."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import nbgrader_grade  # noqa: E402
import nbgrader_metadata  # noqa: E402
from course_lib.classroom.student import student_notebook  # noqa: E402
from course_lib.mathtext import speakable_markdown

LESSON = ROOT / "notebooks" / "02_attention.ipynb"
TOOL = str(ROOT / "tools" / "nbgrader_metadata.py")

# Two slips a learner makes in lesson 02; each must cost exactly its exercise,
# and the checker's own hint for it must reach the feedback.
PLANTED = {
    "ex02_softmax": '''def softmax(scores):
    e = torch.exp(scores)
    return e / e.sum(dim=-1, keepdim=True)
''',
    "ex02_attention": '''def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
''',
}


def _tooled(tmp_path) -> Path:
    path = tmp_path / LESSON.name
    path.write_bytes(LESSON.read_bytes())
    nbgrader_metadata.process(path)
    return path


def _gid(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


# ------------------------------------------------------------------ the metadata tool
def _without_nbgrader(nb):
    """The lesson as it was before the tool ran: no graded cells, no nbgrader metadata."""
    nb.cells = [c for c in nb.cells if not (_gid(c) or "").endswith("_graded")]
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    return nb


def test_committed_lessons_carry_up_to_date_metadata():
    lessons = sorted(str(p) for p in LESSON.parent.glob("[0-9][0-9]_*.ipynb"))
    r = subprocess.run([sys.executable, TOOL, "--check", *lessons], capture_output=True, text=True,
                       encoding="utf-8")
    assert r.returncode == 0, r.stdout + r.stderr


def test_metadata_tool_adds_only_metadata_and_silent_graded_cells(tmp_path):
    path = tmp_path / LESSON.name
    nbformat.write(_without_nbgrader(nbformat.read(LESSON, 4)), path)
    r = subprocess.run([sys.executable, TOOL, "--check", str(path)], capture_output=True, text=True,
                       encoding="utf-8")
    assert r.returncode == 1 and "needs nbgrader metadata (3 exercises)" in r.stdout
    r = subprocess.run([sys.executable, TOOL, str(path)], capture_output=True, text=True, encoding="utf-8")
    assert r.returncode == 0 and r.stdout.strip() == "02_attention.ipynb: nbgrader metadata for 3 exercises"
    once = path.read_bytes()
    r = subprocess.run([sys.executable, TOOL, "--check", str(path)], capture_output=True, text=True,
                       encoding="utf-8")
    assert r.returncode == 0 and "up to date" in r.stdout
    nbgrader_metadata.process(path)
    assert path.read_bytes() == once, "a second run must change nothing"

    before, after = _without_nbgrader(nbformat.read(LESSON, 4)), nbformat.read(path, 4)
    kept = [c for c in after.cells if not (_gid(c) or "").endswith("_graded")]
    assert len(kept) == len(before.cells)
    for old, new in zip(before.cells, kept):
        assert (old.source, old.get("outputs"), old.get("id")) == (new.source, new.get("outputs"), new.get("id"))
        assert {k: v for k, v in new.metadata.items() if k != "nbgrader"} == dict(old.metadata)
    graded = [c for c in after.cells if (_gid(c) or "").endswith("_graded")]
    assert [_gid(c) for c in graded] == ["ex02_softmax_graded", "ex02_attention_graded",
                                         "ex02_SelfAttention_graded"]
    for cell in graded:   # no output for nbval to compare; right after its check cell
        assert cell.outputs == [] and cell.metadata.nbgrader["points"] == 1
        prev = after.cells[after.cells.index(cell) - 1]
        assert _gid(prev) == _gid(cell).replace("_graded", "_check") and prev.metadata.nbgrader["locked"]
    solutions = [c for c in after.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert all("### BEGIN SOLUTION" in c.source for c in solutions) and len(solutions) == 3
    prompts = [c for c in after.cells if (_gid(c) or "").startswith("ex02_softmax_prompt")]
    assert prompts and prompts[0].cell_type == "markdown" and "Exercise 2.1" in prompts[0].source


def test_graded_cell_is_silent_and_passes_on_the_reference():
    ns = {}
    exec("import torch, math\nfrom course_lib.nn.attention import *", ns)   # noqa: S102
    exec("def softmax(s):\n    return torch.softmax(s, dim=-1)", ns)     # noqa: S102
    source = nbgrader_metadata.graded_source("check_softmax(softmax)")
    exec(source, ns)                                                     # noqa: S102 — no raise
    ns["softmax"] = lambda s: torch.exp(s) / torch.exp(s).sum(-1, keepdim=True)
    with pytest.raises(AssertionError, match="softmax"):
        exec(source, ns)                                                 # noqa: S102


def test_metadata_tool_bad_input_is_one_line(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION")])
    path = tmp_path / "05_orphan.ipynb"
    nbformat.write(nb, path)
    r = subprocess.run([sys.executable, TOOL, str(path)], capture_output=True, text=True, encoding="utf-8")
    assert r.returncode == 1
    assert r.stderr.strip() == "05_orphan.ipynb, cell 0: exercise 'f' has no check_...() cell after it"
    r = subprocess.run([sys.executable, TOOL, str(tmp_path / "notes.ipynb")], capture_output=True, text=True,
                       encoding="utf-8")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1


def test_student_version_hides_the_graded_assertion(tmp_path):
    """course_lib.classroom.student (make student / pack / the hub's student version) drops the
    hidden tests, so a stub's Run All still reaches the end."""
    student = student_notebook(nbformat.read(_tooled(tmp_path), 4))
    graded = [c for c in student.cells if (_gid(c) or "").endswith("_graded")]
    assert len(graded) == 3
    for cell in graded:
        assert cell.source == nbgrader_metadata.GRADED_COMMENT


# ------------------------------------------------------------------ bad config: one line
@pytest.mark.parametrize("text, expected", [
    ("c = get_config()\nc.Execute.timeout = = 300\n", "nbgrader_config.py line 2: invalid syntax"),
    ("c = get_config()\nc.CourseDirectory.course_id = undefined_name\n", "NameError"),
])
def test_malformed_nbgrader_config_gives_one_line(tmp_path, text, expected):
    (tmp_path / "nbgrader_config.py").write_text(text, encoding="utf-8")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "nbgrader_grade.py"), str(tmp_path),
                        "lesson02"], capture_output=True, text=True, encoding="utf-8", timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], r.stderr


# ------------------------------------------------------------------ a real nbgrader course
def _expected_hint(exercise: str) -> str:
    from course_lib.exercises import check_attention, check_softmax
    ns = {"torch": torch, "math": math}
    exec(PLANTED[exercise], ns)                                           # noqa: S102
    if exercise == "ex02_softmax":
        return check_softmax(ns["softmax"]).message
    return check_attention(ns["attention"]).message


def test_a_submission_whose_cell_timed_out_is_found(tmp_path):
    """grade() autogrades such a submission once more (a stalled kernel is not the student's)."""
    for student, ename in (("ann", "CellTimeoutError"), ("ben", "NameError")):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
        nb.cells[0].outputs = [nbformat.v4.new_output("error", ename=ename, evalue="", traceback=[])]
        path = tmp_path / "autograded" / student / "lesson02" / "02_attention.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
    assert nbgrader_grade.timed_out(tmp_path, "lesson02") == ["ann"]
    assert nbgrader_grade.timed_out(tmp_path, "lesson03") == []


@pytest.mark.slow
@pytest.mark.timeout(480)
def test_nbgrader_round_trip_with_the_course_checkers(tmp_path):
    course = tmp_path / "course"
    (course / "source" / "lesson02").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        'c = get_config()\nc.CourseDirectory.course_id = "transformers"\n'
        # Lesson 02's cells take seconds: a kernel that stalls is timed out, and graded
        # once more, well within this test's limit.
        "c.Execute.timeout = 90\n", encoding="utf-8")
    source = course / "source" / "lesson02" / LESSON.name
    source.write_bytes(LESSON.read_bytes())
    nbgrader_metadata.process(source)
    r = nbgrader_grade._nbgrader(course, "generate_assignment", "lesson02", "--force")
    assert r.returncode == 0, r.stderr[-2000:]
    release = nbformat.read(course / "release" / "lesson02" / LESSON.name, 4)
    text = nbformat.writes(release)
    assert "### BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "raise NotImplementedError" in text

    # nbgrader's student version and course_lib.classroom.student's: the same cells, the same
    # sources everywhere but inside the stubs (one source of truth: the markers) — and ours
    # says each formula of the prose in words too (course_lib.mathtext).
    ours = student_notebook(nbformat.read(source, 4))
    assert len(ours.cells) == len(release.cells)
    for a, b in zip(ours.cells, release.cells):
        if b.cell_type == "markdown":
            assert a.source == speakable_markdown(b.source)
        elif "NotImplementedError" not in a.source:
            assert a.source == b.source

    src = nbformat.read(source, 4)

    def submit(student, nb):
        path = course / "submitted" / student / "lesson02" / LESSON.name
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)

    submit("instructor", src)
    submit("stub", release)
    mistakes = nbformat.from_dict(src)
    for cell in mistakes.cells:
        if _gid(cell) in PLANTED:
            cell.source = PLANTED[_gid(cell)]
    submit("mistakes", mistakes)
    # Careless: the graded cell of softmax deleted, and an editor stripped every
    # cell's metadata.
    careless = nbformat.from_dict(src)
    careless.cells = [c for c in careless.cells if _gid(c) != "ex02_softmax_graded"]
    for cell in careless.cells:
        cell.metadata = {}
    submit("careless", careless)

    lines = nbgrader_grade.grade(course, "lesson02", feedback_for="mistakes")
    report = "\n".join(lines)
    assert "instructor: 3 / 3" in report, report
    assert "stub: 0 / 3" in report, report
    assert "mistakes: 1 / 3" in report, report
    assert "careless: 3 / 3" in report, report
    assert "careless/02_attention.ipynb: nbgrader metadata was missing on" in report
    assert "careless/02_attention.ipynb: cell ex02_softmax_graded was deleted — put back" in report
    assert (course / "submitted_original" / "careless" / "lesson02" / LESSON.name).is_file()

    feedback = (course / "feedback" / "mistakes" / "lesson02" / "02_attention.html").read_text(encoding="utf-8")
    for exercise in PLANTED:
        hint = _expected_hint(exercise)
        assert hint and hint in report, (exercise, hint)
        # The HTML escapes quotes and ampersands; the hint's words must be there.
        import html
        assert html.escape(hint, quote=False) in feedback or hint in feedback, (exercise, hint)
