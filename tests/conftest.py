"""Suite-wide set-up: the network guard, and where test artifacts go.

Every Python the tests start (nbval kernels, nbclient kernels, subprocesses)
imports tests/netguard/sitecustomize.py, which refuses connections to anything
but loopback and logs them. A test during which the log grows fails, naming
the connection — whether it was the test itself or a notebook kernel.
"""
import importlib.util
import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
GUARD_DIR = Path(__file__).resolve().parent / "netguard"
# Under pytest-xdist (`course.py test` runs the unit tests on two workers) each worker
# keeps its own guard log and progress file: one worker's kernel must not fail the
# other's test, nor its checkers' verdicts land in the other's file.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_SUFFIX = f"-{_WORKER}" if _WORKER else ""
GUARD_LOG = ARTIFACTS / f"network-guard{_SUFFIX}.log"

ARTIFACTS.mkdir(exist_ok=True)
GUARD_LOG.write_text("", encoding="utf-8")
os.environ["COURSE_NETGUARD_LOG"] = str(GUARD_LOG)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(GUARD_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
# Offline for libraries that would try anyway (Hugging Face, matplotlib fonts...).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Checkers record progress; tests (and the kernels they start) must not touch
# the user's own file.
os.environ["COURSE_PROGRESS_FILE"] = str(ARTIFACTS / f"progress{_SUFFIX}.json")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The guard in this very process, too (loaded by path: a `sitecustomize` may
# already be imported under that name).
_spec = importlib.util.spec_from_file_location("course_netguard", GUARD_DIR / "sitecustomize.py")
_spec.loader.exec_module(importlib.util.module_from_spec(_spec))

# The class hub, one for the session: tests/test_hub.py and tests/test_hub_isolation.py.
from hub_fixture import hub  # noqa: E402,F401


# The course's models are small: on a 2-core machine that is also busy, one
# thread is many times faster than two (measured: a recall training took 3.5 s
# with one thread, 32 s with two). Kernels choose for themselves.
torch.set_num_threads(1)


def pytest_runtest_setup(item):
    item._guard_pos = GUARD_LOG.stat().st_size


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call":
        return
    with open(GUARD_LOG, encoding="utf-8") as f:
        f.seek(getattr(item, "_guard_pos", 0))
        new = f.read()
    if new.strip() and not item.get_closest_marker("allow_network_attempt"):
        report.outcome = "failed"
        report.longrepr = ("This test (or a notebook kernel it ran) tried to reach the "
                           "network:\n" + new)


# The class hub runs on Linux only (JupyterHub, Unix accounts): its tests too.
LINUX_ONLY = {"test_hub.py", "test_hub_accounts.py", "test_hub_board.py", "test_hub_isolation.py"}


def pytest_collection_modifyitems(config, items):
    """nbval cells execute notebooks: they belong to the slow tier, and to the tests that
    execute whole lessons. The hub's tests skip themselves off Linux."""
    for item in items:
        if sys.platform != "linux" and item.fspath.basename in LINUX_ONLY:
            item.add_marker(pytest.mark.skip(reason="the class hub runs on Linux only"))
        if item.fspath.ext == ".ipynb":
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.lessons)
