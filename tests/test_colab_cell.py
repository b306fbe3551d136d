"""tools/colab_cell.py: every lesson's first code cell sets the course up on Colab only.

Colab itself cannot be reached from here. What is checked: the cell is in place in
every lesson; outside Colab it does nothing at all (no subprocess, no output);
with a stand-in `google.colab` module it clones the URL it names, runs the install
step, moves to the clone's notebooks/ and enables Colab's widget manager; the pip
commands of the install step; and the tool's idempotence.
"""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "colab_cell.py"
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

_spec = importlib.util.spec_from_file_location("colab_cell", TOOL)
colab_cell = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(colab_cell)

URL = "https://github.com/some-org/transformers-course.git"


# ----------------------------------------------------------------------------- the lessons
@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_every_lesson_starts_with_the_colab_cell(lesson):
    nb = nbformat.read(lesson, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and colab_cell.is_setup_cell(code[0]), (
        f"{lesson.name}: the first code cell is not the Colab set-up cell; "
        "run `python tools/colab_cell.py notebooks/*.ipynb`")
    url = colab_cell.url_in_cell(code[0].source)
    assert code[0].source == colab_cell.cell_source(url), (
        f"{lesson.name}: the Colab cell is out of date; run `python tools/colab_cell.py notebooks/*.ipynb`")
    assert sum(colab_cell.is_setup_cell(c) for c in nb.cells) == 1
    assert code[0].outputs == []
    # folded: a learner sees a one-line bar in JupyterLab, the title on Colab
    assert code[0].metadata["jupyter"]["source_hidden"] is True
    assert code[0].metadata["cellView"] == "form"


def test_all_lessons_name_the_same_repository():
    urls = set()
    for lesson in LESSONS:
        nb = nbformat.read(lesson, as_version=4)
        urls |= {colab_cell.url_in_cell(c.source) for c in nb.cells if colab_cell.is_setup_cell(c)}
    assert len(urls) <= 1, urls


# ----------------------------------------------------------------------------- running the cell
_HARNESS = r"""
import builtins, os, subprocess, sys, types, json
calls = []
def record(*a, **k):
    calls.append([str(x) for x in (a[0] if a and isinstance(a[0], (list, tuple)) else a)])
    if len(calls[-1]) > 1 and calls[-1][:2] == ["git", "clone"]:
        dest = calls[-1][-1]
        os.makedirs(os.path.join(dest, "notebooks"))
    return subprocess.CompletedProcess(a, 0)
subprocess.run = subprocess.call = subprocess.check_call = subprocess.check_output = record
subprocess.Popen = lambda *a, **k: record(*a)
os.system = lambda cmd: record(cmd) or 0
if os.environ.get("FAKE_COLAB"):
    google = types.ModuleType("google"); colab = types.ModuleType("google.colab")
    colab.output = types.SimpleNamespace(enable_custom_widget_manager=lambda: calls.append(["widgets"]))
    google.colab = colab
    sys.modules["google"], sys.modules["google.colab"] = google, colab
src = open(sys.argv[1], encoding="utf-8").read()
env = {"__name__": "__main__"}
before = set(sys.modules)
try:
    exec(compile(src, "colab-cell", "exec"), env)
finally:
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"calls": calls, "cwd": os.getcwd(), "names": sorted(k for k in env if not k.startswith("__")),
                   "pip_imported": any(m.startswith("pip") for m in set(sys.modules) - before)}, f)
"""


def _run_cell(tmp_path, source, colab=False):
    (tmp_path / "cell.py").write_text(source, encoding="utf-8")
    (tmp_path / "harness.py").write_text(_HARNESS, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if colab:
        env["FAKE_COLAB"] = "1"
    r = subprocess.run([sys.executable, "-I", str(tmp_path / "harness.py"), str(tmp_path / "cell.py"),
                        str(tmp_path / "facts.json")], capture_output=True, text=True, encoding="utf-8",
                       errors="replace", cwd=tmp_path, env=env, timeout=60)
    return r, json.loads((tmp_path / "facts.json").read_text(encoding="utf-8"))


def test_outside_colab_the_cell_does_nothing(tmp_path):
    r, facts = _run_cell(tmp_path, colab_cell.cell_source(URL))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
    assert facts["calls"] == [] and not facts["pip_imported"]
    assert facts["names"] == ["sys"]
    assert facts["cwd"] == str(tmp_path)


@pytest.mark.slow
def test_outside_colab_in_a_kernel_the_cell_prints_nothing(tmp_path):
    """The same in a real IPython kernel (the way a lesson runs it): no output at all."""
    from lesson_client import LessonClient

    nb = nbformat.v4.new_notebook(cells=[colab_cell.make_cell(URL)])
    LessonClient(nb, timeout=60, kernel_name="transformers-course",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert nb.cells[0].outputs == []


def test_on_colab_it_clones_installs_and_moves_to_the_notebooks(tmp_path):
    dest = tmp_path / "content" / "transformers-course"
    source = colab_cell.cell_source(URL).replace(colab_cell.COLAB_DIR, str(dest))
    r, facts = _run_cell(tmp_path, source, colab=True)
    assert r.returncode == 0, r.stderr
    clone, install, widgets = facts["calls"]
    assert clone == ["git", "clone", "--depth", "1", "--quiet", URL, str(dest)]
    assert install[1:] == [f"{dest}/tools/colab_cell.py", "--install", str(dest)]
    assert widgets == ["widgets"]
    assert facts["cwd"] == str(dest / "notebooks")
    assert r.stdout.strip() == f"Course ready on Colab: {URL}"
    # Run again (Run All twice): nothing is cloned or installed a second time.
    r, facts = _run_cell(tmp_path, source, colab=True)
    assert r.returncode == 0 and facts["calls"] == [["widgets"]]


def test_on_colab_the_placeholder_url_stops_with_what_to_set(tmp_path):
    r, facts = _run_cell(tmp_path, colab_cell.cell_source(colab_cell.PLACEHOLDER_URL), colab=True)
    assert r.returncode != 0 and facts["calls"] == []
    assert "RuntimeError" in r.stderr and "COURSE_REPO_URL in tools/colab_cell.py" in r.stderr


# ----------------------------------------------------------------------------- install step
def test_install_keeps_what_colab_has_and_pins_what_it_lacks():
    colab_has = {n: "x" for n in ("torch", "numpy", "matplotlib", "ipywidgets", "transformers", "tqdm",
                                  "ipykernel", "nbformat")}
    commands = colab_cell.plan_install(ROOT, colab_has)
    missing, nodeps, course = commands
    pins = dict(colab_cell._pins((ROOT / "requirements.txt").read_text(encoding="utf-8")))
    wanted = {f"{n}=={v}" for n, v in pins.items()
              if colab_cell._normalise(n) not in colab_has | {t: "" for t in colab_cell.TOOLING}}
    assert set(missing[missing.index("--disable-pip-version-check") + 1:]) == wanted
    assert f"num2words=={pins['num2words']}" in wanted and f"bertviz=={pins['bertviz']}" in wanted
    assert not any(a.startswith(("torch", "jupyterlab", "playwright", "pytest")) for a in missing[4:])
    assert nodeps[-3:] == ["--no-deps", "-r", str(ROOT / "requirements-nodeps.txt")]
    assert course[-2:] == ["--no-deps", str(ROOT)]


def test_install_with_everything_present_installs_only_data_and_course():
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    everything = {colab_cell._normalise(n): "x" for n, _ in colab_cell._pins(requirements)}
    assert len(colab_cell.plan_install(ROOT, everything)) == 2


# ----------------------------------------------------------------------------- the tool
def _lesson_copy(tmp_path):
    dest = tmp_path / "00_start_here.ipynb"
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", dest)
    nb = nbformat.read(dest, as_version=4)
    nb.cells = [c for c in nb.cells if not colab_cell.is_setup_cell(c)]
    nbformat.write(nb, dest)
    return dest


def test_tool_inserts_once_before_the_first_code_cell_and_is_idempotent(tmp_path):
    path = _lesson_copy(tmp_path)
    before = nbformat.read(path, as_version=4)
    n, lines = colab_cell.update([path], url=URL)
    assert n == 1 and lines == ["00_start_here.ipynb: inserted"]
    after = nbformat.read(path, as_version=4)
    first_code = next(i for i, c in enumerate(before.cells) if c.cell_type == "code")
    assert colab_cell.is_setup_cell(after.cells[first_code])
    assert after.cells[first_code].id == colab_cell.TAG
    rest = after.cells[:first_code] + after.cells[first_code + 1:]
    assert [(c.cell_type, c.source) for c in rest] == [(c.cell_type, c.source) for c in before.cells]
    assert after.metadata == before.metadata                      # widget state kept
    nbformat.validate(after)
    data = path.read_bytes()
    assert colab_cell.update([path], url=URL) == (0, ["00_start_here.ipynb: unchanged"])
    assert path.read_bytes() == data


def test_tool_updates_a_changed_url_and_moves_a_misplaced_cell(tmp_path):
    path = _lesson_copy(tmp_path)
    colab_cell.update([path], url=URL)
    assert colab_cell.update([path], url="https://example.org/other.git")[1] == ["00_start_here.ipynb: updated"]
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if colab_cell.is_setup_cell(c))
    nb.cells.remove(cell)
    nb.cells.append(cell)
    nb.cells.append(nbformat.from_dict(dict(cell, id="dup")))     # a pasted duplicate
    nbformat.write(nb, path)
    assert colab_cell.update([path], url=URL)[1] == ["00_start_here.ipynb: updated"]
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert colab_cell.is_setup_cell(code[0]) and sum(map(colab_cell.is_setup_cell, nb.cells)) == 1


def test_check_mode_writes_nothing_and_fails_when_out_of_date(tmp_path):
    path = _lesson_copy(tmp_path)
    data = path.read_bytes()
    r = subprocess.run([sys.executable, str(TOOL), "--check", str(path)], capture_output=True, text=True,
                       encoding="utf-8", timeout=60)
    assert r.returncode == 1 and "out of date" in r.stdout and path.read_bytes() == data
    subprocess.run([sys.executable, str(TOOL), str(path)], check=True, capture_output=True, timeout=60)
    r = subprocess.run([sys.executable, str(TOOL), "--check", str(path)], capture_output=True, text=True,
                       encoding="utf-8", timeout=60)
    assert r.returncode == 0, r.stdout


def test_not_a_notebook_is_refused(tmp_path):
    (tmp_path / "x.txt").write_text("hi", encoding="utf-8")
    r = subprocess.run([sys.executable, str(TOOL), str(tmp_path / "x.txt")], capture_output=True, text=True,
                       encoding="utf-8", timeout=60)
    assert r.returncode == 1 and "not a notebook" in r.stderr


@pytest.mark.parametrize("remote, url", [
    ("git@github.com:org/course.git", "https://github.com/org/course.git"),
    ("ssh://git@github.com/org/course", "https://github.com/org/course.git"),
    ("https://user:token@gitlab.com/org/course.git", "https://gitlab.com/org/course.git"),
    ("https://github.com/org/course", "https://github.com/org/course"),
    ("/srv/git/course.git", None),
    ("file:///srv/git/course.git", None),
    ("http://localhost:3000/org/course.git", None),
])
def test_origin_remote_to_a_url_colab_can_clone(remote, url):
    assert colab_cell._public_url(remote) == url


def test_without_a_public_origin_the_placeholder_is_used(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert colab_cell.repo_url(tmp_path) == (colab_cell.COURSE_REPO_URL or colab_cell.PLACEHOLDER_URL)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", "git@github.com:o/c.git"], check=True)
    assert colab_cell.repo_url(tmp_path) == (colab_cell.COURSE_REPO_URL or "https://github.com/o/c.git")
