"""Every exercise and its state — solved, solved after seeing the solution, attempted, not
started — in lesson order with its number ("2.1 softmax"), and apart from them the concept
checks: right the first time, right after some tries, not right yet, not answered
(`show_progress()`).

The verdicts and answers come from the file `course_lib.classroom.records` keeps; the list of
exercises from the checkers' registry (`course_lib.exercises`), their numbers from the lessons'
"Exercise 2.1 — …" headings (as `show_solution` finds them); the questions from
`course_lib.exercises.concepts`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from .records import (ATTEMPTED, NOT_STARTED, SOLVED, SOLVED_AFTER_SOLUTION, _load, concept_answers,
                      progress_file, state)

NOT_ANSWERED = "not answered"
FIRST_TIME = "right the first time"


def progress_table(exercises: dict | None = None) -> tuple[list[tuple[str, str, str]], str | None]:
    """Rows (lesson, exercise, state) for every known exercise, and a warning if any.

    state: "solved", "solved after seeing the solution" (show_solution before the first
    correct check), "attempted" (checked but never passed — a stub counts as not started —
    or a solution seen and not solved yet) or "not started".
    """
    if exercises is None:
        from ..exercises.framework import REGISTRY
        import course_lib.exercises  # noqa: F401  (fills the registry)
        exercises = {name: ex.lesson for name, ex in REGISTRY.items()}
    data, warning = _load(progress_file())
    rows = [(lesson, name, state(data.get(name)))
            for name, lesson in sorted(exercises.items(), key=lambda kv: (kv[1], kv[0]))]
    return rows, warning


def _lesson_folders() -> list[Path]:
    """Where lessons may be read for the exercises' numbers: the instructor's lessons, then
    the learner's workspace (a class copy may have only the latter)."""
    from .solutions import instructor_lessons
    from .workspace import workspace_dir
    return [instructor_lessons(), workspace_dir() / "notebooks"]


def exercise_numbers(folders: list[Path] | None = None) -> dict[str, str]:
    """{checker name: "2.1"}: each lesson's "Exercise 2.1 — title" heading, given to the
    first `check_<name>(` call after it. Empty when no lessons can be read."""
    from .solutions import _CHECK, _HEADING

    for folder in folders if folders is not None else _lesson_folders():
        lessons = sorted(Path(folder).glob("[0-9][0-9]_*.ipynb"))
        if not lessons:
            continue
        numbers: dict[str, str] = {}
        for path in lessons:
            try:
                cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
            except (OSError, ValueError):
                continue
            heading = None
            for cell in cells:
                source = "".join(cell.get("source", ""))
                if cell.get("cell_type") == "markdown":
                    found = _HEADING.findall(source)
                    heading = found[-1][0] if found else heading
                elif cell.get("cell_type") == "code" and heading:
                    for name in _CHECK.findall(source):
                        numbers.setdefault(name, heading)
                        heading = None
        return numbers
    return {}


def _number_key(number: str):
    return [int(p) for p in re.findall(r"\d+", number)] or [10 ** 6]


def exercise_rows(exercises: dict | None = None, numbers: dict | None = None):
    """(rows (lesson, number, name, state) in lesson order, warning): as progress_table, each
    exercise with its number ("2.1"; "" when the lessons are not at hand)."""
    rows, warning = progress_table(exercises)
    numbers = exercise_numbers() if numbers is None else numbers
    numbered = [(lesson, numbers.get(name, ""), name, st) for lesson, name, st in rows]
    return sorted(numbered, key=lambda r: (r[0], _number_key(r[1]) if r[1] else [10 ** 6], r[2])), warning


def concept_state(entry: dict | None) -> str:
    """"right the first time", "right after N tries", "not right yet (N tries)" or "not answered"."""
    if not entry or not entry.get("attempts"):
        return NOT_ANSWERED
    if entry.get("first_right"):
        return FIRST_TIME
    tries = int(entry.get("attempts", 0))
    if entry.get("right"):
        return f"right after {tries} tries"
    return f"not right yet ({tries} {'try' if tries == 1 else 'tries'})"


def concept_rows(questions=None) -> list[tuple[str, str, str]]:
    """(lesson, question id, state) for every concept check, in lesson order."""
    if questions is None:
        from ..exercises.concepts import all_questions
        questions = all_questions()
    answers = concept_answers()
    return [(q.lesson, q.id, concept_state(answers.get(q.id))) for q in questions]


def concept_summary(rows) -> list[str]:
    """Per lesson: the counts, then each question's state where any was answered."""
    lines = []
    for lesson in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == lesson]
        first = sum(st == FIRST_TIME for *_, st in mine)
        after = sum(st.startswith("right after") for *_, st in mine)
        not_yet = sum(st.startswith("not right yet") for *_, st in mine)
        none = sum(st == NOT_ANSWERED for *_, st in mine)
        if none == len(mine):                      # a lesson not begun: one line
            lines.append(f"Lesson {lesson}: {none} not answered")
            continue
        counts = [f"{first} right the first time", f"{after} right after more tries"]
        if not_yet:
            counts.append(f"{not_yet} not right yet")
        counts.append(f"{none} not answered")
        lines.append(f"Lesson {lesson}: " + ", ".join(counts))
        lines += [f"  {qid:<7}{st}" for _, qid, st in mine]
    return lines


def progress_text() -> str:
    """What show_progress says: the exercises, then the concept checks (plain text)."""
    rows, warning = exercise_rows()
    lines = [f"Note: {warning}"] if warning else []
    # A mark and the state in words: never a colour or a symbol alone.
    icon = {SOLVED: "✅", SOLVED_AFTER_SOLUTION: "☑", ATTEMPTED: "❌", NOT_STARTED: "·"}
    labels = [f"{number} {name}".strip() for _, number, name, _ in rows]
    width = max([len(label) for label in labels] + [8])
    lines.append(f"{'lesson':<7}{'exercise':<{width + 2}}state")
    for (lesson, _, _, st), label in zip(rows, labels):
        lines.append(f"{lesson:<7}{label:<{width + 2}}{icon[st]} {st}")
    done = sum(st == SOLVED for *_, st in rows)
    helped = sum(st == SOLVED_AFTER_SOLUTION for *_, st in rows)
    lines.append(f"{done} of {len(rows)} exercises solved on your own, {helped} after seeing the solution.")
    concepts = concept_rows()
    if concepts:
        answered = sum(st != NOT_ANSWERED for *_, st in concepts)
        lines += ["", f"Concept checks (kept apart from the exercises): {answered} of {len(concepts)} answered."]
        lines += concept_summary(concepts)
    lines.append(f"(Stored only on this machine: {progress_file()})")
    return "\n".join(lines)


def show_progress() -> None:
    """Show every lesson's exercises (numbered, in lesson order) and their state, then the
    concept checks; announced once to a screen reader in a notebook."""
    text = progress_text()
    try:
        from .speak import say
    except ImportError:           # the speaking helper is optional plumbing
        print(text)
        return
    say(text, "Your progress")
