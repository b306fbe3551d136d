"""Make the student version of a lesson: solutions stripped, outputs cleared.

In the instructor notebooks a solution sits between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (the nbgrader convention), always inside a function or class
body. The student version replaces the region with a stub that raises
``NotImplementedError`` naming the exercise; the checker right after it prints
"not solved yet", so "Run All" still reaches the end. Every output is cleared — so a
prediction's answer (a cell tagged "concept-answer") is not there before the student predicts,
and no concept check holds an answer (the saved widget state goes too). nbgrader's graded cells
stay, their hidden tests stripped: this version is the one handed in.

A student notebook records a fingerprint of what was generated. If its cells no
longer match that fingerprint, the student has worked in it: it is not
overwritten unless ``force=True``, and then a backup is kept beside it.

Usage: ``python -m course_lib.classroom.student notebooks/ student/ [--force]``
"""
from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import sys
import time
from pathlib import Path

import nbformat

from course_lib.console import utf8_output
from course_lib.mathtext import speakable_markdown

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
# nbgrader's hidden tests (tools/nbgrader_metadata.py puts the course checker's
# assertion there): graders see them, the student version doesn't.
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
_DEF = re.compile(r"^\s*(?:def|class)\s+(\w+)")


class StudentVersionError(ValueError):
    """A notebook whose solution markers can't be turned into a stub."""


def _strip_regions(source, begin, end, where, stub=None):
    """Drop each begin/end region of a cell (markers included), checking the markers pair up.

    stub(marker_line, exercise_name) -> lines put where the region was (None: nothing).
    exercise_name is the enclosing top-level function or class.
    """
    out, inside, name = [], False, None
    for line in source.splitlines():
        m = _DEF.match(line)
        if m and not inside and not line[:1].isspace():
            name = m.group(1)       # the top-level function or class: the exercise
        stripped = line.strip()
        if stripped == begin:
            if inside:
                raise StudentVersionError(f"{where}: nested {begin}")
            inside = True
            if stub is not None:
                out += stub(line, name)
        elif stripped == end:
            if not inside:
                raise StudentVersionError(f"{where}: {end} without {begin}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise StudentVersionError(f"{where}: {begin} without {end}")
    return "\n".join(out)


def strip_solutions(source: str, where: str = "cell") -> str:
    """Replace each BEGIN/END SOLUTION region of a code cell with a stub.

    The stub keeps the region's indentation and names the enclosing top-level
    function or class (the exercise), e.g. ``raise NotImplementedError("center_rows: ...")``;
    both methods of a class exercise name the class.
    """
    def stub(line, name):
        indent = line[: len(line) - len(line.lstrip())]
        if not indent:
            raise StudentVersionError(
                f"{where}: {BEGIN} must sit inside a function or class body, so the "
                "stub raises only when the learner's code is called, not during Run All")
        label = name or "exercise"
        return [f'{indent}# YOUR CODE HERE',
                f'{indent}raise NotImplementedError("{label}: write your solution here")']

    return _strip_regions(source, BEGIN, END, where, stub)


def strip_hidden_tests(source: str, where: str = "cell") -> str:
    """Drop each BEGIN/END HIDDEN TESTS region (markers included), as nbgrader does."""
    return _strip_regions(source, HIDDEN_BEGIN, HIDDEN_END, where)


def student_notebook(nb: nbformat.NotebookNode, where: str = "notebook") -> nbformat.NotebookNode:
    """A copy of `nb` with solutions stripped, outputs and widget state cleared, and each
    formula of its Markdown labelled with its words for a screen reader (course_lib.mathtext)."""
    nb = nbformat.from_dict(nb)   # deep copy
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            cell.source = speakable_markdown(cell.source)    # each formula said as one phrase
        if cell.cell_type != "code":
            continue
        if BEGIN in cell.source:
            cell.source = strip_solutions(cell.source, f"{where}, cell {i}")
        if HIDDEN_BEGIN in cell.source or HIDDEN_END in cell.source:
            cell.source = strip_hidden_tests(cell.source, f"{where}, cell {i}")
        cell.outputs = []
        cell.execution_count = None
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    nb.metadata["course_student"] = {"fingerprint": fingerprint(nb)}
    return nb


def fingerprint(nb: nbformat.NotebookNode) -> str:
    """Hash of the cells' sources: changes when the student edits any cell."""
    h = hashlib.sha256()
    for cell in nb.cells:
        h.update(cell.cell_type.encode())
        h.update(cell.source.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def student_has_edited(path: Path) -> bool:
    """True if the student notebook at `path` differs from what was generated."""
    nb = nbformat.read(path, as_version=4)
    recorded = nb.metadata.get("course_student", {}).get("fingerprint")
    return recorded != fingerprint(nb)


def write_student_version(src: Path, dest: Path, force: bool = False) -> str:
    """Generate the student version of `src` at `dest`.

    Returns what happened: "created", "updated", "unchanged", "kept" (the student
    edited it and force is False) or "replaced (backup: <file>)".
    """
    src, dest = Path(src), Path(dest)
    if src.suffix != ".ipynb" or not src.is_file():
        raise StudentVersionError(f"{src} is not a notebook file (.ipynb)")
    new = student_notebook(nbformat.read(src, as_version=4), where=src.name)
    new_text = nbformat.writes(new) + "\n"
    if dest.exists():
        if dest.read_text(encoding="utf-8") == new_text:
            return "unchanged"
        if student_has_edited(dest):
            if not force:
                return "kept"
            backup = dest.with_name(f"{dest.stem}.backup-{time.strftime('%Y%m%d-%H%M%S')}{dest.suffix}")
            shutil.copy2(dest, backup)
            dest.write_text(new_text, encoding="utf-8")
            return f"replaced (backup: {backup.name})"
        dest.write_text(new_text, encoding="utf-8")
        return "updated"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(new_text, encoding="utf-8")
    return "created"


def _backup(path: Path) -> Path:
    backup = path.with_name(f"{path.stem}.backup-{time.strftime('%Y%m%d-%H%M%S')}{path.suffix}")
    shutil.copy2(path, backup)
    return backup


def _lessons(src: Path) -> list[Path]:
    if src.is_dir():
        found = sorted(src.glob("[0-9][0-9]_*.ipynb"))
        if not found:
            raise StudentVersionError(f"{src}: no lesson notebooks (NN_name.ipynb) found")
        return found
    if src.suffix == ".ipynb" and src.is_file():
        return [src]
    raise StudentVersionError(f"{src}: no such lesson notebook or folder")


def build(source: Path, dest: Path, force: bool = False) -> list[str]:
    """Student versions of every lesson in `source` into `dest`; one line per lesson."""
    lessons = _lessons(Path(source))
    students = [student_notebook(nbformat.read(p, as_version=4), where=p.name) for p in lessons]
    del students  # all validated before anything is written
    return [f"{p.name}: {write_student_version(p, Path(dest) / p.name, force=force)}"
            for p in lessons]


def pack(source: Path, dest: Path, assets: Path | None = None, force: bool = False) -> Path:
    """The student pack: dest/notebooks (stubs, no outputs), dest/assets, and dest.zip."""
    dest = Path(dest)
    lines = build(source, dest / "notebooks", force=force)
    if assets is not None and Path(assets).is_dir():
        shutil.copytree(assets, dest / "assets", dirs_exist_ok=True)
    for line in lines:
        print(line)
    archive = shutil.make_archive(str(dest), "zip", root_dir=dest.parent, base_dir=dest.name)
    return Path(archive)


def reset(student_path: Path, source: Path, exercise: str | None = None) -> str:
    """Restore a student's lesson (or one exercise's cell) to its fresh state.

    The student's current file is backed up first. Returns a one-line summary.
    """
    student_path, source = Path(student_path), Path(source)
    if student_path.suffix != ".ipynb" or not student_path.is_file():
        raise StudentVersionError(f"{student_path} is not a notebook file (.ipynb)")
    original = source / student_path.name if source.is_dir() else source
    if not original.is_file():
        raise StudentVersionError(f"no lesson {student_path.name} in {source}")
    fresh = student_notebook(nbformat.read(original, as_version=4), where=original.name)
    if exercise is None:
        backup = _backup(student_path)
        student_path.write_text(nbformat.writes(fresh) + "\n", encoding="utf-8")
        return f"{student_path.name}: reset (backup: {backup.name})"
    marker = f'raise NotImplementedError("{exercise}:'
    hits = [c for c in fresh.cells if c.cell_type == "code" and marker in c.source]
    if not hits:
        raise StudentVersionError(f"{original.name} has no exercise named {exercise!r}")
    mine = nbformat.read(student_path, as_version=4)
    target = [i for i, c in enumerate(mine.cells) if c.get("id") == hits[0].get("id")]
    if not target:
        raise StudentVersionError(
            f"{student_path.name}: the cell of {exercise!r} was deleted or replaced; "
            "reset the whole lesson instead")
    backup = _backup(student_path)
    mine.cells[target[0]] = hits[0]
    nbformat.write(mine, student_path)
    return f"{student_path.name}: exercise {exercise} reset (backup: {backup.name})"


def main(argv=None) -> int:
    utf8_output()            # lessons' names and errors hold "—"
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in ("build", "pack", "reset", "-h", "--help"):
        argv.insert(0, "build")          # `python -m course_lib.classroom.student SRC DEST`
    p = argparse.ArgumentParser(prog="python -m course_lib.classroom.student",
                                description="Student versions of the lessons.")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="student versions of lessons into a folder")
    b.add_argument("source", help="a lesson notebook or a folder of them")
    b.add_argument("dest", help="output folder")
    b.add_argument("--force", action="store_true",
                   help="overwrite notebooks the student edited (a backup is kept)")
    k = sub.add_parser("pack", help="folder + zip to hand out: notebooks and assets")
    k.add_argument("dest", help="output folder; the zip is written beside it")
    k.add_argument("--source", default="notebooks")
    k.add_argument("--assets", default="assets")
    k.add_argument("--force", action="store_true")
    r = sub.add_parser("reset", help="restore a lesson (or one exercise) to its fresh state")
    r.add_argument("notebook", help="the student's notebook")
    r.add_argument("--exercise", help="reset only this exercise's cell")
    # The course's own lessons wherever the command runs (a learner's terminal opens in
    # my-course/, whose notebooks/ are their copies, not the source).
    r.add_argument("--source", default=str(Path(__file__).resolve().parents[2] / "notebooks"),
                   help="the instructor lessons (default: the course's notebooks/)")
    args = p.parse_args(argv)
    try:
        if args.cmd == "build":
            lines = build(Path(args.source), Path(args.dest), force=args.force)
            print("\n".join(lines))
            kept = sum(line.endswith(": kept") for line in lines)
            if kept:
                print(f"{kept} notebook(s) kept because they were edited; use --force to "
                      "replace them (a backup is kept).")
        elif args.cmd == "pack":
            archive = pack(Path(args.source), Path(args.dest), Path(args.assets), args.force)
            print(f"student pack: {args.dest}/ and {archive.name}")
        else:
            print(reset(Path(args.notebook), Path(args.source), args.exercise))
    except StudentVersionError as e:
        print(str(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
