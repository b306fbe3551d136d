"""The learner's own copy of the course (issue 36): what it holds, and updates that never
cost the learner's work (course_lib.classroom.workspace, opened by `course.py lab`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.classroom import workspace
from course_lib.mathtext import speakable_markdown
from course_lib.classroom.student import BEGIN, HIDDEN_BEGIN

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _outputs(cell):
    return cell.get("outputs", []) if cell.cell_type == "code" else []


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_learner_version_holds_exercises_to_do_and_every_other_output(path):
    course = nbformat.read(path, as_version=4)
    mine = workspace.learner_notebook(course, where=path.name)
    assert len(mine.cells) == len(course.cells)
    n_stubs = n_kept = 0
    for theirs, ours in zip(course.cells, mine.cells):
        assert theirs.get("id") == ours.get("id")
        if theirs.cell_type == "code" and BEGIN in theirs.source:
            assert BEGIN not in ours.source and "raise NotImplementedError(" in ours.source
            assert not _outputs(ours)
            n_stubs += 1
        elif workspace.is_check_cell(theirs):
            assert not _outputs(ours), "a check's ✅ must not be there before the learner runs it"
        elif HIDDEN_BEGIN in theirs.source:           # nbgrader's graded cell: no hidden test
            assert HIDDEN_BEGIN not in ours.source and not _outputs(ours)
        elif "concept-answer" in theirs.metadata.get("tags", []):   # a prediction's answer: not yet
            assert ours.source == theirs.source and not _outputs(ours)
        elif theirs.cell_type == "markdown":         # its formulas said in words (course_lib.mathtext)
            assert ours.source == speakable_markdown(theirs.source)
        else:
            assert ours.source == theirs.source
            assert _outputs(ours) == _outputs(theirs)
            n_kept += bool(_outputs(ours))
    # (a concept check's options may quote a verdict, "✅ correct: …": a question, not a check's output)
    text = json.dumps([_outputs(c) for c in mine.cells if "ask(" not in c.source], ensure_ascii=False)
    assert "✅" not in text and "correct — matches the reference" not in text
    assert n_stubs >= 1 and n_kept >= 1
    # The saved explorer pictures (widget state) stay: the lesson reads before anything runs.
    assert mine.metadata.get("widgets") == course.metadata.get("widgets")


def _copy_course(tmp_path) -> Path:
    source = tmp_path / "course" / "notebooks"
    source.mkdir(parents=True)
    for name in ("02_attention.ipynb", "03_positional_encodings.ipynb"):
        shutil.copy2(ROOT / "notebooks" / name, source / name)
    return source


def _change(path: Path, text: str):
    """The course changes a lesson: a sentence added to its first Markdown cell."""
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    first.source += "\n\n" + text
    nbformat.write(nb, path)


def _solve_softmax(path: Path):
    """The learner writes exercise 2.1's solution into their stub and saves."""
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if 'raise NotImplementedError("softmax:' in c.source)
    cell.source = cell.source.replace(
        '    # YOUR CODE HERE\n    raise NotImplementedError("softmax: write your solution here")',
        "    e = (scores - scores.max(dim=-1, keepdim=True).values).exp()  # mine\n"
        "    return e / e.sum(dim=-1, keepdim=True)")
    assert "# mine" in cell.source
    nbformat.write(nb, path)


def test_update_brings_new_lessons_and_keeps_the_learners_work(tmp_path):
    source = _copy_course(tmp_path)
    ws = tmp_path / "my-course"
    first = workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False)
    assert len(first) == 1 and str(ws) in first[0]
    assert workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False) == []

    lesson02, lesson03 = ws / "notebooks" / "02_attention.ipynb", ws / "notebooks" / "03_positional_encodings.ipynb"
    _solve_softmax(lesson02)
    mine = lesson02.read_bytes()
    # The course is updated (git pull): both lessons change.
    _change(source / "02_attention.ipynb", "A fix to lesson 02.")
    _change(source / "03_positional_encodings.ipynb", "A fix to lesson 03.")

    lines = workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False)
    assert lesson02.read_bytes() == mine, "the learner's lesson 02 must be kept byte for byte"
    assert "A fix to lesson 03." in lesson03.read_text(encoding="utf-8")
    about02 = [line for line in lines if line.startswith("02_attention.ipynb")]
    assert len(about02) == 1 and "newer version" in about02[0] \
        and "course.py lab --take-new 02" in about02[0], lines
    assert any(line.startswith("03_positional_encodings.ipynb: updated") for line in lines), lines
    # Told again next time (until taken), and still kept.
    again = workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False)
    assert [line for line in again if line.startswith("02_")] == about02
    assert lesson02.read_bytes() == mine

    # Taking the new version keeps the learner's copy beside it first.
    said = workspace.take_new("02", workspace=ws, source=source)
    backups = sorted((ws / "notebooks").glob("02_attention.backup-*.ipynb"))
    assert len(backups) == 1 and backups[0].read_bytes() == mine and backups[0].name in said
    assert "A fix to lesson 02." in lesson02.read_text(encoding="utf-8")
    assert workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False) == []


def test_running_cells_is_not_editing(tmp_path):
    """A lesson whose cells were only run (outputs changed, sources not) follows the course."""
    source = _copy_course(tmp_path)
    ws = tmp_path / "my-course"
    workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False)
    lesson = ws / "notebooks" / "03_positional_encodings.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = 7
    nbformat.write(nb, lesson)
    _change(source / "03_positional_encodings.ipynb", "Newer.")
    lines = workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False)
    assert lines == ["03_positional_encodings.ipynb: updated to the course's new version."]


def test_nothing_changes_while_a_jupyterlab_serves_the_workspace(tmp_path, monkeypatch):
    """Its open tabs may hold unsaved edits: a server's runtime file naming the workspace as its
    root (as jupyter_server writes it) stops every change, with one line."""
    source = _copy_course(tmp_path)
    ws = tmp_path / "my-course"
    workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    info = {"url": "http://127.0.0.1:8899/", "root_dir": str(ws), "pid": os.getpid(), "port": 8899,
            "base_url": "/", "hostname": "127.0.0.1", "secure": False, "token": "", "version": "2"}
    (runtime / f"jpserver-{os.getpid()}.json").write_text(json.dumps(info), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    lesson = ws / "notebooks" / "03_positional_encodings.ipynb"
    before = lesson.read_bytes()
    _change(source / "03_positional_encodings.ipynb", "Newer.")
    lines = workspace.sync(ws, source=source, assets=ROOT / "assets")
    assert len(lines) == 1 and "8899" in lines[0] and "nothing in it was changed" in lines[0]
    assert lesson.read_bytes() == before
    with pytest.raises(workspace.WorkspaceError, match="stop it first"):
        workspace.take_new("03", workspace=ws, source=source)


def test_take_new_names_the_lessons_when_it_finds_none(tmp_path):
    source = _copy_course(tmp_path)
    ws = tmp_path / "my-course"
    workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False)
    with pytest.raises(workspace.WorkspaceError, match="02_attention, 03_positional_encodings"):
        workspace.take_new("07", workspace=ws, source=source)


def test_workspace_holds_the_lessons_and_what_they_show_only(tmp_path):
    ws = tmp_path / "my-course"
    workspace.sync(ws, check_running=False)
    visible = sorted(p.name for p in ws.iterdir() if not p.name.startswith("."))
    assert visible == ["assets", "notebooks"]
    assert sorted(p.name for p in (ws / "notebooks").iterdir()) == [p.name for p in LESSONS]
    assert sorted(p.name for p in (ws / "assets").iterdir()) == ["encoder_decoder_shapes.svg"]


def test_default_workspace_is_git_ignored_and_named_for_the_learner():
    assert workspace.workspace_dir({}) == ROOT / "my-course"
    ignored = subprocess.run(["git", "check-ignore", "-q", "my-course/notebooks/02_attention.ipynb"],
                             cwd=ROOT, capture_output=True)
    assert ignored.returncode == 0, "my-course/ must be git-ignored: a pull never touches it"
    assert workspace.workspace_dir({"COURSE_WORKSPACE": str(ROOT / "x")}) == ROOT / "x"


def test_lab_take_new_is_one_command(tmp_path):
    """`course.py lab --take-new 03` as tools/lab.py runs it: one line, no server started."""
    source = _copy_course(tmp_path)
    ws = tmp_path / "ws"
    workspace.sync(ws, source=source, assets=ROOT / "assets", check_running=False)
    env = dict(os.environ, COURSE_WORKSPACE=str(ws))
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "lab.py"), "--take-new", "99"],
                       capture_output=True, text=True, encoding="utf-8", env=env, timeout=120)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "no single lesson matches '99'" in r.stderr
