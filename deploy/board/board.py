"""The class board: every student × every exercise, and the hints the room sees now.

Reads only the students' verdict records (course_lib.classroom.records: per exercise the
last verdict, attempts, and the hint shown when wrong — never code), one folder per
student: RECORDS/<student>/progress.json. Pure functions: records in, HTML out, so the
page is tested and timed without a hub (benchmarks/class_board.py); the hub service that
serves it to the instructor alone is to come (issue 20 §3).
"""
from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# Marks every font has (a projector's browser may have no emoji font), with a colour each.
SOLVED, WRONG, WAITING = "✓", "✗", "·"
_CLASS = {SOLVED: "ok", WRONG: "wrong", WAITING: "wait"}
# What each mark means, in words: read by a screen reader, never only a colour.
_WORDS = {SOLVED: "solved", WRONG: "last check wrong", WAITING: "not yet"}


@dataclass
class Board:
    """What the page shows: cells[student][exercise] = (icon, attempts); hints[exercise] =
    Counter of the hints students see now (their last check was wrong)."""

    students: list[str]
    exercises: list[tuple[str, str]]                 # (lesson, exercise), in course order
    cells: dict[str, dict[str, tuple[str, int]]]
    hints: dict[str, Counter] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)


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
    if last == "ok":
        return SOLVED, attempts
    if last in ("wrong", "crashed"):
        return WRONG, attempts
    return (SOLVED, attempts) if entry.get("solved") else (WAITING, 0)


def build(records: dict[str, dict], exercises: dict[str, str], lesson: str | None = None,
          unreadable=()) -> Board:
    """The board for `exercises` ({name: lesson}), only `lesson`'s when given."""
    chosen = sorted((les, name) for name, les in exercises.items() if lesson in (None, les))
    students = sorted(records)
    cells = {s: {name: _cell(records[s].get(name)) for _, name in chosen} for s in students}
    hints: dict[str, Counter] = {}
    for _, name in chosen:
        seen = Counter(records[s][name].get("hint", "") for s in students
                       if records[s].get(name, {}).get("last") == "wrong")
        if seen:
            hints[name] = seen
    return Board(students, chosen, cells, hints, sorted(unreadable))


def _cell_html(icon: str, checks: int) -> str:
    """One cell: the mark (hidden from screen readers) and its meaning in words."""
    said = _WORDS[icon] + (f", {checks} check{'s' if checks != 1 else ''}" if checks else "")
    shown = f'<small aria-hidden="true">{checks}</small>' if checks else ""
    return (f'<td class="c {_CLASS[icon]}"><span aria-hidden="true">{icon}</span>'
            f'<span class="sr">{said}</span>{shown}</td>')


def render(board: Board, lessons: list[str], lesson: str | None = None,
           refresh_s: int = 5) -> str:
    """The page: a lesson filter, the grid, then each exercise's hints by count."""
    e = html.escape
    options = "".join(f'<option value="{e(les)}"{" selected" if les == lesson else ""}>'
                      f'lesson {e(les)}</option>' for les in lessons)
    head = "".join(f'<th scope="col" title="lesson {e(les)}">{e(name)}</th>' for les, name in board.exercises)
    rows = []
    for s in board.students:
        cells = "".join(_cell_html(icon, n) for icon, n in (board.cells[s][name] for _, name in board.exercises))
        rows.append(f'<tr><th scope="row">{e(s)}</th>{cells}</tr>')
    hint_items = []
    for _, name in board.exercises:
        for hint, count in board.hints.get(name, Counter()).most_common():
            hint_items.append(f"<li><b>{count} ×</b> <code>{e(name)}</code>: {e(hint) or '(no hint)'}</li>")
    unreadable = (f'<p class="warn">Records unreadable: {e(", ".join(board.unreadable))}</p>'
                  if board.unreadable else "")
    # WCAG 2.2.1: a page that refreshes itself must let the reader stop it (a <meta http-equiv=
    # "refresh"> cannot be stopped: axe-core's meta-refresh rule); the box turns it off.
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Class board</title>
<style>body{{font:14px system-ui,sans-serif;margin:1em}}table{{border-collapse:collapse}}
th,td{{border:1px solid #767676;padding:2px 6px}}td.c{{text-align:center;font-weight:bold}}
small{{color:#333;margin-left:2px;font-weight:normal}}.ok{{background:#c8f0c8}}.wrong{{background:#f6c6c6}}
.wait{{color:#555}}.sr{{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}}
thead th{{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal}}.warn{{color:#a00}}</style>
</head><body><h1>Class board</h1>
<form><label for="lesson">Lesson</label> <select id="lesson" name="lesson" onchange="this.form.submit()">
<option value="">all lessons</option>{options}</select>
<label><input type="checkbox" id="auto-refresh" checked> refresh every {refresh_s} s</label></form>
<script>
(function () {{
  var box = document.getElementById("auto-refresh");
  box.checked = sessionStorage.getItem("board-refresh") !== "off";
  box.addEventListener("change", function () {{ sessionStorage.setItem("board-refresh", box.checked ? "on" : "off"); }});
  setInterval(function () {{ if (box.checked) location.reload(); }}, {refresh_s * 1000});
}})();
</script>
<p>{len(board.students)} students · <span class="ok">{SOLVED} solved</span> ·
<span class="wrong">{WRONG} last check wrong</span> · {WAITING} not yet
(small number: checks run)</p>{unreadable}
<table><caption>Each student's last check per exercise</caption>
<thead><tr><th scope="col">student</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>
<h2>Hints students see now</h2><ul>{"".join(hint_items) or "<li>none</li>"}</ul>
</body></html>"""


def exercise_lessons() -> dict[str, str]:
    """{exercise: lesson} from the checkers' registry."""
    import course_lib.exercises  # noqa: F401  (fills the registry)
    from course_lib.exercises.framework import REGISTRY

    return {name: ex.lesson for name, ex in REGISTRY.items()}
