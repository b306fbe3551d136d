"""How long the class board takes per refresh for a big class (issue 20 §3: ≤ 200 ms).

    python benchmarks/class_board.py [--students 100] [--repeat 20]

Writes simulated verdict records for N students over every exercise of the course (a mix
of solved, wrong with a hint, not yet; recent wrong checks, some students stuck), then times what one refresh does on the server:
read every student's record file, build the grid and the hint counts, render the page.
Prints the median and the slowest of the repeats.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy" / "board"))
import board  # noqa: E402

from course_lib.console import utf8_output  # noqa: E402

HINTS = ["you scaled by √d_model; the scaling is by √d_k", "softmax over the wrong axis",
         "the mask was applied after the softmax"]


def simulate(records: Path, students: int, exercises: dict[str, str], seed: int = 0) -> None:
    """One progress.json per student, as the checkers write them."""
    rng = random.Random(seed)
    for i in range(students):
        data = {}
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


def main(argv=None) -> int:
    utf8_output()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=100)
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args(argv)
    exercises, numbers = board.exercise_lessons(), board.exercise_numbers()
    lessons = sorted(set(exercises.values()))
    with tempfile.TemporaryDirectory() as tmp:
        simulate(Path(tmp), a.students, exercises)
        times = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            page = refresh(Path(tmp), exercises, lessons, numbers)
            times.append(time.perf_counter() - t0)
    print(f"class board, {a.students} students × {len(exercises)} exercises: "
          f"median {1000 * statistics.median(times):.1f} ms, slowest {1000 * max(times):.1f} ms "
          f"per refresh ({len(page) // 1024} KiB page; target ≤ 200 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
