"""A class at once: N students log in through the hub and Run All the same lesson together.

    .venv/bin/python benchmarks/class_load.py --lesson 02 --lesson 08 --budget-s 1200

One real hub (deploy/hub, loopback only) with a roster of simulated students. For
N = 1, 2, 4, 8, 16 … each of N students has their server started through the hub, then
all N execute the lesson top to bottom at the same moment: `--browser K` of them in
headless Chromium through JupyterLab (Run > Run All Cells), the rest through the
hub's REST API and their kernel's websocket (deploy/hub/client.py). Reported per N:
runs completed, kernels that died, p50/p95 Run All wall time and their ratio to N = 1,
peak memory used on the machine, peak memory per student (server + kernel), load average.
The sweep stops at the first N where a run fails or p95 exceeds 3x the solo time, when
the time budget is spent, or at --max-n. Bounded: every run has a timeout.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil

from course_lib.console import utf8_output

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy" / "hub"))
sys.path.insert(0, str(ROOT / "tests"))
import client  # noqa: E402

PASSWORD = "class-load-1"


def lesson_path(number: str) -> str:
    found = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    if not found:
        raise SystemExit(f"no lesson {number!r} in notebooks/")
    return f"notebooks/{found[0].name}"


class Sampler(threading.Thread):
    """Peak machine memory, peak per-student memory and load while the class runs."""

    def __init__(self, hub, users):
        super().__init__(daemon=True)
        self.hub, self.users, self.stop_flag = hub, users, threading.Event()
        self.peak_used = 0
        self.peak_student = 0
        self.load = []

    def run(self):
        while not self.stop_flag.is_set():
            self.peak_used = max(self.peak_used, psutil.virtual_memory().used)
            self.peak_student = max([self.peak_student] + [self.hub.rss(u) for u in self.users])
            self.load.append(os.getloadavg()[0])
            self.stop_flag.wait(1.0)


def browser_run(hub, user: str, path: str, timeout_s: float) -> client.Run:
    """One student in headless Chromium: login form, JupyterLab, Run All Cells."""
    import browser_support as bs
    from playwright.sync_api import sync_playwright

    run = client.Run(user)
    t0 = time.perf_counter()
    try:
        with sync_playwright() as p:
            browser = bs.launch_chromium(p)
            page = browser.new_page()
            page.goto(f"{hub.url}/hub/login", wait_until="domcontentloaded")
            page.fill("input[name=username]", user)
            page.fill("input[name=password]", PASSWORD)
            page.click("input[type=submit], button[type=submit]")
            page.wait_for_url(f"**/user/{user}/**", timeout=120_000)
            page.goto(f"{hub.url}/user/{user}/lab/tree/{path}", wait_until="domcontentloaded")
            bs.wait_notebook_open(page, Path(path).name, timeout_ms=120_000)
            t0 = time.perf_counter()             # Run All time, as for the API students
            bs.run_all_cells(page, timeout_ms=int(timeout_s * 1000))
            run.cells = page.locator(".jp-CodeCell").count()
            browser.close()
    except Exception as e:   # noqa: BLE001 — a failed student is a result
        run.failure = f"{type(e).__name__}: {str(e)[:200]}"
    run.seconds = time.perf_counter() - t0
    return run


def one_round(hub, users, path, browsers: int, timeout_s: float):
    tokens = {}
    for u in users:                                   # log in + start, before the clock
        client.login(hub.url, u, PASSWORD)
        hub.start_server(u, timeout=180)
        tokens[u] = hub.user_token(u)
    results: dict[str, client.Run] = {}
    go = threading.Barrier(len(users))

    def student(i, u):
        go.wait()
        if i < browsers:
            results[u] = browser_run(hub, u, path, timeout_s)
        else:
            results[u] = client.run_notebook(hub.url, u, tokens[u], path, cell_timeout=timeout_s)

    sampler = Sampler(hub, users)
    sampler.start()
    threads = [threading.Thread(target=student, args=(i, u)) for i, u in enumerate(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s + 300)
    sampler.stop_flag.set()
    sampler.join()
    return [results.get(u, client.Run(u, failure="no result (timed out)")) for u in users], sampler


def sweep(lesson: str, ns, browsers: int, budget_s: float, timeout_s: float, max_n: int):
    path = lesson_path(lesson)
    rows, solo = [], None
    start = time.monotonic()
    users = [f"s{i:02d}" for i in range(1, max_n + 1)]
    baseline = psutil.virtual_memory().used
    extra = ["--cull-timeout", "3600"]
    if os.geteuid() == 0:          # isolation on, as a class gets it: one account per student
        extra += ["--servers-env", str(ROOT / ".venv-servers")]
    with client.Hub(users, extra_args=extra) as hub:
        for n in ns:
            if n > max_n or time.monotonic() - start > budget_s:
                break
            load_before = os.getloadavg()[0]     # what else ran: the class itself is not yet there
            runs, sampler = one_round(hub, users[:n], path, browsers if n > 1 else 0, timeout_s)
            times = sorted(r.seconds for r in runs if r.completed)
            p50 = statistics.median(times) if times else float("nan")
            p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))] if times else float("nan")
            solo = solo or p50
            row = {"lesson": lesson, "n": n, "completed": len(times), "dead_kernels":
                   sum(r.kernel_died for r in runs), "p50_s": round(p50, 1), "p95_s": round(p95, 1),
                   "p50_x": round(p50 / solo, 2), "p95_x": round(p95 / solo, 2),
                   "peak_used_gb": round((sampler.peak_used - baseline) / 2**30, 2),
                   "per_student_gb": round(sampler.peak_student / 2**30, 2),
                   "load_avg": round(statistics.mean(sampler.load), 1) if sampler.load else None,
                   "load_before": round(load_before, 2), "isolated": os.geteuid() == 0,
                   "browser_students": min(browsers, n) if n > 1 else 0,
                   "failures": [r.failure or "; ".join(r.errors)[:200] for r in runs if not r.completed]}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if row["completed"] < n or row["p95_x"] > 3:
                break
    ok = [r["n"] for r in rows if r["completed"] == r["n"] and r["p95_x"] <= 3]
    return rows, (max(ok) if ok else 0)


def main(argv=None) -> int:
    utf8_output()                # UTF-8 output whatever the console's locale
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lesson", action="append", help="two-digit lesson number (repeatable)")
    p.add_argument("--n", default="1,2,4,8,16,32", help="class sizes to try, in order")
    p.add_argument("--browser", type=int, default=1, help="students in Chromium when N > 1")
    p.add_argument("--budget-s", type=float, default=1200, help="stop starting new N after this")
    p.add_argument("--timeout-s", type=float, default=600, help="one Run All's limit")
    p.add_argument("--max-n", type=int, default=32)
    p.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = p.parse_args(argv)
    lessons = args.lesson or ["02", "08"]
    ns = [int(x) for x in args.n.split(",")]
    per_lesson = args.budget_s / len(lessons)
    print(f"# machine: {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
          f"load average at start {os.getloadavg()[0]:.1f}", flush=True)
    allrows, summary, load_at_start = [], {}, os.getloadavg()
    for lesson in lessons:
        rows, largest = sweep(lesson, ns, args.browser, per_lesson, args.timeout_s, args.max_n)
        allrows += rows
        summary[lesson] = largest
        print(f"# lesson {lesson}: largest N with every run complete within 3x solo: {largest}",
              flush=True)
    if args.out:
        args.out.write_text(json.dumps({
            "command": "benchmarks/class_load.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "cores": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30),
            "load_at_start": [round(x, 2) for x in load_at_start],
            "rows": allrows, "largest_n": summary}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
