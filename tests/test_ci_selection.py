"""CI's second run, as an ordinary account (.ci/unprivileged.py), runs the tests whose outcome
can depend on the account and leaves the rest to the root pass, each with its reason. Here:
every test it leaves out still exists (a renamed test would otherwise run twice, or a stale
name hide nothing), every reason is written, the tests that exercise an account's files and
permissions are never left out, and each of `course.py test`'s passes keeps something to run
(pytest fails a pass that selects nothing)."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Whatever else changes, these run as the account: set-up, launch, every file and folder the
# course writes for a learner or an instructor, the hub (its root-only skips, its shared-user
# mode), the network guard in the account's processes.
ACCOUNT_TESTS = ["tests/test_setup.py", "tests/test_lab_launch.py", "tests/test_workspace.py",
                 "tests/test_student.py", "tests/test_progress.py", "tests/test_nbgrader.py",
                 "tests/test_export_html.py", "tests/test_class_board.py", "tests/test_hub.py",
                 "tests/test_hub_accounts.py", "tests/test_hub_isolation.py",
                 "tests/test_hub_limits.py", "tests/test_hub_board.py",
                 "tests/test_network_guard.py", "tests/test_checkpoints.py"]


@pytest.fixture(scope="module")
def ci():
    pytest.importorskip("pwd")              # the script manages Unix accounts
    spec = importlib.util.spec_from_file_location("unprivileged", ROOT / ".ci" / "unprivileged.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_test_left_to_root_exists_and_says_why(ci):
    left = ci.left_to_root()
    assert len(left) > 40
    for name, reason in left.items():
        assert len(reason.split()) >= 8, f"{name}: say why its outcome cannot depend on the account"
        path, _, test = name.partition("::")
        assert (ROOT / path).is_file(), f"{name} is left to the root pass but {path} does not exist"
        if test:
            function = test.split("[")[0]
            assert re.search(rf"^def {function}\(", (ROOT / path).read_text(encoding="utf-8"), re.M), \
                f"{name}: no test {function} in {path}"
    for pattern in (p for patterns in ci.LEFT_TO_ROOT.values() for p in patterns):
        if "*" in pattern or "[" in pattern.split("::")[0]:
            assert any(Path(n).match(pattern) for n in left if "::" not in n), f"{pattern} matches nothing"


def test_the_account_tests_and_one_lesson_always_run_as_the_account(ci):
    left = ci.left_to_root()
    for name in ACCOUNT_TESTS:
        assert (ROOT / name).is_file(), name
        assert not any(name.startswith(n) or n.startswith(name) for n in left), \
            f"{name} exercises the account's own files or permissions: it must run as the account"
    lesson = ci.LESSON
    assert (ROOT / "notebooks" / f"{lesson}.ipynb").is_file()
    assert f"notebooks/{lesson}.ipynb" not in left
    assert f"tests/test_browser.py::test_lesson_in_browser[{lesson}]" not in left
    assert len([n for n in left if n.startswith("notebooks/")]) == len(ci.lessons()) - 1
    # Handed to course.py test as pytest's --deselect, one prefix each.
    args = ci.selection()
    assert args[::2] == ["--deselect"] * len(left) and args[1::2] == list(left)


def test_each_pass_keeps_its_tests_and_the_lessons_are_left_out_by_name(ci):
    """A real collection of the browser test and the lessons with the script's arguments: of
    the lessons, only LESSON is left, in the browser and through nbval."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly",
                          "tests/test_browser.py", "tests/test_setup.py", "notebooks", *ci.selection()],
                         cwd=ROOT, capture_output=True, timeout=600)
    text = out.stdout.decode("utf-8", "replace")
    assert out.returncode == 0, text[-3000:]
    ids = [line for line in text.splitlines() if "::" in line]
    lessons_in_browser = [i for i in ids if "::test_lesson_in_browser[" in i]
    assert lessons_in_browser == [f"tests/test_browser.py::test_lesson_in_browser[{ci.LESSON}]"], lessons_in_browser
    notebooks = {i.split("::")[0] for i in ids if i.startswith("notebooks/")}
    assert notebooks == {f"notebooks/{ci.LESSON}.ipynb"}, notebooks
    assert not any("test_bertviz_views_fit_beside_the_file_browser" in i for i in ids)
    assert any(i.startswith("tests/test_setup.py::") for i in ids)
    assert any(i.startswith("tests/test_browser.py::test_bertviz_views_survive_save_and_reload") for i in ids)
