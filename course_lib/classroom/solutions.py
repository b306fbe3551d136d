"""Solutions on purpose: `show_solution("2.1")` shows an exercise's solution, and records it.

A learner's lessons hold stubs, never solutions (course_lib.classroom.workspace). A solution
is one deliberate step away — typing, in a new cell,

    from course_lib.exercises import show_solution
    show_solution("2.1")          # or the exercise's name: show_solution("softmax")

Why a function rather than a hidden cell: a collapsed code cell still runs on *Run All* (and
would replace the learner's own function with the solution), and a Markdown disclosure cannot
tell anyone it was opened; a function is never run by Run All, works the same in JupyterLab,
Colab and any other front end, records that the learner looked (their progress then says
"solved after seeing the solution"), and can be switched off for a class. (The HTML export,
which has no kernel, shows each solution in a closed "Solution" disclosure instead.)

Where solutions come from: the instructor's lessons (`notebooks/` of the course's files, which
a clone and Colab have). They are absent where the instructor hands out a copy without them:
the class hub sets COURSE_SOLUTIONS=off unless started with --solutions, and a student pack
or nbgrader release carries no instructor lessons.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_HEADING = re.compile(r"^#+\s*Exercise\s+(\d+\.\d+)\s*[—–-]+\s*(.+?)\s*$", re.M)
_CHECK = re.compile(r"\bcheck_(\w+)\(")


@dataclass
class Solution:
    name: str            # the checker's name: "softmax"
    number: str          # as the lesson numbers it: "2.1"
    title: str
    lesson: str          # "02_attention"
    code: str            # the exercise's cell(s), with the solution inside


def solutions_enabled(environ=None) -> bool:
    environ = os.environ if environ is None else environ
    return environ.get("COURSE_SOLUTIONS", "").strip().lower() not in ("off", "0", "no", "false")


def instructor_lessons(environ=None) -> Path:
    """The folder of the instructor's lessons: $COURSE_SOLUTIONS_FROM, else notebooks/."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("COURSE_SOLUTIONS_FROM") or ROOT / "notebooks")


def _unmark(source: str) -> str:
    """The cell as an instructor wrote it, without the two marker lines."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END))


def index(folder: Path | None = None) -> dict[str, Solution]:
    """{name: Solution} for every exercise of the lessons in `folder` (one read per call)."""
    import nbformat

    folder = Path(folder or instructor_lessons())
    found: dict[str, Solution] = {}
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        heading, cells = None, []
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                for m in _HEADING.finditer(cell.source):
                    heading, cells = (m.group(1), m.group(2)), []
                continue
            if cell.cell_type != "code":
                continue
            if BEGIN in cell.source:
                cells.append(_unmark(cell.source))
            for name in _CHECK.findall(cell.source):
                if cells and heading and name not in found:
                    found[name] = Solution(name, heading[0], heading[1], path.stem,
                                           "\n\n".join(cells))
    return found


def find(which: str, folder: Path | None = None) -> Solution:
    """The solution for "2.1" or "softmax"; LookupError (one line) if there is none."""
    solutions = index(folder)
    key = str(which).strip()
    for s in solutions.values():
        if key in (s.name, s.number):
            return s
    known = ", ".join(f"{s.number} ({s.name})" for s in
                      sorted(solutions.values(), key=lambda s: [int(p) for p in s.number.split(".")]))
    raise LookupError(f"no exercise {which!r}; the exercises are: {known}")


def show_solution(which: str) -> None:
    """Show exercise `which`'s solution ("2.1" or "softmax") and record that you looked.

    Says one line instead when this copy of the course has no solutions (a class copy). The
    heading is announced to a screen reader (`speak.say`); the code follows in a disclosure,
    read when asked for, line by line."""
    from .speak import say

    if not solutions_enabled():
        say("Solutions are not part of this class's copy of the course: ask your instructor.")
        return
    folder = instructor_lessons()
    if not any(folder.glob("[0-9][0-9]_*.ipynb")):
        say("This copy of the course has no solutions (no instructor lessons in "
            f"{folder}): ask your instructor.")
        return
    try:
        s = find(which, folder)
    except LookupError as e:
        say(str(e))
        return
    from .records import record_solution_seen

    record_solution_seen(s.name, s.lesson[:2])     # "02": as the checkers record the lesson
    lines = len(s.code.splitlines())
    say(f"Solution to exercise {s.number} ({s.title}), from the instructor's version of "
        f"{s.lesson}: one way to solve it. Compare it with yours, then close it and write your "
        f"own. Once yours passes, your progress lists it as solved after seeing the solution: "
        f"one to redo later, from memory. The code, {lines} lines, is under “Show the code” below.")
    _display_code(s.code)


def _display_code(code: str) -> None:
    """The code in a closed disclosure ("Show the code"), highlighted, in a notebook; plain
    text elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
        if get_ipython() is not None:
            # Blank lines around the fence: Markdown inside an HTML block is read as Markdown.
            display(Markdown(f"<details><summary>Show the code</summary>\n\n```python\n{code}\n```\n\n</details>"))
            return
    except ImportError:
        pass
    print(code)
