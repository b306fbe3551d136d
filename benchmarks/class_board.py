"""How long the class board takes per refresh for a big class (issue 20 §3: ≤ 200 ms).

    python benchmarks/class_board.py [--students 100] [--repeat 20]

Writes simulated verdict records for N students over every exercise of the course (a mix
of solved, wrong with a hint, not yet; recent wrong checks, some students stuck) and their
answers to every concept check (first vote and latest; the course's questions, topped up
with made-up ones to 60 while the lessons have fewer), then times what one refresh does on
the server: read every student's record file, build the grid and the hint counts, render the
page — and the same for the class votes page (issue 42 §3: every question's two rounds).
Prints the median and the slowest of the repeats.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy" / "board"))
import board  # noqa: E402
import votes  # noqa: E402

from course_lib.console import utf8_output  # noqa: E402

HINTS = ["you scaled by √d_model; the scaling is by √d_k", "softmax over the wrong axis",
         "the mask was applied after the softmax"]


QUESTIONS = 60          # issue 42: at least 4 per lesson, 60 in all


def questions() -> list:
    """The course's concept checks, topped up to QUESTIONS with made-up ones (lesson 99)."""
    from course_lib.exercises.concepts.questions import Choice, Number, Option

    found = votes.concept_questions()
    for n in range(1, QUESTIONS - len(found) + 1):
        if n % 5:
            found.append(Choice(f"99.q{n}", f"Made-up question {n}?",
                                [Option(f"option {k}", "because", right=k == 1) for k in range(4)]))
        else:
            found.append(Number(f"99.q{n}", f"Made-up number {n}?", answer=16, tolerance=0.5,
                                right="yes", too_low="low", too_high="high"))
    return found


def _answer(rng: random.Random, q) -> str:
    if q.kind == "number":
        return rng.choice([f"{q.answer:g}", f"{q.answer * 2:g}", f"{q.answer / 4:g}", "oops"])
    return q.option_key(rng.randrange(len(q.options)))


def simulate(records: Path, students: int, exercises: dict[str, str], asked=(), seed: int = 0) -> None:
    """One progress.json per student, as the checkers and the concept checks write them."""
    rng = random.Random(seed)
    for i in range(students):
        data = {votes.KEY: {q.id: {"lesson": q.lesson, "first": _answer(rng, q), "latest": _answer(rng, q),
                                  "attempts": 2, "time": time.time()} for q in asked if rng.random() < 0.9}}
        for name, lesson in exercises.items():
            r = rng.random()
            if r < 0.3:
                continue
            last = "ok" if r < 0.7 else "wrong"
            now = time.time()
            data[name] = {"lesson": lesson, "last": last, "attempts": rng.randint(1, 6),
                          "solved": last == "ok", "hint": rng.choice(HINTS) if last == "wrong" else "",
                          "time": now - rng.uniform(0, 1800),
                          "wrong_times": sorted(now - rng.uniform(0, 1200) for _ in range(rng.randint(0, 5)))}
        folder = records / f"student{i:03d}"
        folder.mkdir(parents=True)
        (folder / "progress.json").write_text(json.dumps(data), encoding="utf-8")


def refresh(records: Path, exercises: dict[str, str], lessons: list[str], numbers: dict[str, str]) -> str:
    found, unreadable = board.read_records(records)
    return board.render(board.build(found, exercises, unreadable=unreadable, numbers=numbers), lessons)


def refresh_votes(records: Path, asked: list) -> str:
    """The class votes page, every question with votes (the longest it gets)."""
    found, unreadable = board.read_records(records)
    return votes.render_votes(votes.tallies(found, asked), asked, len(found), unreadable=len(unreadable),
                              refresh=board.refresh_control())


def _time(fn, repeat: int) -> tuple[list[float], list[float], str]:
    """Wall-clock times, CPU times (this process's; less moved by a busy machine), last page."""
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        page = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return times, cpu, page


def main(argv=None) -> int:
    utf8_output()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=100)
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args(argv)
    exercises, numbers = board.exercise_lessons(), board.exercise_numbers()
    lessons = sorted(set(exercises.values()))
    asked = questions()
    with tempfile.TemporaryDirectory() as tmp:
        simulate(Path(tmp), a.students, exercises, asked)
        times, cpu, page = _time(lambda: refresh(Path(tmp), exercises, lessons, numbers), a.repeat)
        vote_times, vote_cpu, vote_page = _time(lambda: refresh_votes(Path(tmp), asked), a.repeat)
    ms = lambda xs: 1000 * statistics.median(xs)  # noqa: E731
    print(f"class board, {a.students} students × {len(exercises)} exercises: "
          f"median {ms(times):.1f} ms, slowest {1000 * max(times):.1f} ms per refresh "
          f"(CPU median {ms(cpu):.1f} ms; {len(page) // 1024} KiB page; target ≤ 200 ms)")
    made = sum(q.lesson == "99" for q in asked)
    print(f"class votes, {a.students} students × {len(asked)} concept checks ({made} made up), two rounds: "
          f"median {ms(vote_times):.1f} ms, slowest {1000 * max(vote_times):.1f} ms per refresh "
          f"(CPU median {ms(vote_cpu):.1f} ms; {len(vote_page) // 1024} KiB page; target ≤ 200 ms)")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores" if hasattr(os, "getloadavg") else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
