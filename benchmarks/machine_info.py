"""The machine a benchmark ran on, and how busy it was: written into every result so that
numbers from different days or machines are not compared as if they were alike."""
from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUIET_LOAD_MAX_S = 180.0      # wait_for_load: the longest wait for the load to fall


def load_avg() -> list[float] | None:
    """1, 5 and 15-minute load averages (None where the system has none)."""
    if hasattr(os, "getloadavg"):
        try:
            return [round(x, 2) for x in os.getloadavg()]
        except OSError:
            return None
    return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_version(name: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


def git_state() -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  encoding="utf-8", timeout=30).stdout.rstrip("\n")
        except (OSError, subprocess.SubprocessError):
            return ""
    return {"commit": git("rev-parse", "HEAD"),
            "dirty": git("status", "--porcelain", "--", "course_lib", "notebooks").splitlines()}


def machine() -> dict:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "torch": package_version("torch"),
            "ipywidgets": package_version("ipywidgets"), "jupyterlab": package_version("jupyterlab"),
            "playwright": package_version("playwright"), **git_state()}



def wait_for_load(below: float, at_most_s: float = QUIET_LOAD_MAX_S) -> float:
    """Sleep until the 1-minute load average is below `below` (at most `at_most_s`);
    returns the seconds waited. Where there is no load average (Windows), returns 0."""
    start = time.monotonic()
    while (load_avg() or [0.0])[0] >= below and time.monotonic() - start < at_most_s:
        time.sleep(2)
    return round(time.monotonic() - start, 1)
