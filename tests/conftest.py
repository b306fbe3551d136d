"""Suite-wide set-up: the network guard, and where test artifacts go.

Every Python the tests start (nbval kernels, nbclient kernels, subprocesses)
imports tests/netguard/sitecustomize.py, which refuses connections to anything
but loopback and logs them. A test during which the log grows fails, naming
the connection — whether it was the test itself or a notebook kernel.
"""
import fnmatch
import functools
import importlib.util
import inspect
import os
import re
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
# A pass without workers (`course.py test --lesson`) names itself in COURSE_TEST_PASS.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("COURSE_TEST_PASS", "")
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


# The fast tier (`course.py test --fast`: not slow, not browser) is the library and the
# checkers, the loop while writing code: within 90 s on the 2-core machine. These families of
# test files run in the full suite only (and, where they are about one lesson, in its
# `--lesson` run): whole files, by name, so that a new file of a family goes where its family
# goes. Measured (CPU seconds on the 2-core machine): a lesson's colour words 2-7 s, an
# explorer's caption 1-3 s, every figure drawn three times over for its text sizes.
FULL_SUITE_ONLY = {
    "figures and explorers": ("test_viz_*.py", "test_widget*.py", "test_figure_*.py", "test_colour_words.py",
                              "test_captions.py", "test_bertviz_views.py"),
    "the lesson files, read whole": ("test_notebook_*.py", "test_portable.py", "test_glossary.py",
                                     "test_colab_cell.py", "test_instructor_guide.py"),
    "the set-up program, the tools, the hub": ("test_setup.py", "test_lab_launch.py", "test_ci_selection.py",
                                               "test_export_html.py", "test_nbgrader.py", "test_deployment.py",
                                               "test_environment.py", "test_hub*.py", "test_bench_*.py",
                                               "test_portable_code.py", "test_lesson_selection.py",
                                               "test_lesson_client.py"),
}
# Single tests of the library's files that read whole lessons or the 98 MB model file
# (CPU seconds): every solution found in the notebooks 14, a truncated GGUF file 7 each.
SLOW_TESTS = {"test_solutions.py::test_every_exercise_has_its_solution_under_its_number_and_name",
              "test_llama.py::test_truncated_gguf_file"}


def full_suite_only(file: str) -> bool:
    return any(fnmatch.fnmatch(file, glob) for globs in FULL_SUITE_ONLY.values() for glob in globs)


def pytest_ignore_collect(collection_path, config):
    """Under `-m "not slow …"` (the fast tier) the full suite's files are not even imported:
    importing them (matplotlib, the lessons, the tools) was a third of the fast tier's time."""
    if "not slow" in (config.getoption("markexpr") or "") and full_suite_only(collection_path.name):
        return True
    return None


# The class hub runs on Linux only (JupyterHub, Unix accounts): its tests too.
LINUX_ONLY = {"test_hub.py", "test_hub_accounts.py", "test_hub_board.py", "test_hub_isolation.py"}


def pytest_collection_modifyitems(config, items):
    """nbval cells execute notebooks: they belong to the slow tier, and to the tests that
    execute whole lessons. The hub's tests skip themselves off Linux. Tests the fast tier
    leaves out (FULL_SUITE_ONLY, SLOW_TESTS) join the slow tier. With --lesson, only that
    lesson's tests stay."""
    for item in items:
        if sys.platform != "linux" and item.fspath.basename in LINUX_ONLY:
            item.add_marker(pytest.mark.skip(reason="the class hub runs on Linux only"))
        if item.fspath.ext == ".ipynb":
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.lessons)
        elif full_suite_only(item.fspath.basename) or \
                f"{item.fspath.basename}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
    select_lessons(config, items)


# --------------------------------------------------------------------------- one lesson's tests
# `pytest --lesson 05` (`course.py test --lesson 05`; several: `--lesson 02,05`) keeps the tests
# that prove lesson 05 and deselects every other. A test's lesson is the first of these that
# names one:
#   1. an nbval cell: its notebook's number;
#   2. BY_NAME ("file::test"): a test whose lesson sits in a constant of its module;
#   3. its parameters: a lesson (a notebook's path, its stem "05_transformer_block", "05", the
#      browser test's Lesson), an exercise (its .lesson), a concept question ("5.q1"), or an
#      exercise, figure or explorer given by name;
#   4. its name: test_lesson02_…, test_lesson_06_…;
#   5. its file: test_lessonNN_*.py, or FILE_LESSON;
#   6. in the files about the lessons' checkers, figures and explorers (SCANNED), what its code
#      names, when all of it belongs to one lesson: a lesson's notebook, an exercise
#      (REGISTRY["…"]), a figure, a plot or an explorer.
# A figure, a plot or an explorer belongs to the lesson of the course_lib.viz / course_lib.widgets
# module it comes from (MODULE_LESSON); an exercise to its checker's module (Exercise.lesson).
# Everything else is the shared rest (the library, the set-up program, the hub, the checkers'
# framework …): it proves no single lesson. tests/test_lesson_selection.py checks the split.
LESSON_STEMS = {p.stem: p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
FILE_LESSON = {
    "test_widgets_basics.py": "00", "test_widgets_rnn.py": "01", "test_widgets_attention.py": "02",
    "test_screen_reader.py": "02", "test_screen_reader_exercises.py": "02",
    "test_widgets_positional.py": "03", "test_widgets_heads.py": "04",
    "test_widgets_blocks.py": "05", "test_widgets_sampling.py": "06", "test_viz_masking.py": "06",
    "test_widgets_encoder_decoder.py": "07", "test_widgets_translation.py": "08",
    "test_widgets_llm.py": "11",
}
BY_NAME = {
    "test_browser.py::test_bertviz_views_survive_save_and_reload": "10",   # SAVE_RELOAD_LESSON
}
SCANNED = re.compile(r"test_(widgets|viz|checker)_\w+\.py$|_exercises\.py$|test_(browser|keyboard_reach)\.py$")
MODULE_LESSON = {
    "basics": "00", "rnn": "01", "attention": "02", "positional": "03", "heads": "04", "blocks": "05",
    "masking": "06", "sampling": "06", "training": "06", "encoder_decoder": "07", "translation": "08",
    "families": "09", "induction": "10", "llm": "11",
}


def pytest_addoption(parser):
    parser.addoption("--lesson", default=None, metavar="NN[,NN…]",
                     help="only the tests of these lessons (tests/conftest.py says which are whose)")
    parser.addoption("--lesson-map", default=None, metavar="FILE",
                     help="write each collected test's lesson (empty: the shared rest) to FILE")


def select_lessons(config, items):
    wanted, report = config.getoption("--lesson"), config.getoption("--lesson-map")
    if not (wanted or report):
        return
    lessons = {item.nodeid: lesson_of(item) for item in items}
    if report:
        # node, its lesson, "browser" where it is marked so (its pass collects only such files)
        marks = {item.nodeid: "browser" if item.get_closest_marker("browser") else "" for item in items}
        Path(report).write_text("".join(f"{node}\t{lesson or ''}\t{marks[node]}\n"
                                        for node, lesson in lessons.items()), encoding="utf-8")
    if not wanted:
        return
    chosen = {w.strip().zfill(2) for w in wanted.split(",") if w.strip()}
    unknown = sorted(chosen - set(LESSON_STEMS.values()))
    if unknown or not chosen:
        raise pytest.UsageError(f"--lesson {wanted}: no such lesson {', '.join(unknown)}; the lessons "
                                f"are {', '.join(sorted(set(LESSON_STEMS.values())))}")
    keep = [item for item in items if lessons[item.nodeid] in chosen]
    config.hook.pytest_deselected(items=[item for item in items if lessons[item.nodeid] not in chosen])
    # The longest first: course.py's --lesson pass hands tests to two workers by work stealing,
    # and a long test that starts last would run alone at the end (stable: the rest keep order).
    keep.sort(key=lambda item: next((k for k, prefix in enumerate(LONGEST_FIRST)
                                     if item.nodeid.startswith(prefix)), len(LONGEST_FIRST)))
    items[:] = keep


# Tests of one lesson that take minutes (measured with --durations, `course.py test --lesson 02`
# and `--lesson 11` on the 2-core machine): the two screen-reader tests, a lesson's Run All in
# Chromium 32-60 s.
LONGEST_FIRST = ("tests/test_screen_reader_exercises.py::", "tests/test_screen_reader.py::",
                 "tests/test_browser.py::test_lesson_in_browser[")


def lesson_of(item):
    """The lesson ("05") whose tests `item` belongs to, or None for the shared rest."""
    if item.fspath.ext == ".ipynb":
        return LESSON_STEMS.get(Path(str(item.fspath)).stem)
    file, name = item.fspath.basename, getattr(item, "originalname", item.name)
    if f"{file}::{name}" in BY_NAME:
        return BY_NAME[f"{file}::{name}"]
    params = getattr(getattr(item, "callspec", None), "params", {})
    found = {_lesson_of_value(v) for v in params.values()} - {None}
    if len(found) == 1:
        return found.pop()
    for text, pattern in ((name, r"test_lesson_?(\d\d)(?:_|$)"), (file, r"test_lesson(\d\d)_")):
        m = re.match(pattern, text)
        if m and m.group(1) in LESSON_STEMS.values():
            return m.group(1)
    if file in FILE_LESSON:
        return FILE_LESSON[file]
    if not SCANNED.search(file):
        return None
    found = _lessons_named_in(getattr(item, "function", None))
    return next(iter(found)) if len(found) == 1 else None


@functools.lru_cache(maxsize=None)
def _named():
    """({name: lesson} of the figures, plots and explorers each lesson's course_lib.viz and
    course_lib.widgets modules define, {name: lesson} of every exercise). A name two
    lessons' modules define is no one lesson's."""
    import course_lib.exercises  # noqa: F401  (fills the registry)
    from course_lib.exercises import framework

    names, twice = {}, set()
    for package in ("course_lib.viz", "course_lib.widgets"):
        for module_name, lesson in MODULE_LESSON.items():
            if importlib.util.find_spec(f"{package}.{module_name}") is None:
                continue                        # masking and training: figures only
            module = importlib.import_module(f"{package}.{module_name}")
            for name, thing in vars(module).items():
                if name.startswith("_") or getattr(thing, "__module__", None) != module.__name__:
                    continue
                if names.get(name, lesson) != lesson:
                    twice.add(name)
                names[name] = lesson
    names = {name: lesson for name, lesson in names.items() if name not in twice}
    exercises = {name: ex.lesson for name, ex in framework.REGISTRY.items()}
    return names, exercises


def _lesson_of_value(value):
    """The lesson a test's parameter names, or None."""
    if not isinstance(value, (str, os.PathLike)):
        for attr in ("lesson", "notebook", "stem", "id"):
            if isinstance(getattr(value, attr, None), str):
                found = _lesson_of_value(getattr(value, attr))
                if found:
                    return found
        return None
    text = os.fspath(value)
    stem = Path(text).stem if text.endswith(".ipynb") else text
    m = re.match(r"(\d\d)(?:$|[ _])", stem) or re.fullmatch(r"(\d{1,2})\.q\d+", text)
    if m and m.group(1).zfill(2) in LESSON_STEMS.values():
        return m.group(1).zfill(2)
    names, exercises = _named()
    return exercises.get(text) or names.get(text)


@functools.lru_cache(maxsize=None)
def _lessons_named_in(function):
    """The lessons whose notebooks, exercises, figures and explorers `function`'s code names."""
    try:
        source = inspect.getsource(function)
    except (TypeError, OSError):
        return frozenset()
    names, exercises = _named()
    found = {LESSON_STEMS[s] for s in re.findall(r"\b\d\d_\w+", source) if s in LESSON_STEMS}
    found |= {exercises[n] for n in re.findall(r"REGISTRY\[[\"'](\w+)[\"']\]", source) if n in exercises}
    found |= {names[w] for w in set(re.findall(r"\b[A-Za-z_]\w*\b", source)) if w in names}
    return frozenset(found)
