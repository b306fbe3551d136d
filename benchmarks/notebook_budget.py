"""Execute every lesson in a fresh kernel and print its wall time and peak memory.

Budgets (DESIGN.md §5): each lesson <= 120 s, all together <= 10 min, peak RSS of
the kernel <= 2 GB. Notebooks are executed from a copy; nothing is written back.

    .venv/bin/python benchmarks/notebook_budget.py [notebooks/NN_x.ipynb ...]
"""
import argparse
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil

from course_lib.console import utf8_output

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from execute_notebooks import LessonClient  # noqa: E402  (waits that cannot lose a message)

LESSON_BUDGET_S, TOTAL_BUDGET_S, RSS_BUDGET_MB = 120, 600, 2048


def _watch_rss(pid: int, peak: list, stop: threading.Event):
    """Poll the kernel's resident memory (with its children) until stopped."""
    try:
        proc = psutil.Process(pid)
        while not stop.is_set():
            rss = proc.memory_info().rss + sum(
                c.memory_info().rss for c in proc.children(recursive=True))
            peak[0] = max(peak[0], rss)
            stop.wait(0.2)
    except psutil.Error:
        pass


def run(path: Path) -> tuple[float, float]:
    """(wall seconds, peak kernel RSS in MB) for one notebook."""
    nb = nbformat.read(path, as_version=4)
    client = LessonClient(nb, timeout=900, kernel_name="transformers-course",
                            resources={"metadata": {"path": str(path.parent)}})
    peak, stop = [0], threading.Event()
    start = time.perf_counter()
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid
        watcher = threading.Thread(target=_watch_rss, args=(pid, peak, stop), daemon=True)
        watcher.start()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        stop.set()
    return time.perf_counter() - start, peak[0] / 2**20


def main(argv=None) -> int:
    utf8_output()                # UTF-8 output whatever the console's locale
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("notebooks", nargs="*", type=Path)
    args = p.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    print(f"{'lesson':<45}{'wall s':>8}{'peak MB':>9}  budget")
    total, ok = 0.0, True
    for path in paths:
        seconds, mb = run(path)
        total += seconds
        fine = seconds <= LESSON_BUDGET_S and mb <= RSS_BUDGET_MB
        ok &= fine
        print(f"{path.stem:<45}{seconds:>8.1f}{mb:>9.0f}  {'ok' if fine else 'OVER'}")
    ok &= total <= TOTAL_BUDGET_S
    print(f"{'total':<45}{total:>8.1f}{'':>9}  {'ok' if total <= TOTAL_BUDGET_S else 'OVER'} "
          f"(<= {TOTAL_BUDGET_S} s; each <= {LESSON_BUDGET_S} s and {RSS_BUDGET_MB} MB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
