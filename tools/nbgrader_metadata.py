"""Add nbgrader cell metadata to a lesson, so nbgrader grades it with the course's checkers.

    python tools/nbgrader_metadata.py notebooks/0[0-9]_*.ipynb notebooks/10_*.ipynb
    python tools/nbgrader_metadata.py --check notebooks/*.ipynb    # exit 1 if not up to date

For every exercise (a code cell with ``### BEGIN SOLUTION``, followed by the cell
that calls its ``check_...`` function):

* the solution cell becomes an nbgrader *solution* cell (``ex02_softmax``);
* the exercise's prompt — the markdown cells from its "Exercise" heading down to
  the solution — and the check cell become *read-only* (locked);
* one *autograded test* cell is added right after the check cell
  (``ex02_softmax_graded``). It calls the same checker again, silently, and
  asserts ``verdict.passed`` with the verdict as the message, so the checker's
  hint is what nbgrader's feedback shows. The call sits between
  ``### BEGIN/END HIDDEN TESTS``: the student version shows a one-line comment
  (no assert, so "Run All" still reaches the end on a stub), and nbgrader puts the
  hidden part back when it grades.

Idempotent: a second run changes nothing. Nothing else in the notebook changes —
sources, outputs and widget state stay as they were, and the added cell has no
output, so ``pytest --nbval`` compares the same outputs as before.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

from course_lib.console import utf8_output

BEGIN = "### BEGIN SOLUTION"
_DEF = re.compile(r"^(?:def|class)\s+(\w+)", re.M)
_CALL = re.compile(r"^\s*(?:\w+\s*=\s*)?(check_\w+\(.*\))\s*$", re.M)
_PROMPT = re.compile(r"^#+ .*Exercise", re.M)
_LESSON = re.compile(r"^(\d\d)_")
GRADED_COMMENT = ("# Graded when you hand in the lesson: the check above, run again on your code. "
                  "Nothing to write in this cell.")
SCHEMA = 3


class MetadataError(ValueError):
    """A lesson whose exercises can't be matched to their checks."""


def _meta(grade_id: str, *, solution=False, grade=False, locked=False, points=None) -> dict:
    m = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA,
         "solution": solution, "task": False}
    if points is not None:
        m["points"] = points
    return m


def graded_source(call: str) -> str:
    """The autograded cell: the checker again, quiet, its verdict as the assertion."""
    return "\n".join([
        GRADED_COMMENT,
        "### BEGIN HIDDEN TESTS",
        "import contextlib, io",
        f"from course_lib.exercises import {call.split('(')[0]}   # so a deleted check cell can't break it",
        "with contextlib.redirect_stdout(io.StringIO()):   # the check above already printed it",
        f"    _verdict = {call}",
        "assert _verdict.passed, str(_verdict)",
        "### END HIDDEN TESTS",
    ])


def exercises(nb, where: str = "notebook") -> list[dict]:
    """One dict per exercise: name, solution / check cell indices, prompt cells, call."""
    found, floor = [], -1          # a prompt is searched for after the previous check only
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or BEGIN not in cell.source:
            continue
        m = _DEF.search(cell.source)
        if not m:
            raise MetadataError(f"{where}, cell {i}: a solution outside a top-level def/class")
        name = m.group(1)
        check = next((j for j in range(i + 1, len(nb.cells))
                      if nb.cells[j].cell_type == "code" and _CALL.search(nb.cells[j].source)), None)
        if check is None or BEGIN in "".join(c.source for c in nb.cells[i + 1:check]):
            raise MetadataError(f"{where}, cell {i}: exercise {name!r} has no check_...() cell "
                                "after it")
        call = _CALL.findall(nb.cells[check].source)[-1]
        heading = next((j for j in range(i - 1, floor, -1) if nb.cells[j].cell_type == "markdown"
                        and _PROMPT.search(nb.cells[j].source)), None)
        prompts = [] if heading is None else [
            j for j in range(heading, i) if nb.cells[j].cell_type == "markdown"]
        found.append({"name": name, "solution": i, "check": check, "prompts": prompts,
                      "call": call})
        floor = check
    return found


def add_metadata(nb, lesson: str, points: float = 1, where: str = "notebook") -> int:
    """Add (or refresh) the nbgrader metadata and graded cells in place; returns the
    number of exercises. `lesson` is the two-digit number used in the grade ids."""
    if not re.fullmatch(r"\d\d", lesson):
        raise MetadataError(f"lesson must be two digits like '02', got {lesson!r}")
    # Refresh, not duplicate: drop the graded cells an earlier run added (an unchanged one is
    # put back as it was, so an executed lesson keeps its execution count and stays "up to date").
    def graded_id(c):
        return c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
    earlier = {graded_id(c): c for c in nb.cells if graded_id(c).endswith("_graded")}
    nb.cells = [c for c in nb.cells if not graded_id(c).endswith("_graded")]
    found = exercises(nb, where)
    for ex in reversed(found):   # inserting from the end keeps earlier indices valid
        gid = f"ex{lesson}_{ex['name']}"
        nb.cells[ex["solution"]].metadata["nbgrader"] = _meta(gid, solution=True)
        nb.cells[ex["check"]].metadata["nbgrader"] = _meta(f"{gid}_check", locked=True)
        for k, j in enumerate(ex["prompts"]):
            nb.cells[j].metadata["nbgrader"] = _meta(f"{gid}_prompt{k or ''}", locked=True)
        source = graded_source(ex["call"])
        graded = earlier.get(f"{gid}_graded")
        if graded is None or graded.source != source:
            graded = nbformat.v4.new_code_cell(source)
            graded.id = f"{gid}_graded".replace("_", "-")[:64]
        graded.metadata["nbgrader"] = _meta(f"{gid}_graded", grade=True, locked=True,
                                            points=points)
        nb.cells.insert(ex["check"] + 1, graded)
    return len(found)


def process(path: Path, check_only: bool = False, points: float = 1) -> str:
    """Apply to one lesson file; returns a one-line summary."""
    path = Path(path)
    m = _LESSON.match(path.name)
    if path.suffix != ".ipynb" or not path.is_file() or not m:
        raise MetadataError(f"{path}: expected a lesson notebook named NN_name.ipynb")
    before = path.read_text(encoding="utf-8")
    nb = nbformat.reads(before, as_version=4)
    n = add_metadata(nb, m.group(1), points=points, where=path.name)
    after = nbformat.writes(nb) + "\n"
    if after == before:
        return f"{path.name}: up to date ({n} exercises)"
    if check_only:
        return f"{path.name}: needs nbgrader metadata ({n} exercises)"
    path.write_text(after, encoding="utf-8")
    return f"{path.name}: nbgrader metadata for {n} exercises"


def main(argv=None) -> int:
    utf8_output()                # lesson names and errors may hold "—": any console, any locale
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="+", type=Path)
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a lesson "
                   "is not up to date")
    p.add_argument("--points", type=float, default=1, help="points per exercise (default 1)")
    args = p.parse_args(argv)
    stale = False
    for path in args.notebooks:
        try:
            line = process(path, check_only=args.check, points=args.points)
        except MetadataError as e:
            print(e, file=sys.stderr)
            return 1
        stale |= "needs" in line
        print(line)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
