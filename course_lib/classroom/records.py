"""Where exercise verdicts are kept: one small JSON file on this machine.

Each check writes its latest verdict — and, when wrong, the hint it showed — to
`~/.transformers-course/progress.json` (or $COURSE_PROGRESS_FILE). Nothing leaves the machine;
on the class hub the file sits where the instructor's class board may read it (never the code). A corrupt file is set aside, not trusted.
Concept checks (course_lib.exercises.concepts) are kept apart, under the key "concept_checks":
{"2.q1": {"lesson": "02", "first": "b", "first_right": false, "first_time": …, "latest": "c",
"right": true, "attempts": 2, "time": …}} — the first answer stays as it was, the latest
follows each new answer ("first"/"latest": an option's letter or the number as typed).
`course_lib.classroom.progress` turns the file into the table `show_progress()` prints; the two
are apart so that the checkers (which record) and the table (which lists the checkers) do not
import each other.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path


SOLVED, ATTEMPTED, NOT_STARTED = "solved", "attempted", "not started"
SOLVED_AFTER_SOLUTION = "solved after seeing the solution"


def state(entry: dict | None) -> str:
    """An exercise's state from its record: solved, solved after seeing the solution,
    attempted (a check of the learner's code ran but never passed, or they looked at the
    solution and have not solved it yet) or not started (a stub's check does not count)."""
    entry = entry or {}
    if entry.get("solved"):
        seen, solved = entry.get("solution_seen"), entry.get("solved_time")
        # A solution looked at before the first correct check: the check no longer says
        # what the learner could do alone. Looked at after solving: still solved.
        # (A record from before solved_time was kept: solved first, as far as we know.)
        if seen is not None and solved is not None and seen < solved:
            return SOLVED_AFTER_SOLUTION
        return SOLVED
    if entry.get("last") in (None, "todo") and entry.get("solution_seen") is None:
        return NOT_STARTED
    return ATTEMPTED


def progress_file() -> Path:
    env = os.environ.get("COURSE_PROGRESS_FILE")
    return Path(env) if env else Path.home() / ".transformers-course" / "progress.json"


def _load(path: Path) -> tuple[dict, str | None]:
    """(records, warning). A corrupt file is moved aside and an empty record returned."""
    if not path.exists():
        return {}, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
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


WRONG_TIMES_KEPT = 10       # the times of an exercise's last wrong checks (class board)


def record(exercise: str, lesson: str, status: str, hint: str = "") -> None:
    """Store the latest verdict of `exercise`, with the hint it showed when wrong (never the
    learner's code: the class board counts hints). Never raises: progress is a convenience."""
    path = progress_file()
    try:
        data, _ = _load(path)
        entry = data.get(exercise, {"lesson": lesson, "attempts": 0})
        now = round(time.time(), 1)
        entry.update(lesson=lesson, last=status, attempts=entry.get("attempts", 0) + 1,
                     hint=hint if status == "wrong" else "", time=now)
        if status in ("wrong", "crashed"):     # the board's "stuck": several wrong lately
            entry["wrong_times"] = (entry.get("wrong_times", []) + [now])[-WRONG_TIMES_KEPT:]
        if status == "ok" and not entry.get("solved"):
            entry["solved_time"] = time.time()     # unrounded: ordered against solution_seen
        entry["solved"] = entry.get("solved", False) or status == "ok"
        data[exercise] = entry
        _save(path, data)
    except OSError:
        pass


def record_solution_seen(exercise: str, lesson: str) -> None:
    """Store that the learner looked at `exercise`'s solution (the first time is kept).
    Never raises."""
    path = progress_file()
    try:
        data, _ = _load(path)
        entry = data.get(exercise, {"lesson": lesson, "attempts": 0})
        entry.setdefault("lesson", lesson)
        entry.setdefault("solution_seen", time.time())   # unrounded: ordered against solved_time
        data[exercise] = entry
        _save(path, data)
    except OSError:
        pass


CONCEPTS = "concept_checks"      # the key of the concept checks' answers (never an exercise)


def record_answer(question_id: str, lesson: str, answer: str, right: bool) -> bool:
    """Store an answer to concept check `question_id` ("2.q1") of `lesson` ("02"): the first
    answer is kept as first (with whether it was right), the latest and the number of answers
    follow every new one. Returns whether it was stored; never raises (progress is a
    convenience), and refuses quietly what is not an answer."""
    if not (isinstance(question_id, str) and isinstance(lesson, str) and isinstance(answer, str)
            and isinstance(right, bool)):
        return False
    path = progress_file()
    try:
        data, _ = _load(path)
        answers = data.setdefault(CONCEPTS, {})
        now = round(time.time(), 1)
        entry = answers.get(question_id)
        if not isinstance(entry, dict) or "first" not in entry:
            entry = {"lesson": lesson, "first": answer, "first_right": right, "first_time": now,
                     "attempts": 0}
        entry.update(lesson=lesson, latest=answer, right=right, time=now,
                     attempts=int(entry.get("attempts", 0)) + 1)
        answers[question_id] = entry
        _save(path, data)
        return True
    except (OSError, TypeError, ValueError):
        return False


def concept_answers(data: dict | None = None) -> dict:
    """{question id: entry} from the progress file (or from `data`, a loaded file)."""
    if data is None:
        data, _ = _load(progress_file())
    found = data.get(CONCEPTS, {})
    return {k: v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}


def _save(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)                      # atomic: a crash never leaves half a file
