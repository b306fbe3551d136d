"""Latency of every explorer in every lesson, in a real browser.

Starts JupyterLab as a learner does (`python course.py lab`, through
tests/browser_support.py), opens each lesson in headless Chromium at 1366 x 768 with
the network off, runs it (Run > Run All Cells), then times each explorer (each
`.widget-interact` box) by pressing the arrow keys on its first slider's handle: one
press, and a burst of 6 — how, in widget_latency_page.py. The machine and its load
average before and after each lesson go into the result (machine_info.py; `--quiet-load
1` first waits, after each lesson's run, until the 1-minute load average is below 1);
the Markdown table is made by widget_latency_report.py.

Live explorers draw ahead while the learner pauses (course_lib/widgets/_look_ahead.py).
`--look-ahead both` measures every lesson twice in one run, with drawing ahead off
(COURSE_LOOK_AHEAD=0 in the kernel's environment) and on, so the two can be compared on
the same machine at the same time.

Each press and burst is repeated --repeats times; median and worst are reported. Every
wait is bounded (--timeout); a timeout is reported as such. No timing is asserted anywhere.

    .venv-instructor/bin/python benchmarks/widget_latency.py [--lessons 02,03] [--repeats 3] \\
        [--look-ahead on|off|both] [--out benchmarks/results/widget_latency.json]

Writes the JSON file and prints a Markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import browser_support as bs  # noqa: E402
from machine_info import QUIET_LOAD_MAX_S, load_avg, machine, wait_for_load  # noqa: E402
from widget_latency_page import BURST, measure_explorer  # noqa: E402,F401
from widget_latency_report import markdown  # noqa: E402

VIEWPORT = {"width": 1366, "height": 768}
RUN_ALL_TIMEOUT_MS = 600_000
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "widget_latency.json"
EXPLORER_CODE = re.compile(r"from course_lib\.widgets import \w+")


# --------------------------------------------------------------------------- lessons
def explorer_lessons() -> dict[str, str]:
    """{"00": "notebooks/00_start_here.ipynb", ...}: lessons whose code makes an explorer."""
    out = {}
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                         for c in nb["cells"] if c["cell_type"] == "code")
        if EXPLORER_CODE.search(code):
            out[path.name[:2]] = f"notebooks/{path.name}"
    return out




def measure_lesson(browser, server, lesson: str, notebook: str, repeats: int, timeout_s: float,
                   log=print, quiet_load: float | None = None) -> dict:
    res = {"lesson": lesson, "notebook": notebook, "load_start": load_avg(), "explorers": [],
           "skipped": [], "errors": []}
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    watcher = bs.PageWatcher().attach(page)
    try:
        t = time.monotonic()
        bs.open_notebook(page, server, notebook)
        bs.run_all_cells(page, timeout_ms=RUN_ALL_TIMEOUT_MS)
        res["run_all_s"] = round(time.monotonic() - t, 1)
        bs.wait_widgets_rendered(page, timeout_ms=int(timeout_s * 1000))
        if quiet_load is not None:      # the lesson's own run is load too: let it pass
            res["waited_for_load_s"] = wait_for_load(quiet_load)
        res["load_before"] = load_avg()
        boxes = bs.interact_widgets(page)
        log(f"  {notebook}: ran in {res['run_all_s']} s, {boxes.count()} explorer(s), load {res['load_before']}")
        for k in range(boxes.count()):
            box = boxes.nth(k)
            if not bs.sliders(box).count():     # e.g. lesson 08's translator: a text box only
                res["skipped"].append({"index": k, "why": "no slider (not measured)",
                                       "controls": box.locator(".widget-label").evaluate_all(
                                           "ls => ls.map(l => l.textContent.trim())")})
                log(f"    #{k}: no slider, not measured")
                continue
            r = measure_explorer(page, box, f"{lesson}-{k}", repeats, timeout_s)
            r["index"] = k
            res["explorers"].append(r)
            log(f"    #{k} {r['label']!r} ({r['wiring']}): one press {r['one_press']}, "
                f"burst {r['burst_settled']}" + (f", errors {r['errors']}" if r["errors"] else ""))
    except Exception as e:   # report, go on with the next lesson
        res["errors"].append(f"{type(e).__name__}: {str(e)[:1000]}")
        log(f"  {notebook}: {res['errors'][-1]}")
    finally:
        watcher.closing = True
        res["load_after"] = load_avg()
        res["page_problems"] = watcher.problems()
        context.close()
        server.shutdown_kernels()
    return res



def run(lessons: dict[str, str], repeats: int = 3, timeout_s: float = 60.0, log=print,
        look_ahead: str = "on", quiet_load: float | None = None) -> dict:
    """Measure the explorers of ``lessons`` ({"00": "notebooks/00_....ipynb"}), with drawing
    ahead on, off, or both (each lesson measured off, then on). Returns the result."""
    from playwright.sync_api import sync_playwright

    if not (bs.CHROMIUM.is_file() and os.access(bs.CHROMIUM, os.X_OK)):
        raise SystemExit(f"{bs.CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    result = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": machine(), "repeats": repeats, "burst": BURST, "timeout_s": timeout_s,
              "viewport": VIEWPORT, "load_start": load_avg(), "lessons": []}
    modes = ["off", "on"] if look_ahead == "both" else [look_ahead]
    saved = os.environ.get("COURSE_LOOK_AHEAD")
    with sync_playwright() as pw:
        browser = bs.launch_chromium(pw)
        result["chromium"] = browser.version
        try:
            for lesson, notebook in lessons.items():
                for mode in modes:          # the kernels inherit the server's environment
                    os.environ["COURSE_LOOK_AHEAD"] = "1" if mode == "on" else "0"
                    with bs.LabServer() as server:
                        log(f"  look-ahead {mode}:")
                        r = measure_lesson(browser, server, lesson, notebook, repeats, timeout_s, log,
                                           quiet_load)
                    result["lessons"].append(dict(r, look_ahead=mode))
        finally:
            browser.close()
            if saved is None:
                os.environ.pop("COURSE_LOOK_AHEAD", None)
            else:
                os.environ["COURSE_LOOK_AHEAD"] = saved
    result["load_end"] = load_avg()
    result["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return result


def main(argv=None) -> int:
    try:
        from course_lib.console import utf8_output
        utf8_output()
    except ImportError:
        pass
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lessons", help="comma-separated lesson numbers (default: every lesson with an explorer)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds any one wait may take")
    p.add_argument("--look-ahead", choices=["on", "off", "both"], default="on",
                   help="drawing ahead in the explorers (both: each lesson off, then on)")
    p.add_argument("--quiet-load", type=float, metavar="L",
                   help="after running each lesson, wait (at most %.0f s) until the 1-minute load "
                        "average is below L before pressing" % QUIET_LOAD_MAX_S)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--table", type=Path, metavar="JSON", help="only print the table of a saved result")
    args = p.parse_args(argv)
    if args.table:
        print(markdown(json.loads(args.table.read_text(encoding="utf-8"))))
        return 0
    available = explorer_lessons()
    if args.lessons:
        wanted = [x.strip().zfill(2) for x in args.lessons.split(",") if x.strip()]
        unknown = [x for x in wanted if x not in available]
        if unknown:
            p.error(f"no explorer in lesson(s) {', '.join(unknown)}; known: {', '.join(available)}")
        lessons = {x: available[x] for x in wanted}
    else:
        lessons = available
    print(f"measuring {len(lessons)} lesson(s): {', '.join(lessons)}; load {load_avg()}", flush=True)
    result = run(lessons, args.repeats, args.timeout, log=lambda s: print(s, flush=True),
                 look_ahead=args.look_ahead, quiet_load=args.quiet_load)
    table = markdown(result)
    result["table"] = table
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print()
    print(table)
    print(f"\nwritten to {args.out}")
    failed = any(les["errors"] or any(ex["errors"] for ex in les["explorers"]) for les in result["lessons"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
