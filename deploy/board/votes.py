"""The class votes: each concept check's answers in the room, first vote and latest (issue 42 §3).

A learner's answers are kept in their progress file under "concept_checks" (written by
course_lib.classroom.records): {"2.q1": {"first": "b", "latest": "c", ...}} — an option's
letter, or for a number question the number as text; the first answer is never
overwritten. This module turns every student's file into one distribution per question,
for peer instruction: vote, show the room, discuss, vote again, see the shift.

The page names no student unless asked (`names=True`): it is made to be projected. It can
also hide which answer is right (`show_answer=False`), for showing the first vote before the
discussion. Every count is printed; the bars are decoration, hidden from screen readers.
Pure functions, as board.py: records in, HTML out.
"""
from __future__ import annotations

import html
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlencode

KEY = "concept_checks"         # the progress file's top-level key for concept answers
MAX_VALUES = 8                 # a number question: the values most given; the rest grouped
OTHER, NOT_A_NUMBER, OTHER_VALUES = "other", "not a number", "other values"


@dataclass
class Row:
    """One line of a question's table: an option (key "b") or, for a number question, a
    value given ("16"). `right`: True, False, or None when it cannot be said (grouped)."""

    key: str
    label: str
    right: bool | None


@dataclass
class Tally:
    """One question's votes: first[key] and latest[key] = how many students; who[round][key] =
    their names (shown only when asked); answered = students with a vote; changed = those
    whose latest vote differs from their first."""

    question: object                            # a course_lib concepts Question
    rows: list[Row]
    first: Counter
    latest: Counter
    who: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    answered: int = 0
    changed: int = 0
    students: int = 0
    right: tuple[int, int] = (0, 0)             # right at the first vote, right at the latest


def answers(records: dict[str, dict]) -> dict[str, dict[str, tuple[str, str]]]:
    """{question id: {student: (first, latest)}}, in one pass over the records; an answer
    that is not readable is left out. A record with only one of the two counts it for both."""
    found: dict[str, dict[str, tuple[str, str]]] = {}
    for student, data in records.items():
        checks = data.get(KEY) if isinstance(data, dict) else None
        if not isinstance(checks, dict):
            continue
        for question_id, entry in checks.items():
            if not isinstance(entry, dict):
                continue
            first, latest = entry.get("first"), entry.get("latest")
            first, latest = (first if first is not None else latest), (latest if latest is not None else first)
            if first is not None:
                found.setdefault(question_id, {})[student] = (str(first).strip(), str(latest).strip())
    return found


def _value(text: str) -> float | None:
    try:
        value = float(text.replace(",", "."))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _number_key(text: str) -> str:
    value = _value(text)
    return NOT_A_NUMBER if value is None else f"{value:g}"


def _is_number(question) -> bool:
    return not getattr(question, "options", ())


def tally(records: dict[str, dict], question, given: dict | None = None) -> Tally:
    """The distributions of one question over every student in `records` (`given`: its
    entry of answers(records), when already read)."""
    given = answers(records).get(question.id, {}) if given is None else given
    if _is_number(question):
        key, is_right = _number_key, (lambda text: question.judge(text)[0])
    else:
        letters = [question.option_key(i) for i in range(len(question.options))]
        right_letter = question.right_key()
        key = lambda text: text if text in letters else OTHER  # noqa: E731
        is_right = right_letter.__eq__
    first, latest = Counter(), Counter()
    who: dict[str, dict[str, list[str]]] = {"first": {}, "latest": {}}
    changed, right = 0, [0, 0]
    for student in sorted(given):
        said_first, said_latest = given[student]
        kf, kl = key(said_first), key(said_latest)
        first[kf] += 1
        latest[kl] += 1
        who["first"].setdefault(kf, []).append(student)
        who["latest"].setdefault(kl, []).append(student)
        changed += kf != kl
        right[0] += is_right(said_first)
        right[1] += is_right(said_latest)
    if _is_number(question):
        rows = _number_rows(question, first, latest, who)
    else:
        rows = [Row(k, _plain(o.text), bool(o.right)) for k, o in zip(letters, question.options)]
        if first[OTHER] or latest[OTHER]:        # a letter the question no longer has
            rows.append(Row(OTHER, "an option this question does not have (now)", False))
    return Tally(question, rows, first, latest, who, len(given), changed, len(records), tuple(right))


def _number_rows(question, first: Counter, latest: Counter, who) -> list[Row]:
    """The values given, by value (the MAX_VALUES most given; the others in one row)."""
    both = first + latest
    values = [k for k in both if k != NOT_A_NUMBER]
    kept = sorted(values, key=lambda k: (-both[k], float(k)))[:MAX_VALUES]
    rows = [Row(k, k, abs(float(k) - question.answer) <= question.tolerance)
            for k in sorted(kept, key=float)]
    rest = [k for k in values if k not in kept]
    if rest:                                     # fold the long tail into one row
        for votes in (first, latest):
            votes[OTHER_VALUES] = sum(votes.pop(k, 0) for k in rest)
        for names in who.values():
            names[OTHER_VALUES] = sorted(n for k in rest for n in names.pop(k, []))
        rows.append(Row(OTHER_VALUES, f"{OTHER_VALUES} ({len(rest)} different)", None))
    if first[NOT_A_NUMBER] or latest[NOT_A_NUMBER]:
        rows.append(Row(NOT_A_NUMBER, NOT_A_NUMBER, False))
    return rows


def tallies(records: dict[str, dict], questions, lesson: str | None = None,
            question_id: str | None = None) -> list[Tally]:
    """One Tally per question, in lesson order; only `question_id`'s, or `lesson`'s, when given."""
    chosen = [q for q in questions if (question_id and q.id == question_id)
              or (not question_id and lesson in (None, q.lesson))]
    if question_id and not chosen:
        raise ValueError(f"no concept check {question_id!r} among the {len(questions)} questions "
                         "given (ids look like '2.q1')")
    given = answers(records)
    return [tally(records, q, given.get(q.id, {})) for q in chosen]


# ---------------------------------------------------------------- the page
# A question's text is Markdown with $…$ math; the board has no MathJax (offline, and
# read aloud), so the small TeX subset the questions use is written in Unicode.
_TEX = {r"\top": "ᵀ", r"\cdot": "·", r"\times": "×", r"\le": "≤", r"\ge": "≥", r"\ne": "≠",
        r"\approx": "≈", r"\to": "→", r"\infty": "∞", r"\sum": "Σ", r"\ell": "ℓ", r"\odot": "⊙",
        r"\in": "∈", r"\dots": "…", r"\ldots": "…", r"\cdots": "⋯", r"\varepsilon": "ε",
        r"\,": " ", r"\;": " ", r"\!": "", r"\{": "{", r"\}": "}"}


def _macro(name: str) -> str:
    """One TeX macro in Unicode: the table, else a Greek letter (\\rho → ρ, \\Pi → Π), else its name."""
    if name in _TEX:
        return _TEX[name]
    word = name[1:]
    try:
        return unicodedata.lookup(f"GREEK {'CAPITAL' if word[0].isupper() else 'SMALL'} LETTER {word.upper()}")
    except (KeyError, IndexError):
        return word                                   # \log, \exp, \max: the word itself


def _plain(text: str) -> str:
    """Markdown + $math$ → plain text: '$\\sqrt{d_k}$' → '√(d_k)', '$K^\\top$' → 'Kᵀ',
    '$h_{t-1}$' → 'h_(t-1)'."""
    def math_(m):
        s = m.group(1)
        s = re.sub(r"\\(?:operatorname|mathrm|text|mathbf|mathit)\{([^{}]*)\}", r"\1", s)
        s = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", s)
        s = re.sub(r"\\sqrt\{([^{}]*)\}", r"√(\1)", s)
        s = re.sub(r"\\[A-Za-z]+|\\[,;!{}]", lambda t: _macro(t.group(0)), s)
        s = re.sub(r"\^\{?ᵀ\}?", "ᵀ", s)
        # A sub- or superscript of one word stays as it is (d_k, d_model); one with an
        # operator in it keeps its extent in parentheses (h_(t-1)).
        s = re.sub(r"([_^])\{(\w+)\}", r"\1\2", s)
        s = re.sub(r"([_^])\{([^{}]*)\}", r"\1(\2)", s)
        return s
    text = re.sub(r"\$\$?([^$]+)\$\$?", math_, text)
    return re.sub(r"  +", " ", re.sub(r"\*\*|`", "", text)).strip()


def _url(**params) -> str:
    """A link to this page with these parameters (empty ones left out), escaped for HTML."""
    return html.escape("?" + urlencode({k: v for k, v in params.items() if v}))


def _count(votes: Counter, key: str, total: int, names: list[str] | None, peak: int) -> str:
    """A cell: the count and its share printed, a bar beside (decoration only)."""
    n = votes[key]
    share = f"{round(100 * n / total)} %" if total else "–"
    width = 8 * n / peak if peak else 0
    people = (f'<br><span class="names">{html.escape(", ".join(names))}</span>' if names else "")
    return (f'<td class="n"><span class="bar" style="width:{width:.2f}em" aria-hidden="true"></span>'
            f'<b>{n}</b> <span class="pct">({share})</span>{people}</td>')


def _said(t: Tally, show_answer: bool) -> str:
    """The table in one sentence: how many were right at the first vote and now, the shift."""
    if not t.answered:
        return "No votes yet."
    missing = t.students - t.answered
    tail = f" {t.changed} of {t.answered} changed their answer since their first vote."
    tail += f" {missing} of {t.students} students have not answered." if missing else ""
    if show_answer:
        first, latest = t.right
        return (f"Right at the first vote: {first} of {t.answered} ({round(100 * first / t.answered)} %); "
                f"at the latest: {latest} of {t.answered} ({round(100 * latest / t.answered)} %).{tail}")
    top = max(t.rows, key=lambda r: t.latest[r.key])
    return (f"Most given now: {html.escape(top.key)} ({t.latest[top.key]} of {t.answered}); the right answer "
            f"is hidden.{tail}")


def _table(t: Tally, names: bool, show_answer: bool) -> str:
    e, q = html.escape, t.question
    peak = max([t.first[r.key] for r in t.rows] + [t.latest[r.key] for r in t.rows] + [1])
    body = []
    for r in t.rows:
        label = e(r.label) if _is_number(q) or r.key in (OTHER,) else f"{e(r.key)}. {e(r.label)}"
        mark, cls = "", ""
        if show_answer and r.right:
            mark, cls = (' <strong class="mark"><span aria-hidden="true">✓</span> right answer</strong>',
                         ' class="right"')
        elif show_answer and _is_number(q) and r.right is False and r.key != NOT_A_NUMBER:
            mark = f' <span class="side">({"too low" if float(r.key) < q.answer else "too high"})</span>'
        cells = "".join(_count(votes, r.key, t.answered, t.who[round_].get(r.key) if names else None, peak)
                        for round_, votes in (("first", t.first), ("latest", t.latest)))
        body.append(f'<tr{cls}><th scope="row">{label}{mark}</th>{cells}</tr>')
    answered = f"{t.answered} of {t.students}"
    what = ("value given" if _is_number(q) else "option")
    if _is_number(q) and show_answer:
        what += f" (right: {q.answer:g} ± {q.tolerance:g})"
    return (f'<table><caption>{e(q.id)}: votes, first and latest</caption>'
            f'<thead><tr><th scope="col">{what}</th><th scope="col">first vote</th>'
            f'<th scope="col">latest vote</th></tr></thead><tbody>{"".join(body)}</tbody>'
            f'<tfoot><tr><th scope="row">answered</th><td class="n">{answered}</td>'
            f'<td class="n">{answered}</td></tr></tfoot></table>')


def render_votes(results: list[Tally], questions, students: int, lesson: str | None = None,
                 question_id: str | None = None, names: bool = False, show_answer: bool = True,
                 unreadable: int = 0, refresh: str = "") -> str:
    """The votes page: a lesson and a question selector, then per question (grouped by
    lesson) its table, first vote beside the latest, and a sentence that says the shift.
    `questions`: every question (for the selector); `refresh`: board.refresh_control()."""
    e = html.escape
    lessons = sorted({q.lesson for q in questions})
    lesson_opts = "".join(f'<option value="{e(les)}"{" selected" if les == lesson else ""}>lesson {e(les)}</option>'
                          for les in lessons)
    groups = []
    for les in lessons:
        opts = "".join(f'<option value="{e(q.id)}"{" selected" if q.id == question_id else ""}>'
                       f'{e(q.id)} {e(_plain(q.text)[:50])}</option>' for q in questions if q.lesson == les)
        groups.append(f'<optgroup label="lesson {e(les)}">{opts}</optgroup>')
    keep = dict(view="votes", lesson=lesson or "", question=question_id or "")
    names_link = (f'names shown · <a href="{_url(**keep, answer="" if show_answer else "hide")}">hide names</a>'
                  if names else
                  f'no names · <a href="{_url(**keep, names="1", answer="" if show_answer else "hide")}">show names</a>')
    answer_link = (f'right answers shown · <a href="{_url(**keep, names="1" if names else "", answer="hide")}">'
                   f'hide them (before the discussion)</a>' if show_answer else
                   f'right answers hidden · <a href="{_url(**keep, names="1" if names else "")}">show them</a>')
    sections, waiting = [], []
    for les in lessons:
        block = []
        for t in (t for t in results if t.question.lesson == les):
            q = t.question
            if not t.answered and not question_id:
                waiting.append(q.id)
                continue
            anchor = "q-" + q.id.replace(".", "-")
            block.append(f'<section aria-labelledby="{anchor}"><h3 id="{anchor}">{e(q.id)}</h3>'
                         f'<p class="q">{e(_plain(q.text))}</p>{_table(t, names, show_answer)}'
                         f'<p class="said">{_said(t, show_answer)}</p></section>')
        if block:
            sections.append(f"<h2>Lesson {e(les)}</h2>" + "".join(block))
    if waiting:
        sections.append(f'<p>No votes yet: {e(", ".join(waiting))}.</p>')
    damaged = (f'<p class="warn">{unreadable} record{"s" if unreadable != 1 else ""} unreadable '
               f'(named on the board).</p>' if unreadable else "")
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Class votes</title>
<style>body{{font:16px system-ui,sans-serif;margin:1em;max-width:60em}}table{{border-collapse:collapse;margin:.3em 0}}
th,td{{border:1px solid #767676;padding:3px 8px;text-align:left;vertical-align:top}}td.n{{white-space:nowrap;min-width:12em}}
.bar{{display:inline-block;height:.9em;background:#3d5a80;margin-right:.4em;vertical-align:middle}}
tr.right th{{background:#e3f4e3}}.mark{{white-space:nowrap}}.pct,.side{{color:#333}}.names{{font-size:85%;white-space:normal}}
caption{{text-align:left;font-weight:bold}}.q{{font-size:110%}}.warn{{color:#a00}}</style>
</head><body><main><h1>Class votes</h1>
<p><a href="{_url(lesson=lesson or "")}">Back to the class board</a> (it lists students by name)</p>
<form><input type="hidden" name="view" value="votes">
<label for="lesson">Lesson</label> <select id="lesson" name="lesson" onchange="this.form.question.value='';this.form.submit()">
<option value="">all lessons</option>{lesson_opts}</select>
<label for="question">Question</label> <select id="question" name="question" onchange="this.form.submit()">
<option value="">every question with votes</option>{"".join(groups)}</select>
{'<input type="hidden" name="names" value="1">' if names else ""}{'' if show_answer else '<input type="hidden" name="answer" value="hide">'}
{refresh}</form>
<p>{students} students · {names_link} · {answer_link}</p>{damaged}
{"".join(sections) or "<p>No concept checks here.</p>"}
</main></body></html>"""


def concept_questions() -> list:
    """Every concept check of the course, in lesson order (course_lib's registry)."""
    from course_lib.exercises.concepts.questions import all_questions

    return all_questions()
