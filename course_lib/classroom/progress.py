"""Every exercise and its state — solved, attempted, not started — as a table (`show_progress()`).

The verdicts come from the file `course_lib.classroom.records` keeps; the list of exercises
from the checkers' registry (`course_lib.exercises`).
"""
from __future__ import annotations

from .records import ATTEMPTED, NOT_STARTED, SOLVED, _load, progress_file


def progress_table(exercises: dict | None = None) -> tuple[list[tuple[str, str, str]], str | None]:
    """Rows (lesson, exercise, state) for every known exercise, and a warning if any.

    state: "solved", "attempted" (checked but never passed — a stub counts as not
    started) or "not started".
    """
    if exercises is None:
        from ..exercises.framework import REGISTRY
        import course_lib.exercises  # noqa: F401  (fills the registry)
        exercises = {name: ex.lesson for name, ex in REGISTRY.items()}
    data, warning = _load(progress_file())
    rows = []
    for name, lesson in sorted(exercises.items(), key=lambda kv: (kv[1], kv[0])):
        entry = data.get(name)
        if entry is None or (not entry.get("solved") and entry.get("last") == "todo"):
            state = NOT_STARTED
        else:
            state = SOLVED if entry.get("solved") else ATTEMPTED
        rows.append((lesson, name, state))
    return rows, warning


def show_progress() -> None:
    """Print a table of every lesson's exercises: solved, attempted, not started."""
    rows, warning = progress_table()
    if warning:
        print("Note: " + warning)
    icon = {SOLVED: "✅", ATTEMPTED: "❌", NOT_STARTED: "·"}
    width = max([len(name) for _, name, _ in rows] + [8])
    print(f"{'lesson':<7}{'exercise':<{width + 2}}state")
    for lesson, name, state in rows:
        print(f"{lesson:<7}{name:<{width + 2}}{icon[state]} {state}")
    done = sum(state == SOLVED for *_, state in rows)
    print(f"{done} of {len(rows)} exercises solved. (Stored only on this machine: {progress_file()})")
