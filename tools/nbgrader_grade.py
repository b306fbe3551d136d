"""Grade a lesson's submissions with nbgrader, as far as each submission allows.

    python tools/nbgrader_grade.py COURSE_DIR ASSIGNMENT [--no-feedback]

COURSE_DIR is an nbgrader course (nbgrader_config.py, source/ASSIGNMENT/*.ipynb with
the metadata from tools/nbgrader_metadata.py, submitted/<student>/ASSIGNMENT/).
Steps, each reported in one line:

1. nbgrader_config.py is checked first: a malformed one gives one line and exit 1
   (nbgrader itself would log a traceback and go on with default settings).
2. Each submission is compared with the instructor's notebook. Cells whose
   nbgrader metadata was stripped (an editor, a copy-paste into a new notebook) get
   it back, matched by cell id, then by source; a deleted check or graded cell is
   put back after its exercise (nbgrader then restores its source); a deleted
   solution is reported — that exercise scores 0. The submission as handed in is
   kept under COURSE_DIR/submitted_original/.
3. ``nbgrader autograde`` and ``nbgrader generate_feedback`` run; each failed
   graded cell's feedback carries the course checker's verdict — its hint. A
   submission with a cell that got no reply in time (a stalled kernel, rare) is
   autograded once more.
4. A table: student, score, max, and the verdict of every exercise not passed.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from course_lib.console import utf8_output

BIN = Path(sys.executable).parent      # nbgrader calls `alembic` by name: it must be on PATH
RUN_NBGRADER = Path(__file__).resolve().parent / "nbgrader_run.py"   # nbgrader, waits that wake


class GradingError(ValueError):
    """Bad input for grading; the message is the one line printed."""


def check_config(course: Path) -> None:
    """One line for a missing course, or a config file that doesn't load."""
    if not course.is_dir():
        raise GradingError(f"{course}: no such course folder")
    cfg = course / "nbgrader_config.py"
    if not cfg.is_file():
        raise GradingError(f"{cfg}: missing (an nbgrader course needs one; see the guide)")
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader
    try:
        PyFileConfigLoader(cfg.name, path=str(course)).load_config()
    except SyntaxError as e:
        raise GradingError(f"{cfg} line {e.lineno}: {e.msg} — nbgrader would ignore the "
                           "whole file") from None
    except ConfigFileNotFound:
        raise GradingError(f"{cfg}: can't be read") from None
    except Exception as e:   # noqa: BLE001 — anything the config's own code raises
        raise GradingError(f"{cfg}: {type(e).__name__}: {e} — nbgrader would ignore the "
                           "whole file") from None


def _defines(source: str) -> str | None:
    """The top-level function or class a cell defines (an exercise's name)."""
    m = re.search(r"^(?:def|class)\s+(\w+)", source, re.M)
    return m.group(1) if m else None


def _gid(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def repair(submitted: Path, source: Path) -> list[str]:
    """Restore stripped metadata and deleted check/graded cells in `submitted` from `source`
    (the instructor's notebook). Returns one line per problem; rewrites the file if any."""
    src = nbformat.read(source, as_version=4)
    sub = nbformat.read(submitted, as_version=4)
    who = f"{submitted.parent.parent.name}/{submitted.name}"
    wanted = {_gid(c): c for c in src.cells if _gid(c)}
    have = {_gid(c) for c in sub.cells if _gid(c)}
    lines, restored = [], 0
    # 1. stripped metadata: match by cell id, then by identical source (locked cells are
    #    unchanged by the student), then solution cells by the def/class they define.
    by_id = {c.get("id"): g for g, c in wanted.items()}
    by_source = {c.source: g for g, c in wanted.items() if not c.metadata["nbgrader"]["solution"]}
    by_def = {_defines(c.source): g for g, c in wanted.items() if c.metadata["nbgrader"]["solution"]}
    for cell in sub.cells:
        if _gid(cell):
            continue
        g = by_id.get(cell.get("id")) or by_source.get(cell.source) or by_def.get(_defines(cell.source))
        if g and g not in have and wanted[g].cell_type == cell.cell_type:
            cell.metadata["nbgrader"] = dict(wanted[g].metadata["nbgrader"])
            have.add(g)
            restored += 1
    if restored:
        lines.append(f"{who}: nbgrader metadata was missing on {restored} cell(s) — restored "
                     "from the lesson")
    # 2. deleted cells: checks and graded cells go back after their exercise.
    order = [_gid(c) for c in src.cells if _gid(c)]
    for g in order:
        if g in have:
            continue
        meta = wanted[g].metadata["nbgrader"]
        if meta["solution"]:
            lines.append(f"{who}: the solution cell of {g} is missing — that exercise scores 0")
            continue
        if not (g.endswith("_check") or g.endswith("_graded")):
            continue                   # a prompt: nothing to grade
        before = order[:order.index(g)]
        at = max((i for i, c in enumerate(sub.cells) if _gid(c) in before), default=len(sub.cells) - 1)
        cell = nbformat.from_dict(wanted[g])
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        sub.cells.insert(at + 1, cell)
        have.add(g)
        lines.append(f"{who}: cell {g} was deleted — put back, graded as far as the rest allows")
    if lines:
        nbformat.write(sub, submitted)
    return lines


def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    # PYTHONUTF8=1: nbgrader reads and writes its files, and prints, in UTF-8 on any system.
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONUTF8": "1"}
    return subprocess.run([sys.executable, str(RUN_NBGRADER), *args], cwd=course, env=env,
                          capture_output=True, text=True, encoding="utf-8", errors="replace")


def scores(course: Path, assignment: str) -> list[tuple[str, float, float, list[str]]]:
    """(student, score, max score, failed verdicts) for every graded submission."""
    from nbgrader.api import Gradebook, MissingEntry

    out = []
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in sorted(s.id for s in gb.students):
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                continue
            failed = []
            for nb in sub.notebooks:
                path = course / "autograded" / student / assignment / f"{nb.name}.ipynb"
                graded = nbformat.read(path, 4) if path.is_file() else None
                for cell in graded.cells if graded else []:
                    for o in cell.get("outputs", []):
                        if o.get("output_type") == "error" and cell.metadata.get("nbgrader", {}).get("grade"):
                            failed.append(o.get("evalue") or o.get("ename"))
            out.append((student, sub.score, sub.max_score, failed))
    return out


def timed_out(course: Path, assignment: str) -> list[str]:
    """The students whose autograded notebook holds a cell that timed out."""
    students = set()
    for path in (Path(course) / "autograded").glob(f"*/{assignment}/*.ipynb"):
        nb = nbformat.read(path, 4)
        if any(o.get("ename") == "CellTimeoutError" for c in nb.cells for o in c.get("outputs", [])):
            students.add(path.parts[-3])
    return sorted(students)


def grade(course: Path, assignment: str, feedback: bool = True,
          feedback_for: str | None = None) -> list[str]:
    """Check, repair, autograde, feedback; returns the lines printed."""
    course = Path(course).resolve()
    check_config(course)
    sources = sorted((course / "source" / assignment).glob("*.ipynb"))
    if not sources:
        raise GradingError(f"{course / 'source' / assignment}: no notebooks to grade against")
    if not (course / "release" / assignment).is_dir():
        r = _nbgrader(course, "generate_assignment", assignment, "--force")
        if r.returncode:
            raise GradingError(f"nbgrader generate_assignment failed: {r.stderr.strip().splitlines()[-1]}")
    lines = []
    for src in sources:
        for sub in sorted((course / "submitted").glob(f"*/{assignment}/{src.name}")):
            keep = course / "submitted_original" / sub.relative_to(course / "submitted")
            if not keep.exists():
                keep.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(sub, keep)
            lines += repair(sub, src)
    r = _nbgrader(course, "autograde", assignment, "--force")
    if r.returncode:
        tail = [ln for ln in r.stderr.splitlines() if "ERROR" in ln][-1:] or r.stderr.splitlines()[-1:]
        raise GradingError(f"nbgrader autograde failed: {' '.join(tail)}")
    # A cell whose reply never came (a stall of the kernel's messaging, not the student's code;
    # nbgrader_run.py's waits make it rare) leaves a CellTimeoutError: grade once more.
    for student in timed_out(course, assignment):
        lines.append(f"{student}: a cell got no reply within the time limit; graded once more")
        r = _nbgrader(course, "autograde", assignment, "--force", f"--student={student}")
        if r.returncode:
            raise GradingError(f"nbgrader autograde failed for {student}: "
                               f"{r.stderr.strip().splitlines()[-1:]}")
    if feedback:
        only = [f"--student={feedback_for}"] if feedback_for else []
        r = _nbgrader(course, "generate_feedback", assignment, "--force", *only)
        if r.returncode:
            raise GradingError(f"nbgrader generate_feedback failed: {r.stderr.strip().splitlines()[-1:]}")
    for student, score, max_score, failed in scores(course, assignment):
        lines.append(f"{student}: {score:g} / {max_score:g}" + "".join(f"\n    {f}" for f in failed))
    return lines


def main(argv=None) -> int:
    utf8_output()                # its messages hold "—": any console, any locale
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("course", type=Path)
    p.add_argument("assignment")
    p.add_argument("--no-feedback", action="store_true")
    p.add_argument("--feedback-for", metavar="STUDENT", help="feedback for this student only")
    args = p.parse_args(argv)
    try:
        lines = grade(args.course, args.assignment, feedback=not args.no_feedback,
                      feedback_for=args.feedback_for)
    except GradingError as e:
        print(e, file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
