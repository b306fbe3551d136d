"""The set-up commands: old Python refused in one line, second run installs nothing."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FAKE_OLD_PYTHON = (
    "import sys, runpy; sys.version_info = (3, 8, 10, 'final', 0); "
    "runpy.run_path('tools/check_python.py')")


def test_an_old_python_stops_with_one_line():
    out = subprocess.run([sys.executable, "-c", FAKE_OLD_PYTHON], cwd=ROOT,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs Python >= 3.10" in lines[0] and "3.8" in lines[0]


def test_this_python_is_accepted():
    out = subprocess.run([sys.executable, "tools/check_python.py"], cwd=ROOT,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stderr == ""


@pytest.mark.skipif(not (ROOT / ".venv" / ".course-installed").exists(),
                    reason="set-up was not done with `make setup` here")
def test_second_setup_has_nothing_to_do():
    # `make -q` exits 0 only if the target is up to date: no pip, no kernel install.
    out = subprocess.run(["make", "-q", "setup"], cwd=ROOT, capture_output=True, timeout=30)
    assert out.returncode == 0


def test_makefile_runs_the_documented_commands():
    makefile = (ROOT / "Makefile").read_text()
    readme = (ROOT / "README.md").read_text()
    for target in ("lab", "test", "test-fast", "execute", "student"):
        assert f"\n{target}:" in makefile, f"README mentions make {target}, Makefile lacks it"
        assert f"make {target}" in readme
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("make test")
