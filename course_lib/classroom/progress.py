"""Every exercise and its state — solved, solved after seeing the solution, attempted, not
started — as a table (`show_progress()`).

The verdicts come from the file `course_lib.classroom.records` keeps; the list of exercises
from the checkers' registry (`course_lib.exercises`).
"""
from __future__ import annotations

from .records import ATTEMPTED, NOT_STARTED, SOLVED, SOLVED_AFTER_SOLUTION, _load, progress_file, state


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


def show_progress() -> None:
    """Print a table of every lesson's exercises and their state."""
    rows, warning = progress_table()
    if warning:
        print("Note: " + warning)
    # A mark and the state in words: never a colour or a symbol alone.
    icon = {SOLVED: "✅", SOLVED_AFTER_SOLUTION: "☑", ATTEMPTED: "❌", NOT_STARTED: "·"}
    width = max([len(name) for _, name, _ in rows] + [8])
    print(f"{'lesson':<7}{'exercise':<{width + 2}}state")
    for lesson, name, st in rows:
        print(f"{lesson:<7}{name:<{width + 2}}{icon[st]} {st}")
    done = sum(st == SOLVED for *_, st in rows)
    helped = sum(st == SOLVED_AFTER_SOLUTION for *_, st in rows)
    print(f"{done} of {len(rows)} exercises solved on your own, {helped} after seeing the solution. "
          f"(Stored only on this machine: {progress_file()})")
