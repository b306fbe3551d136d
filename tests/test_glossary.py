"""No lesson uses a term before the cell that defines it, and none speaks of a lecture (issue 38 §1).

The glossary, docs/glossary.md, names each of the course's terms with the lesson and the words of
the cell that defines it. A term (or one of its other spellings) may appear in a lesson's prose
or figure descriptions only

- in a later lesson, or in the defining lesson at or after the defining words (within the
  defining cell, a use before the words counts as before the definition);
- in a paragraph that says where the term comes from ("lesson 07 adds cross-attention", or a
  link to that lesson's notebook);
- in the defining lesson's opening cell, whose objectives name what the lesson will define;
- in the course's overview (NOT_DEFINITIONS).

And the learners of this course have attended no lecture: "lecture" appears nowhere in a lesson.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

# (lesson, cell): why a term may appear there before its lesson defines it.
NOT_DEFINITIONS = {
    ("00", 0): "the course's overview names the parts it will build",
}


@dataclass(frozen=True)
class Term:
    name: str
    lesson: str
    phrase: str
    spellings: tuple

    def pattern(self) -> re.Pattern:
        alts = []
        for s in self.spellings:
            body = re.escape(s)
            if re.match(r"\w", s):
                body = r"(?<![\w-])" + body
            if re.search(r"\w$", s):
                body += r"(?![\w-])"
            alts.append(body if any(c.isupper() for c in s.replace("\\", "")) else f"(?i:{body})")
        return re.compile("|".join(alts))


def _norm(text: str) -> str:
    return " ".join(text.split())


def read_glossary(path=GLOSSARY) -> list[Term]:
    terms, rows = [], [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    for line in rows[1:]:                                     # the first row is the header
        cells = [c.strip() for c in line.strip()[1:-1].split("|")]      # no "|" inside a cell
        if len(cells) != 5 or set(cells[0]) <= {"-"}:
            continue
        name, lesson, phrase, also, _meaning = cells
        spellings = (name,) + tuple(s.strip() for s in also.split(";") if s.strip())
        terms.append(Term(name, lesson, _norm(phrase), spellings))
    return terms


def lesson_texts(path):
    """[(cell index, kind, text)]: markdown cells, and the descriptions (alt) of figures."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    out = []
    for i, c in enumerate(cells):
        if c["cell_type"] == "markdown":
            out.append((i, "prose", _norm("".join(c["source"]))))
        for o in c.get("outputs", []):
            alt = o.get("metadata", {}).get("image/png", {}).get("alt")
            if alt:
                out.append((i, "figure description", _norm(alt)))
    return out


_LESSON_REF = re.compile(r"[Ll]essons?\s+(\d+(?:\s*(?:[–,-]|and)\s*\d+)*)")
_LINK = re.compile(r"\((\d\d)_\w+\.ipynb")


def _lessons_named(paragraph: str) -> set[int]:
    named = {int(m.group(1)) for m in _LINK.finditer(paragraph)}
    for m in _LESSON_REF.finditer(paragraph):
        numbers = re.findall(r"\d+|[–-]", m.group(1))
        for k, tok in enumerate(numbers):
            if tok in "–-" and 0 < k < len(numbers) - 1:
                named.update(range(int(numbers[k - 1]), int(numbers[k + 1]) + 1))
            elif tok not in "–-":
                named.add(int(tok))
    return named


def _paragraph(text: str, at: int) -> str:
    """The paragraph around offset `at` (texts are whitespace-normalised: sentences then)."""
    start = max(text.rfind(". ", 0, at), text.rfind("## ", 0, at), 0)
    end = min([e for e in (text.find(". ", at), text.find(" #", at)) if e != -1] or [len(text)])
    return text[start:end]


def problems(terms=None, lessons=LESSONS) -> list[str]:
    terms = read_glossary() if terms is None else terms
    texts = {p.stem[:2]: lesson_texts(p) for p in lessons}
    found = []
    for term in terms:
        if term.lesson not in texts:
            found.append(f"{term.name!r}: lesson {term.lesson} does not exist")
            continue
        defining = [(i, t) for i, kind, t in texts[term.lesson] if kind == "prose" and term.phrase in t]
        if not defining:
            found.append(f"{term.name!r}: no cell of lesson {term.lesson} says {term.phrase!r} (docs/glossary.md)")
            continue
        cell, text = defining[0]
        if not term.pattern().search(text):
            found.append(f"{term.name!r}: its defining cell {term.lesson}/{cell} does not name it")
        phrase_at = text.index(term.phrase)
        pattern = term.pattern()
        for lesson, items in texts.items():
            for i, kind, t in items:
                for m in pattern.finditer(t):
                    if (int(lesson), i) > (int(term.lesson), cell):
                        continue
                    if (lesson, i) == (term.lesson, cell) and (kind != "prose" or m.start() >= phrase_at):
                        continue
                    if (lesson, i) in NOT_DEFINITIONS or (lesson == term.lesson and i == 0):
                        continue
                    if int(term.lesson) in _lessons_named(_paragraph(t, m.start())):
                        continue
                    found.append(f"{lesson} cell {i} ({kind}) uses {m.group(0)!r} before lesson {term.lesson} "
                                 f"cell {cell} defines it: …{t[max(0, m.start() - 60):m.end() + 40]}…")
    return found


def test_every_term_is_used_only_after_its_definition():
    found = problems()
    assert not found, f"{len(found)} uses before the definition:\n" + "\n".join(found)


def lecture_mentions(lessons=LESSONS) -> list[str]:
    found = []
    for path in lessons:
        for i, c in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            texts = ["".join(c["source"])] + ["".join(o.get("text", "")) for o in c.get("outputs", [])]
            for t in texts:
                for m in re.finditer(r"(?i)\blectures?\b", t):
                    found.append(f"{path.stem[:2]} cell {i}: …{t[max(0, m.start() - 50):m.end() + 30]}…")
    return found


def test_no_lesson_speaks_of_a_lecture():
    found = lecture_mentions()
    assert not found, "the course has no lectures:\n" + "\n".join(found)


# -- the check itself, on planted lessons ----------------------------------------------------

def _lesson(tmp_path, stem, *markdown):
    path = tmp_path / f"{stem}.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": m} for m in markdown]}),
                    encoding="utf-8")
    return path


def test_planted_uses_before_the_definition_are_caught(tmp_path):
    dropout = Term("dropout", "07", "**Dropout** sets", ("dropout",))
    delta = Term("Kronecker delta", "02", "where $\\delta_{ij}$ is 1", ("\\delta_{ij}",))
    lessons = [
        _lesson(tmp_path, "02_a", "# 02", "$\\alpha_i(\\delta_{ij} - \\alpha_j)$, where $\\delta_{ij}$ is 1 if i = j"),
        _lesson(tmp_path, "05_b", "# 05", "built with `dropout=0.0` (dropout is random)",
                "dropout comes in lesson 07"),
        _lesson(tmp_path, "07_c", "# 07 dropout", "text", "**Dropout** sets entries to 0", "dropout again"),
    ]
    found = problems([dropout, delta], lessons)
    cells = sorted({f.split(" (")[0] for f in found})
    assert cells == ["02 cell 1", "05 cell 1"], found      # not 05 cell 2 (it names lesson 07), nor 07 cell 0
    assert problems([Term("x", "07", "not there", ("x",))], lessons)[0].startswith("'x': no cell")


def test_the_glossary_reads():
    terms = read_glossary()
    assert len(terms) >= 40
    by_name = {t.name: t for t in terms}
    assert by_name["dropout"].lesson == "05" and "Dropout" in by_name["dropout"].spellings
    assert by_name["RNN"].pattern().search("why not RNNs?") and not by_name["Adam"].pattern().search("AdamW")
