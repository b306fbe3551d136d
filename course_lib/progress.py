"""Local record of exercise verdicts, and the table that shows it.

Each check writes its latest verdict to a small JSON file in the user's
directory (`~/.transformers-course/progress.json`, or $COURSE_PROGRESS_FILE).
Nothing leaves the machine. A corrupt file is set aside, not trusted.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

SOLVED, ATTEMPTED, NOT_STARTED = "solved", "attempted", "not started"


def progress_file() -> Path:
    env = os.environ.get("COURSE_PROGRESS_FILE")
    return Path(env) if env else Path.home() / ".transformers-course" / "progress.json"


def _load(path: Path) -> tuple[dict, str | None]:
    """(records, warning). A corrupt file is moved aside and an empty record returned."""
    if not path.exists():
        return {}, None
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise ValueError("unexpected structure")
        return data, None
    except (ValueError, OSError) as e:
        aside = path.with_name(f"{path.stem}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}.json")
        try:
            path.replace(aside)
            where = f"moved to {aside}"
        except OSError:
            where = "left in place"
        return {}, (f"the progress file {path} was unreadable ({e}); it was {where} "
                    "and progress starts afresh")


def record(exercise: str, lesson: str, status: str) -> None:
    """Store the latest verdict of `exercise`. Never raises: progress is a convenience."""
    path = progress_file()
    try:
        data, _ = _load(path)
        entry = data.get(exercise, {"lesson": lesson, "attempts": 0})
        entry.update(lesson=lesson, last=status, attempts=entry.get("attempts", 0) + 1)
        entry["solved"] = entry.get("solved", False) or status == "ok"
        data[exercise] = entry
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)                  # atomic: a crash never leaves half a file
    except OSError:
        pass


def progress_table(exercises: dict | None = None) -> tuple[list[tuple[str, str, str]], str | None]:
    """Rows (lesson, exercise, state) for every known exercise, and a warning if any.

    state: "solved", "attempted" (checked but never passed — a stub counts as not
    started) or "not started".
    """
    if exercises is None:
        from .exercises.framework import REGISTRY
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
