"""Make the student version of a lesson: solutions stripped, outputs cleared.

In the instructor notebooks a solution sits between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (the nbgrader convention), always inside a function or class
body. The student version replaces the region with a stub that raises
``NotImplementedError`` naming the exercise; the checker right after it prints
"not solved yet", so "Run All" still reaches the end.

A student notebook records a fingerprint of what was generated. If its cells no
longer match that fingerprint, the student has worked in it: it is not
overwritten unless ``force=True``, and then a backup is kept beside it.

Usage: ``python -m course_lib.student notebooks/ student/ [--force]``
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

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_DEF = re.compile(r"^\s*(?:def|class)\s+(\w+)")


class StudentVersionError(ValueError):
    """A notebook whose solution markers can't be turned into a stub."""


def strip_solutions(source: str, where: str = "cell") -> str:
    """Replace each BEGIN/END SOLUTION region of a code cell with a stub.

    The stub keeps the region's indentation and names the enclosing function
    or class (the exercise), e.g. ``raise NotImplementedError("center_rows: ...")``.
    """
    out, inside, name = [], False, None
    for line in source.splitlines():
        m = _DEF.match(line)
        if m and not inside:
            name = m.group(1)
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise StudentVersionError(f"{where}: nested {BEGIN}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            if not indent:
                raise StudentVersionError(
                    f"{where}: {BEGIN} must sit inside a function or class body, so the "
                    "stub raises only when the learner's code is called, not during Run All")
            label = name or "exercise"
            out.append(f'{indent}# YOUR CODE HERE')
            out.append(f'{indent}raise NotImplementedError("{label}: write your solution here")')
        elif stripped == END:
            if not inside:
                raise StudentVersionError(f"{where}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise StudentVersionError(f"{where}: {BEGIN} without {END}")
    return "\n".join(out)


def student_notebook(nb: nbformat.NotebookNode, where: str = "notebook") -> nbformat.NotebookNode:
    """A copy of `nb` with solutions stripped, outputs and widget state cleared."""
    nb = nbformat.from_dict(nb)   # deep copy
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if BEGIN in cell.source:
            cell.source = strip_solutions(cell.source, f"{where}, cell {i}")
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
        if dest.read_text() == new_text:
            return "unchanged"
        if student_has_edited(dest):
            if not force:
                return "kept"
            backup = dest.with_name(f"{dest.stem}.backup-{time.strftime('%Y%m%d-%H%M%S')}{dest.suffix}")
            shutil.copy2(dest, backup)
            dest.write_text(new_text)
            return f"replaced (backup: {backup.name})"
        dest.write_text(new_text)
        return "updated"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(new_text)
    return "created"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Build student versions of the lessons.")
    p.add_argument("source", help="a lesson notebook or a folder of them")
    p.add_argument("dest", help="output folder")
    p.add_argument("--force", action="store_true",
                   help="overwrite notebooks the student edited (a backup is kept)")
    args = p.parse_args(argv)
    src = Path(args.source)
    if src.is_dir():
        lessons = sorted(src.glob("[0-9][0-9]_*.ipynb"))
    elif src.suffix == ".ipynb" and src.is_file():
        lessons = [src]
    else:
        print(f"{src}: no such lesson notebook or folder", file=sys.stderr)
        return 1
    if not lessons:
        print(f"{src}: no lesson notebooks (NN_name.ipynb) found", file=sys.stderr)
        return 1
    kept = 0
    for lesson in lessons:
        try:
            what = write_student_version(lesson, Path(args.dest) / lesson.name, force=args.force)
        except StudentVersionError as e:
            print(f"{lesson.name}: {e}", file=sys.stderr)
            return 1
        kept += what == "kept"
        print(f"{lesson.name}: {what}")
    if kept:
        print(f"{kept} notebook(s) kept because you edited them; use --force to replace "
              "them (a backup is kept).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
