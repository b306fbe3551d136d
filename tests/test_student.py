"""The student-version generator: stubs, cleared outputs, no lost student work."""
import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_lib.classroom.student import (StudentVersionError, main, strip_solutions, student_notebook,
                                write_student_version)

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

SOLVED = '''def center_rows(x):
    "doc"
    ### BEGIN SOLUTION
    m = x.mean(-1, keepdim=True)
    return x - m
    ### END SOLUTION'''


def test_region_becomes_a_named_stub_with_the_same_indent():
    out = strip_solutions(SOLVED)
    assert "x.mean" not in out and "BEGIN SOLUTION" not in out
    assert '    raise NotImplementedError("center_rows: write your solution here")' in out
    assert out.startswith('def center_rows(x):\n    "doc"')


def test_two_regions_in_a_class_name_the_class():
    src = ("class Head:\n    def __init__(self):\n        ### BEGIN SOLUTION\n        self.a = 1\n"
           "        ### END SOLUTION\n\n    def forward(self, x):\n        ### BEGIN SOLUTION\n"
           "        return x\n        ### END SOLUTION\n")
    out = strip_solutions(src)
    assert out.count('NotImplementedError("Head: write your solution here")') == 2
    assert "self.a" not in out and "return x" not in out


@pytest.mark.parametrize("bad, message", [
    ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "inside a function"),
    ("def f():\n    ### BEGIN SOLUTION\n    return 1", "without ### END"),
    ("def f():\n    return 1\n    ### END SOLUTION", "without ### BEGIN"),
])
def test_malformed_markers_are_refused(bad, message):
    with pytest.raises(StudentVersionError, match=message):
        strip_solutions(bad)


def _lesson(tmp_path, source=SOLVED) -> Path:
    nb = new_notebook(cells=[new_markdown_cell("# Lesson"), new_code_cell(source)])
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="old output")]
    nb.cells[1].execution_count = 3
    nb.metadata["widgets"] = {"state": {}}
    path = tmp_path / "00_demo.ipynb"
    nbformat.write(nb, path)
    return path


def test_outputs_counts_and_widget_state_are_cleared(tmp_path):
    nb = student_notebook(nbformat.read(_lesson(tmp_path), as_version=4))
    assert nb.cells[1].outputs == [] and nb.cells[1].execution_count is None
    assert "widgets" not in nb.metadata


def test_an_edited_student_notebook_is_kept_unless_forced(tmp_path):
    src, dest = _lesson(tmp_path), tmp_path / "student" / "00_demo.ipynb"
    assert write_student_version(src, dest) == "created"
    assert write_student_version(src, dest) == "unchanged"

    # The student writes a solution.
    nb = nbformat.read(dest, as_version=4)
    nb.cells[1].source = nb.cells[1].source.replace("raise NotImplementedError", "return x * 0  #")
    nbformat.write(nb, dest)
    mine = dest.read_text(encoding="utf-8")

    assert write_student_version(src, dest) == "kept"
    assert dest.read_text(encoding="utf-8") == mine

    what = write_student_version(src, dest, force=True)
    assert what.startswith("replaced (backup: 00_demo.backup-")
    backups = list(dest.parent.glob("00_demo.backup-*.ipynb"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == mine
    assert "return x * 0" not in dest.read_text(encoding="utf-8")


def test_an_untouched_student_notebook_follows_instructor_changes(tmp_path):
    src, dest = _lesson(tmp_path), tmp_path / "s" / "00_demo.ipynb"
    write_student_version(src, dest)
    nb = nbformat.read(src, as_version=4)
    nb.cells[0].source = "# Lesson, revised"
    nbformat.write(nb, src)
    assert write_student_version(src, dest) == "updated"
    assert "revised" in dest.read_text(encoding="utf-8")


def test_cli_rejects_a_missing_lesson_and_a_non_notebook(tmp_path, capsys):
    assert main([str(tmp_path / "nope.ipynb"), str(tmp_path / "out")]) == 1
    (tmp_path / "notes.txt").write_text("hi", encoding="utf-8")
    assert main([str(tmp_path / "notes.txt"), str(tmp_path / "out")]) == 1
    assert "no such lesson" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_every_lesson_has_a_stub_for_every_solution():
    for lesson in LESSONS:
        nb = student_notebook(nbformat.read(lesson, as_version=4), where=lesson.name)
        text = json.dumps([c.source for c in nb.cells if c.cell_type == "code"])
        assert "BEGIN SOLUTION" not in text, lesson.name


@pytest.mark.slow
@pytest.mark.lessons
@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_student_version_runs_to_the_end(lesson, tmp_path, monkeypatch):
    """Executed top to bottom in a fresh kernel, on a simulated other machine: no cell may raise.

    `course.py test` runs this where the browser test cannot (off Linux); on Linux the
    browser test runs every student version in JupyterLab instead (tests/test_browser.py).
    """
    from lesson_client import LessonClient
    from portability import OTHER_MACHINE_ENV

    for name, value in OTHER_MACHINE_ENV.items():   # the kernel inherits them
        monkeypatch.setenv(name, value)

    dest = tmp_path / lesson.name
    write_student_version(lesson, dest)
    nb = nbformat.read(dest, as_version=4)
    n_stubs = sum("raise NotImplementedError(" in c.source for c in nb.cells if c.cell_type == "code")
    LessonClient(nb, timeout=600, kernel_name="python3", allow_errors=False,
                   resources={"metadata": {"path": str(lesson.parent)}}).execute()
    # A check's verdict is a display (course_lib.classroom.speak.say): its text/plain, or a stream.
    printed = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                      for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert printed.count("not solved yet") >= n_stubs, "a check did not report its stub"


def _two_exercise_lesson(tmp_path) -> Path:
    nb = new_notebook(cells=[
        new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"),
        new_code_cell("def g(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
    ])
    src = tmp_path / "lessons"
    src.mkdir()
    nbformat.write(nb, src / "01_two.ipynb")
    return src


def test_pack_builds_folder_and_zip_with_assets(tmp_path):
    import zipfile
    from course_lib.classroom.student import pack

    src = _two_exercise_lesson(tmp_path)
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "diagram.svg").write_text("<svg/>", encoding="utf-8")
    archive = pack(src, tmp_path / "pack", tmp_path / "assets")
    names = zipfile.ZipFile(archive).namelist()
    assert "pack/notebooks/01_two.ipynb" in names and "pack/assets/diagram.svg" in names
    text = (tmp_path / "pack" / "notebooks" / "01_two.ipynb").read_text(encoding="utf-8")
    assert "return 2 * x" not in text and 'NotImplementedError(\\"g:' in text


def test_pack_of_a_missing_folder_writes_nothing(tmp_path, capsys):
    assert main(["pack", str(tmp_path / "pack"), "--source", str(tmp_path / "none")]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "pack").exists() and not (tmp_path / "pack.zip").exists()


def _solve(path, old, new):
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        c.source = c.source.replace(old, new)
    nbformat.write(nb, path)


def test_reset_one_exercise_keeps_the_other_and_a_backup(tmp_path):
    from course_lib.classroom.student import reset

    src = _two_exercise_lesson(tmp_path)
    dest = tmp_path / "student" / "01_two.ipynb"
    write_student_version(src / "01_two.ipynb", dest)
    _solve(dest, 'raise NotImplementedError("f: write your solution here")', "return x  # mine")
    _solve(dest, 'raise NotImplementedError("g: write your solution here")', "return 2 * x  # mine")
    line = reset(dest, src, exercise="g")
    assert "exercise g reset" in line
    text = dest.read_text(encoding="utf-8")
    assert "return x  # mine" in text and "return 2 * x  # mine" not in text
    backups = list(dest.parent.glob("01_two.backup-*.ipynb"))
    assert len(backups) == 1 and "return 2 * x  # mine" in backups[0].read_text(encoding="utf-8")


def test_reset_whole_lesson(tmp_path):
    from course_lib.classroom.student import reset

    src = _two_exercise_lesson(tmp_path)
    dest = tmp_path / "student" / "01_two.ipynb"
    write_student_version(src / "01_two.ipynb", dest)
    _solve(dest, 'raise NotImplementedError("f: write your solution here")', "return x  # mine")
    assert "reset (backup:" in reset(dest, src)
    assert "# mine" not in dest.read_text(encoding="utf-8")


@pytest.mark.parametrize("args, message", [
    (["reset", "missing.ipynb"], "not a notebook file"),
    (["reset", "notes.txt"], "not a notebook file"),
    (["reset", "01_two.ipynb", "--exercise", "nope"], "no exercise named 'nope'"),
])
def test_reset_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, args, message):
    src = _two_exercise_lesson(tmp_path)
    work = tmp_path / "student"
    write_student_version(src / "01_two.ipynb", work / "01_two.ipynb")
    (work / "notes.txt").write_text("not a notebook", encoding="utf-8")
    monkeypatch.chdir(work)
    before = sorted(p.name for p in work.iterdir())
    assert main(args + ["--source", str(src)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert sorted(p.name for p in work.iterdir()) == before
