"""Says, in the student's notebook, why a kernel of theirs was stopped on the class hub.

On the hub, all of a student's kernels share one memory limit (deploy/hub/limits.py).
Past it the system stops a kernel, and JupyterLab only says that the kernel "appears to
have died". This IPython extension, loaded into every kernel the hub's servers start,
compares the count of kernels the limit stopped with the count this student has already
been told about; if it grew, the first cell run in the new kernel prints one paragraph
saying what happened and what to do. Off the hub (no COURSE_MEMORY_EVENTS) it does nothing.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

SEEN = Path.home() / ".course_limit_seen"     # "<group id> <count told>"


def oom_kills(events: str | os.PathLike) -> int:
    """The 'oom_kill N' count of a cgroup's memory.events (v2) / memory.oom_control (v1)."""
    try:
        for line in Path(events).read_text(encoding="ascii").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def message(limit: str, n: int) -> str:
    kernels = "a kernel" if n == 1 else f"{n} kernels"
    return (f"⚠ Your notebooks together went over the class's memory limit of {limit}, so "
            f"{kernels} of yours was stopped (JupyterLab said the kernel died). Its variables "
            f"are gone: run this notebook's cells again from the top. Close the notebooks you "
            f"are not using (each keeps a kernel and its memory: Kernel ▸ Shut Down Kernel), "
            f"and make big tensors smaller.")


def news(group: str, count: int) -> int:
    """How many stops the student has not been told of; remember that they now are."""
    try:
        seen_group, seen = SEEN.read_text(encoding="utf-8").split()
        told = int(seen) if seen_group == group else 0
    except (OSError, ValueError):
        told = 0
    if count != told:
        try:
            SEEN.write_text(f"{group} {count}\n", encoding="utf-8")
        except OSError:
            pass
    return max(count - told, 0)


def load_ipython_extension(ip) -> None:
    events = os.environ.get("COURSE_MEMORY_EVENTS")
    if not events:
        return
    new = news(os.environ.get("COURSE_GROUP_ID", ""), oom_kills(events))
    if not new:
        return
    text = message(os.environ.get("COURSE_MEMORY_LIMIT", "the class's"), new)

    def tell(*_):
        print(text, file=sys.stderr)
        ip.events.unregister("pre_run_cell", tell)

    ip.events.register("pre_run_cell", tell)
