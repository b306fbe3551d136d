"""`python -m course_lib.exercises.concepts [--lesson 02[,05]]`: every concept check, one a
line — its id, its kind and its first words (`python3 course.py questions` runs this)."""
from __future__ import annotations

import argparse
import sys

from course_lib.console import utf8_output

from course_lib.mathtext import words
from .questions import all_questions

WIDTH = 80


def lessons_chosen(text: str | None) -> list[str] | None:
    """"02", "2" or "02,05" -> ["02", "05"]; None (every lesson) for None or "".
    ValueError naming what was expected for anything else."""
    if not text:
        return None
    chosen = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise ValueError(f"--lesson takes lesson numbers such as 02, 2 or 02,05; got {text!r}")
        chosen.append(f"{int(part):02d}")
    return chosen


def line(question, width: int = WIDTH) -> str:
    """"2.q3  choice   Is the score q dot k over square root of d sub k a cosine …" (≤ width
    chars): the first words, each formula in words (mathtext.words), never raw TeX."""
    kind = question.kind
    head = f"{question.id:<6} {kind:<8} "
    text = words(question.text)         # formulas in words: a terminal shows no TeX
    room = width - len(head)
    if len(text) > room:
        text = text[:room - 1].rsplit(" ", 1)[0] + "…"
    return head + text


def listing(lessons: list[str] | None = None) -> list[str]:
    questions = [q for q in all_questions() if lessons is None or q.lesson in lessons]
    return [line(q) for q in questions]


def main(argv=None) -> int:
    utf8_output()
    p = argparse.ArgumentParser(prog="course.py questions", description=__doc__)
    p.add_argument("--lesson", help="only these lessons: 02, 2 or 02,05")
    args = p.parse_args(argv)
    try:
        lessons = lessons_chosen(args.lesson)
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 2
    lines = listing(lessons)
    if not lines:
        print(f"No concept checks in lesson(s) {', '.join(lessons or [])}.", file=sys.stderr)
        return 1
    print("\n".join(lines))
    print(f"{len(lines)} question(s).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
