"""The class board: every student × every exercise, and the hints the room sees now.

Reads only the students' verdict records (course_lib.classroom.records: per exercise the
last verdict, attempts, and the hint shown when wrong — never code), one folder per
student: RECORDS/<student>/progress.json. Pure functions: records in, HTML out, so the
page is tested and timed without a hub (benchmarks/class_board.py); service.py serves it
to the instructor alone. What a teacher needs in class is who is stuck now: students with
an exercise whose last check was wrong and that failed STUCK_FAILS times in the last
STUCK_WINDOW_S seconds come first, with how long ago each checked last.
"""
from __future__ import annotations

import html
import json
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# Marks every font has (a projector's browser may have no emoji font), with a colour each.
SOLVED, HELPED, WRONG, WAITING = "✓", "✓*", "✗", "·"
_CLASS = {SOLVED: "ok", HELPED: "helped", WRONG: "wrong", WAITING: "wait"}
# What each mark means, in words: read by a screen reader, never only a colour.
_WORDS = {SOLVED: "solved", HELPED: "solved after seeing the solution", WRONG: "last check wrong",
          WAITING: "not yet"}


# Who is stuck: the last check was wrong and STUCK_FAILS wrong checks of that exercise
# fell within the last STUCK_WINDOW_S seconds (the records keep the times of the last few).
STUCK_FAILS, STUCK_WINDOW_S = 3, 600


@dataclass
class Board:
    """What the page shows: cells[student][exercise] = (icon, attempts); hints[exercise] =
    Counter of the hints students see now (their last check was wrong); last[student] =
    time of their last check (None: none yet); stuck[student] = [(exercise, wrong checks
    in the window, seconds since the first of them)], stuck students first in `students`."""

    students: list[str]
    exercises: list[tuple[str, str]]                 # (lesson, exercise), in lesson order
    cells: dict[str, dict[str, tuple[str, int]]]
    hints: dict[str, Counter] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    numbers: dict[str, str] = field(default_factory=dict)      # exercise -> "2.1"
    last: dict[str, float | None] = field(default_factory=dict)
    stuck: dict[str, list] = field(default_factory=dict)
    now: float = 0.0


def read_records(records: Path) -> tuple[dict[str, dict], list[str]]:
    """{student: their records} from RECORDS/<student>/progress.json; students whose file is
    unreadable or damaged are listed apart (shown, never guessed)."""
    found, unreadable = {}, []
    if not Path(records).is_dir():               # no student has checked anything yet
        return found, unreadable
    for folder in sorted(p for p in Path(records).iterdir() if p.is_dir()):
        path = folder / "progress.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            found[folder.name] = data
        except (OSError, ValueError):
            unreadable.append(folder.name)
    return found, unreadable


def _cell(entry: dict | None) -> tuple[str, int]:
    """(icon, checks run): the last check decides; a stub checked ("todo") is not yet."""
    entry = entry or {}
    last, attempts = entry.get("last"), int(entry.get("attempts", 0))
    # show_solution() before the first correct check (course_lib.classroom.records.state).
    seen, solved_at = entry.get("solution_seen"), entry.get("solved_time")
    solved = HELPED if seen is not None and solved_at is not None and seen < solved_at else SOLVED
    if last == "ok":
        return solved, attempts
    if last in ("wrong", "crashed"):
        return WRONG, attempts
    return (solved, attempts) if entry.get("solved") else (WAITING, 0)


def _stuck(entry: dict, now: float):
    """(wrong checks in the window, seconds since the first of them) if stuck, else None."""
    if entry.get("last") not in ("wrong", "crashed"):
        return None
    recent = [t for t in entry.get("wrong_times", [])
              if isinstance(t, (int, float)) and 0 <= now - t <= STUCK_WINDOW_S]
    return (len(recent), now - min(recent)) if len(recent) >= STUCK_FAILS else None


def _number_key(number: str):
    parts = [int(p) for p in (number or "").split(".") if p.isdigit()]
    return parts or [10**6]


def _last_check(entries: dict) -> float | None:
    times = [e.get("time") for e in entries.values() if isinstance(e, dict)]
    times = [t for t in times if isinstance(t, (int, float))]
    return max(times) if times else None


def build(records: dict[str, dict], exercises: dict[str, str], lesson: str | None = None,
          unreadable=(), numbers: dict[str, str] | None = None, now: float | None = None,
          sort: str = "stuck") -> Board:
    """The board for `exercises` ({name: lesson}), only `lesson`'s when given, in lesson
    order (`numbers`: {name: "2.1"}, as the lessons number them). Students stuck first,
    the longest stuck at the top (sort="stuck"), or by name (sort="name")."""
    numbers = dict(numbers or {})
    now = time.time() if now is None else now
    chosen = sorted(((les, name) for name, les in exercises.items() if lesson in (None, les)),
                    key=lambda item: (item[0], _number_key(numbers.get(item[1], "")), item[1]))
    cells = {s: {name: _cell(records[s].get(name)) for _, name in chosen} for s in records}
    hints: dict[str, Counter] = {}
    for _, name in chosen:
        seen = Counter(records[s][name].get("hint", "") for s in records
                       if records[s].get(name, {}).get("last") == "wrong")
        if seen:
            hints[name] = seen
    last = {s: _last_check(records[s]) for s in records}
    stuck = {}
    for s in records:
        hits = [(name, _stuck(records[s].get(name) or {}, now)) for _, name in chosen]
        stuck[s] = [(name, *hit) for name, hit in hits if hit is not None]
    students = sorted(records)
    if sort == "stuck":
        students.sort(key=lambda s: (not stuck[s], -max((h[2] for h in stuck[s]), default=0)))
    return Board(students, chosen, cells, hints, sorted(unreadable), numbers, last, stuck, now)


def read_disk(records: Path) -> dict[str, int]:
    """{student: bytes in their folder}, as the hub last measured (RECORDS/disk.json)."""
    try:
        sizes = json.loads((Path(records) / "disk.json").read_text(encoding="utf-8"))
        return {s: int(v["bytes"]) for s, v in sizes.items()}
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def size_words(n: int) -> str:
    """'312 MB', '2.4 GB'."""
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"


def _folder(disk: dict[str, int] | None, share: int | None, student: str) -> str:
    if disk is None:
        return ""
    if student not in disk:
        return '<td class="ago">not measured</td>'
    size = disk[student]
    if share and size > share:
        return (f'<td class="ago stuck"><b>{size_words(size)}</b>, over the '
                f'{size_words(share)} share</td>')
    return f'<td class="ago">{size_words(size)}</td>'


def _cell_html(icon: str, checks: int) -> str:
    """One cell: the mark (hidden from screen readers) and its meaning in words."""
    said = _WORDS[icon] + (f", {checks} check{'s' if checks != 1 else ''}" if checks else "")
    shown = f'<small aria-hidden="true">{checks}</small>' if checks else ""
    return (f'<td class="c {_CLASS[icon]}"><span aria-hidden="true">{icon}</span>'
            f'<span class="sr">{said}</span>{shown}</td>')


def ago(seconds: float | None) -> str:
    """'12 s ago', '4 min ago', '1 h 5 min ago', 'no check yet'."""
    if seconds is None:
        return "no check yet"
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min ago"


def hint_html(hint: str) -> str:
    """A hint as the learner reads it: text, with `code` in code type (escaped first)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(hint))


def _status(board: Board, student: str) -> str:
    hits = board.stuck.get(student) or []
    if not hits:
        return '<td class="status">no</td>'
    said = "; ".join(f"{html.escape(board.numbers.get(name, '?'))} {html.escape(name)}: {n} wrong "
                     f"in {max(1, round(age / 60))} min" for name, n, age in hits)
    return f'<td class="status stuck"><b>stuck</b>: {said}</td>'


def refresh_control(refresh_s: int = 5) -> str:
    """The page reloads itself every `refresh_s` s, and a box turns that off (WCAG 2.2.1: a page
    that refreshes itself must let the reader stop it; a <meta http-equiv="refresh"> cannot be
    stopped — axe-core's meta-refresh rule). The choice holds across the reloads and the pages."""
    return f"""<label><input type="checkbox" id="auto-refresh" checked> refresh every {refresh_s} s</label>
<script>
(function () {{
  var box = document.getElementById("auto-refresh");
  box.checked = sessionStorage.getItem("board-refresh") !== "off";
  box.addEventListener("change", function () {{ sessionStorage.setItem("board-refresh", box.checked ? "on" : "off"); }});
  setInterval(function () {{ if (box.checked) location.reload(); }}, {refresh_s * 1000});
}})();
</script>"""


def render(board: Board, lessons: list[str], lesson: str | None = None,
           refresh_s: int = 5, sort: str = "stuck", disk: dict[str, int] | None = None,
           share: int | None = None) -> str:
    """The page: a lesson filter, the grid (stuck students first), then each exercise's hints.
    With `disk` ({student: bytes}), a column of folder sizes, flagged past `share` bytes."""
    e = html.escape
    options = "".join(f'<option value="{e(les)}"{" selected" if les == lesson else ""}>'
                      f'lesson {e(les)}</option>' for les in lessons)
    head = "".join(f'<th scope="col" class="x" title="lesson {e(les)}">{e(board.numbers.get(name, ""))} {e(name)}</th>'
                   for les, name in board.exercises)
    rows = []
    for s in board.students:
        cells = "".join(_cell_html(icon, n) for icon, n in (board.cells[s][name] for _, name in board.exercises))
        since = None if board.last.get(s) is None else board.now - board.last[s]
        rows.append(f'<tr><th scope="row">{e(s)}</th>{_status(board, s)}<td class="ago">{ago(since)}</td>'
                    f'{_folder(disk, share, s)}{cells}</tr>')
    hint_items = []
    for _, name in board.exercises:
        for hint, count in board.hints.get(name, Counter()).most_common():
            number = f"{e(board.numbers[name])} " if board.numbers.get(name) else ""
            hint_items.append(f"<li><b>{count} ×</b> {number}<code>{e(name)}</code>: "
                              f"{hint_html(hint) or '(no hint)'}</li>")
    unreadable = (f'<p class="warn">Records unreadable: {e(", ".join(board.unreadable))}</p>'
                  if board.unreadable else "")
    n_stuck = sum(1 for s in board.students if board.stuck.get(s))
    folder_head = "" if disk is None else '<th scope="col">folder size</th>'
    over = [] if disk is None or not share else [s for s in board.students if disk.get(s, 0) > share]
    if over:
        unreadable += (f'<p class="warn">Over the {size_words(share)} folder share: '
                       f'{e(", ".join(over))}</p>')
    keep = f"&amp;lesson={e(lesson)}" if lesson else ""
    order = (f'sorted stuck first · <a href="?sort=name{keep}">sort by name</a>' if sort == "stuck"
             else f'sorted by name · <a href="?sort=stuck{keep}">sort stuck first</a>')
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Class board</title>
<style>body{{font:14px system-ui,sans-serif;margin:1em}}table{{border-collapse:collapse}}
th,td{{border:1px solid #767676;padding:2px 6px}}td.c{{text-align:center;font-weight:bold}}
small{{color:#333;margin-left:2px;font-weight:normal}}.ok{{background:#c8f0c8}}.helped{{background:#dde8f6}}.wrong{{background:#f6c6c6}}
.wait{{color:#555}}.sr{{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}}
td.stuck{{background:#fde2c8}}td.status,td.ago{{font-size:90%;white-space:nowrap}}
thead th{{font-weight:normal}}thead th.x{{writing-mode:vertical-rl;transform:rotate(180deg)}}.warn{{color:#a00}}</style>
</head><body><h1>Class board</h1>
<form><label for="lesson">Lesson</label> <select id="lesson" name="lesson" onchange="this.form.submit()">
<option value="">all lessons</option>{options}</select><input type="hidden" name="sort" value="{e(sort)}">
{refresh_control(refresh_s)}</form>
<p>{len(board.students)} students, <strong>{n_stuck} stuck</strong> · <span class="ok">{SOLVED} solved</span> ·
<span class="helped">{HELPED} solved after seeing the solution</span> ·
<span class="wrong">{WRONG} last check wrong</span> · {WAITING} not yet
(small number: checks run) · {order}</p>
<p><b>Stuck</b> means: the last check of an exercise was wrong, and {STUCK_FAILS} or more of its
checks were wrong in the last {STUCK_WINDOW_S // 60} minutes.</p>{unreadable}
<table><caption>Each student's last check per exercise, numbered as in the lessons</caption>
<thead><tr><th scope="col">student</th><th scope="col">stuck?</th><th scope="col">last check</th>{folder_head}{head}</tr></thead>
<tbody>{"".join(rows)}</tbody></table>
<h2>Hints students see now</h2><ul>{"".join(hint_items) or "<li>none</li>"}</ul>
<h2>Concept checks</h2><p><a href="?view=votes{keep}">The class votes</a>: each question's
answers in the room, first vote and latest, without names (for the projector).</p>
</body></html>"""


def exercise_numbers() -> dict[str, str]:
    """{exercise: "2.1"}: the numbers the lessons give them ("Exercise 2.1 — …" above the
    cell that calls its check), read from the notebooks by tools/exercise_list.py."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import exercise_list

    return {info.name: info.number for info in exercise_list.collect() if info.number != "?"}


def exercise_lessons() -> dict[str, str]:
    """{exercise: lesson} from the checkers' registry."""
    import course_lib.exercises  # noqa: F401  (fills the registry)
    from course_lib.exercises.framework import REGISTRY

    return {name: ex.lesson for name, ex in REGISTRY.items()}
