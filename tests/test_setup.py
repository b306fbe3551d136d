"""course.py, the set-up and launch program: the same on Windows, macOS and Linux.

What can be checked here without those systems: the interpreter path comes from
sysconfig (a real venv is made and run), the commands it would run on each system
(PyTorch's CPU index on Linux only, overridable, and left aside in one line where it
cannot be reached), a second set-up installs nothing, two set-ups started at once
install one after the other (two real processes), an old Python and the hub elsewhere
than Linux get one line, and the README, the Makefile and CI run the same commands.
"""
import http.server
import os
import re
import socket
import subprocess
import sys
import threading
import time
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import course  # noqa: E402

FAKE_OLD_PYTHON = (
    "import sys, runpy; sys.version_info = (3, 8, 10, 'final', 0); "
    "sys.argv = ['course.py', 'lab']; runpy.run_path('course.py', run_name='__main__')")


def _text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def test_an_old_python_stops_with_one_line():
    out = subprocess.run([sys.executable, "-c", FAKE_OLD_PYTHON], cwd=ROOT,
                         capture_output=True, timeout=60)
    assert out.returncode == 1
    lines = out.stderr.decode("utf-8").strip().splitlines()
    assert len(lines) == 1 and "needs Python >= 3.10" in lines[0] and "3.8" in lines[0], lines
    assert "course.py lab" in lines[0]


def test_this_python_is_accepted():
    course.check_python()


def test_the_venv_interpreter_is_found_with_sysconfig(tmp_path):
    env_dir = tmp_path / "env with space"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = course.venv_python(env_dir)
    assert python.is_file(), f"{python} does not exist; the venv has {sorted(os.listdir(env_dir))}"
    out = subprocess.run([str(python), "-c", "import sys; print(sys.prefix)"],
                         capture_output=True, timeout=60)
    assert Path(out.stdout.decode().strip()) == env_dir


def test_venv_python_names_the_layout_of_each_system():
    if os.name == "nt":
        assert course.venv_python(Path("C:/x")).parts[-2:] == ("Scripts", "python.exe")
    else:
        assert course.venv_python(Path("/x")) == Path("/x/bin/python")


@pytest.mark.parametrize("system, choice, environ, expected", [
    ("Linux", None, {}, course.TORCH_CPU_INDEX),
    ("Darwin", None, {}, ""),
    ("Windows", None, {}, ""),
    ("Linux", None, {"COURSE_TORCH_INDEX": "pypi"}, ""),
    ("Linux", None, {"COURSE_TORCH_INDEX": "https://mirror.example/whl/cpu"},
     "https://mirror.example/whl/cpu"),
    ("Linux", "pypi", {"COURSE_TORCH_INDEX": "https://mirror.example/whl/cpu"}, ""),
    ("Windows", "https://download.pytorch.org/whl/cu128", {},
     "https://download.pytorch.org/whl/cu128"),
])
def test_torch_comes_from_the_cpu_index_on_linux_unless_chosen(system, choice, environ, expected):
    assert course.torch_index(choice, system=system, environ=environ) == expected


def test_linux_installs_the_pinned_torch_from_the_cpu_index_first():
    commands = course.install_commands("PY", course.LEARNER, course.TORCH_CPU_INDEX)
    pip = ["PY", "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    assert commands[0] == pip + ["--no-deps", "torch==2.13.0", "--index-url", course.TORCH_CPU_INDEX]
    assert commands[1] == pip + ["-r", str(ROOT / "requirements.txt")]
    assert commands[2] == pip + ["--no-deps", "-r", str(ROOT / "requirements-nodeps.txt")]
    assert commands[3] == pip + ["--no-deps", "-e", str(ROOT)]
    assert commands[4][1:5] == ["-m", "ipykernel", "install", "--sys-prefix"]
    assert len(commands) == 5
    flat = [" ".join(c) for c in commands]
    assert not any("requirements-instructor" in c for c in flat), "the learner gets the tools"


def test_pypi_wheels_and_an_installed_torch_skip_the_index():
    for index, installed in (("", None), (course.TORCH_CPU_INDEX, "2.13.0+cpu"),
                             (course.TORCH_CPU_INDEX, "2.13.0")):
        commands = course.install_commands("PY", course.LEARNER, index, installed)
        assert not any("--index-url" in c for c in commands), (index, installed)
        assert not any(a.startswith("torch==") for c in commands for a in c)
    # Another release installed: the pinned one is installed over it.
    commands = course.install_commands("PY", course.LEARNER, course.TORCH_CPU_INDEX, "2.9.1+cpu")
    assert "torch==2.13.0" in commands[0]


def test_the_instructor_environment_adds_its_tools():
    commands = course.install_commands("PY", course.INSTRUCTOR, "")
    reqs = [c[-1] for c in commands if c[-2] == "-r"]
    assert reqs == [str(ROOT / "requirements.txt"), str(ROOT / "requirements-instructor.txt"),
                    str(ROOT / "requirements-nodeps.txt")]


def _pins(name: str) -> set[str]:
    return {line.split("#")[0].split("==")[0].strip().lower()
            for line in _text(name).splitlines() if line.split("#")[0].strip()}


def test_the_learner_environment_holds_no_instructor_tool():
    tools = {"jupyterhub", "nbgrader", "jupyter-repo2docker", "playwright", "pytest", "nbval",
             "configurable-http-proxy", "pytest-timeout"}
    assert not tools & _pins("requirements.txt")
    assert tools <= _pins("requirements-instructor.txt")


def _fake_learner_venv(tmp_path, monkeypatch, name=course.LEARNER, reachable=True):
    """An environment `name` in tmp_path whose interpreter exists (so no venv is made); the
    torch index answers (`reachable`) without being asked, and has not been looked at yet."""
    env_dir = tmp_path / course.ENVIRONMENTS[name][0]
    monkeypatch.setitem(course.ENVIRONMENTS, name, (str(env_dir), course.ENVIRONMENTS[name][1]))
    python = course.venv_python(env_dir)
    python.parent.mkdir(parents=True)
    python.write_bytes(b"")
    monkeypatch.setattr(course, "_PROBED", {})
    monkeypatch.setattr(course, "_SAID", set())
    if reachable:
        monkeypatch.setattr(course, "index_unreachable", lambda url, timeout=None: None)


def test_a_second_setup_installs_nothing(tmp_path, monkeypatch):
    _fake_learner_venv(tmp_path, monkeypatch)
    monkeypatch.setattr(course, "ROOT", ROOT)
    ran = []
    monkeypatch.setattr(course, "run", lambda command, **kw: ran.append(command) or 0)
    monkeypatch.setattr(course, "installed_version", lambda python, package: None)
    monkeypatch.setattr(course.venv, "EnvBuilder", lambda **kw: pytest.fail("made a venv again"))
    course.ensure_environment(course.LEARNER, course.TORCH_CPU_INDEX)
    assert len(ran) == 5, ran                      # first time: torch, -r, data, -e, kernel
    ran.clear()
    course.ensure_environment(course.LEARNER, course.TORCH_CPU_INDEX)
    assert ran == [], "a second set-up ran " + repr(ran)
    # Another torch index, or a changed requirements file, installs again.
    course.ensure_environment(course.LEARNER, "")
    assert len(ran) == 4, ran


def test_the_installers_leave_nothing_in_the_systems_temporary_folder(tmp_path, monkeypatch):
    _fake_learner_venv(tmp_path, monkeypatch)
    folders = []

    def run(command, env=None, **kw):           # each installer leaves a folder where it is told to
        scratch = Path(env["TMPDIR"])
        assert env["TEMP"] == env["TMP"] == str(scratch) and scratch.is_dir()
        (scratch / ("left-by-%d" % len(folders))).mkdir()
        folders.append(scratch)
        return 0

    monkeypatch.setattr(course, "run", run)
    monkeypatch.setattr(course, "installed_version", lambda python, package: None)
    course.ensure_environment(course.LEARNER, course.TORCH_CPU_INDEX)
    assert len(folders) == 5 and len(set(folders)) == 1, folders
    assert not folders[0].exists(), "the installers' temporary folder was left behind"


def test_the_hub_refuses_other_systems_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(course.platform, "system", lambda: "Windows")
    monkeypatch.setattr(course, "ensure_environment", lambda *a: pytest.fail("set up anyway"))
    assert course.main(["hub", "--users", "alice"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Linux only" in err[0] and "Windows" in err[0], err


def test_every_test_pass_is_in_the_test_command():
    args = course.parser().parse_args(["test"])
    stages = course.pytest_passes(args, system="Linux", cores=2)
    passes = [p for stage in stages for p in stage]
    envs = [extra for _, extra, _ in passes]
    assert envs[0] == {}
    assert course.network_guarded(course.OTHER_MACHINE) in envs and course.NON_UTF8 in envs
    # nbval runs outside tests/ (no tests/conftest.py): its kernels get the network guard here.
    guarded = course.network_guarded(course.OTHER_MACHINE)
    assert guarded.items() >= course.OTHER_MACHINE.items()
    assert guarded["PYTHONPATH"].split(course.os.pathsep)[0] == str(course.ROOT / "tests" / "netguard")
    assert guarded["COURSE_NETGUARD_LOG"] == str(course.NBVAL_GUARD_LOG)
    assert course.NON_UTF8 == {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
    # One definition of the simulated other machine: a different CPU, not UTF-8.
    from portability import OTHER_MACHINE_ENV
    assert course.OTHER_MACHINE == OTHER_MACHINE_ENV
    assert course.NON_UTF8.items() <= OTHER_MACHINE_ENV.items()
    assert course.parallel(1) == [] and course.parallel(2) == ["-n", "2", "--dist", "loadfile"]
    assert course.parallel(64)[1] == "4"
    # On Linux the browser test runs the student versions; elsewhere nbclient does.
    files = course.browser_test_files()
    assert passes[0][1] == {} and passes[0][2][:len(files) + 2] == files + ["-m", "browser"]
    assert "student versions" in passes[0][0]
    for system in ("Windows", "Darwin"):
        first = course.pytest_passes(args, system=system, cores=2)[0][0]
        assert first[2] == ["tests", "-m", "lessons and not browser"] and "needs Linux" in first[0]
    fast = course.pytest_passes(course.parser().parse_args(["test", "--fast"]), cores=2)
    assert fast == [[("library and checker tests", {},
                      ["-m", "not slow and not browser", "--ignore=notebooks", "-n", "2", "--dist", "loadfile"])]]
    other = course.pytest_passes(course.parser().parse_args(["test", "--other-machine"]))
    assert other == [[passes[-2]]] and passes[-2][2] == ["notebooks"]
    # The timing claims run last, alone: beside the browser pass they measured that pass.
    assert stages[-1] == [passes[-1]] and passes[-1][2] == ["tests", "-m", "quiet"]
    assert passes[-1][1] == course.NON_UTF8 and "alone" in passes[-1][0]


def _workers(pytest_args):
    """[(worker id, niceness)] of the xdist workers pytest_args asks for."""
    specs = [pytest_args[i + 1] for i, a in enumerate(pytest_args) if a == "--tx"]
    out = []
    for spec in specs:
        keys = dict(part.split("=") for part in spec.split("//")[1:])
        out.append((keys["id"], int(keys.get("nice", 0))))
    return out


@pytest.mark.parametrize("cores", [2, 3, 4, 16])
def test_passes_side_by_side_never_oversubscribe_the_cores(cores):
    """Beside the browser pass every other test runs lower in priority (it takes what the
    browser leaves); nbval on the simulated other machine (2 torch threads) runs alone. Two
    passes side by side never share an xdist worker name, which names each worker's
    network-guard log and progress file (tests/conftest.py)."""
    args = course.parser().parse_args(["test"])
    stages = course.pytest_passes(args, system="Linux", cores=cores)
    assert [len(s) for s in stages] == [2, 1, 1]
    (first, beside), (other,), (quiet,) = stages
    assert quiet[2] == ["tests", "-m", "quiet"], "the timing claims run alone, without workers"
    files = course.browser_test_files()
    assert first[2][:len(files) + 2] == files + ["-m", "browser"] and first[1] == {}
    assert _workers(first[2]) == [("browser0", 0), ("browser1", 0)]
    assert beside[1] == course.NON_UTF8 and beside[2][:3] == ["tests", "-m", "not browser and not lessons and not quiet"]
    assert _workers(beside[2]) == [(f"other{i}", course.BESIDE_NICE) for i in range(min(4, cores))]
    assert beside[2][-2:] == ["--dist", "loadfile"]
    assert not {w for w, _ in _workers(first[2])} & {w for w, _ in _workers(beside[2])}
    assert other == (other[0], course.network_guarded(course.OTHER_MACHINE), ["notebooks"]), "nbval must run alone"
    # Where there is no priority to lower (Windows), every other test gets the cores left over.
    (first, beside), _, _ = course.pytest_passes(args, system="Windows", cores=cores)
    assert _workers(first[2]) == [] and "-n" not in first[2]
    assert _workers(beside[2]) == [(f"other{i}", 0) for i in range(min(4, cores - 1))]
    # One core: one pass after another, as before.
    stages = course.pytest_passes(args, system="Linux", cores=1)
    assert [len(s) for s in stages] == [1, 1, 1, 1]
    assert [s[0][2] for s in stages] == [course.browser_test_files() + ["-m", "browser"], ["notebooks"],
                                        ["tests", "-m", "not browser and not lessons and not quiet"],
                                        ["tests", "-m", "quiet"]]


def test_xdist_names_and_lowers_its_workers_as_asked(tmp_path):
    """The worker options course.py gives, in a real pytest-xdist run: the ids (and so the
    guard logs' names) and the niceness the workers get."""
    pytest.importorskip("xdist")
    (tmp_path / "test_w.py").write_text(
        "import os\n"
        "def test_one():\n"
        "    with open('worker.txt', 'w', encoding='utf-8') as f:\n"
        "        f.write('%s %d' % (os.environ['PYTEST_XDIST_WORKER'], os.nice(0) if hasattr(os, 'nice') else 0))\n",
        encoding="utf-8")
    args = course.workers(1, "other", nice=course.BESIDE_NICE)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
                          "--rootdir", str(tmp_path), *args, "test_w.py"],
                         cwd=tmp_path, capture_output=True, timeout=300)
    text = out.stdout.decode("utf-8", "replace")
    assert out.returncode == 0, text
    expected = course.BESIDE_NICE + os.nice(0) if hasattr(os, "nice") else 0
    assert (tmp_path / "worker.txt").read_text(encoding="utf-8") == f"other0 {min(expected, 19)}"


# A pass that sleeps, says so, and (given a third argument) notes when it slept, for the
# test to see whether two passes overlapped: a check of wall time alone failed on a busy
# machine (5.5 s for passes of 3 s and 2 s, Python's start-up at nice 10 beside the suite).
FAKE_PASS = ("import sys, time; t0 = time.time(); time.sleep(float(sys.argv[1])); print('pass', sys.argv[1]); "
             "sys.argv[3:] and open(sys.argv[3], 'w', encoding='utf-8').write('%r %r' % (t0, time.time())); "
             "sys.exit(int(sys.argv[2]))")


def test_passes_side_by_side_run_at_once_and_report_in_order(tmp_path, monkeypatch, capfd):
    """Two real processes: the stage takes as long as its longest pass, not their sum; the
    second's output is shown after the first's, whole; a failing pass fails the run."""
    monkeypatch.setattr(course, "ROOT", tmp_path)
    slept = [tmp_path / "first.txt", tmp_path / "second.txt"]
    stage = [("first pass: slow", {}, ["-c", FAKE_PASS, "3.0", "0", str(slept[0])]),
             ("second pass: quick", {"X": "1"}, ["-c", FAKE_PASS, "1.0", "3", str(slept[1])])]
    done = course.run_side_by_side([sys.executable], stage, [])
    (a0, a1), (b0, b1) = [map(float, p.read_text(encoding="utf-8").split()) for p in slept]
    assert b0 < a1 and a0 < b1, f"not side by side: the first slept {a0:.1f}-{a1:.1f}, the second {b0:.1f}-{b1:.1f}"
    assert [(t, s) for t, s, _ in done] == [("first pass: slow", 0), ("second pass: quick", 3)]
    # Each pass's own time: 2 s apart, more than a busy machine's start-up varies.
    assert done[0][2] >= 3.0 and 1.0 <= done[1][2] < done[0][2], done
    out = capfd.readouterr().out
    assert out.index("== first pass: slow") < out.index("== beside it: second pass: quick")
    assert out.index("pass 3.0") < out.index("== second pass: quick (beside") < out.index("pass 1.0")
    assert (tmp_path / "test-artifacts" / "test-pass-1.log").read_text(encoding="utf-8").strip() == "pass 1.0"


@pytest.mark.skipif(not hasattr(os, "nice"), reason="no process priorities here")
def test_a_pass_runs_as_much_lower_in_priority_as_its_environment_says(tmp_path, monkeypatch):
    """`--lesson`'s checkers pass (no xdist workers to carry a niceness) runs lower in priority
    beside the browser pass, as the full suite's workers do."""
    monkeypatch.setattr(course, "ROOT", tmp_path)
    said = "import os, sys; open(sys.argv[1], 'w', encoding='utf-8').write(str(os.nice(0)))"
    stage = [("at the same priority", {}, ["-c", said, str(tmp_path / "same.txt")]),
             ("lower", {course.PASS_NICE: "7"}, ["-c", said, str(tmp_path / "lower.txt")])]
    done = course.run_side_by_side([sys.executable], stage, [])
    assert [s for _, s, _ in done] == [0, 0], done
    base = os.nice(0)
    assert (tmp_path / "same.txt").read_text(encoding="utf-8") == str(base)
    assert (tmp_path / "lower.txt").read_text(encoding="utf-8") == str(min(19, base + 7))


def test_readme_makefile_and_ci_run_the_same_commands():
    readme, makefile, ci = _text("README.md"), _text("Makefile"), _text(".ci/run")
    for command in ("lab", "test"):
        assert f"python3 course.py {command}" in readme and f"py course.py {command}" in readme
    # The README's command, as a line of its own (an environment variable before it at most).
    commands = [line.split() for line in ci.splitlines()]
    assert any(c[-3:] == ["python3", "course.py", "test"] and all("=" in w for w in c[:-3])
               for c in commands), "CI must run the README's command"
    # Run as root, CI runs it again as an ordinary account (.ci/unprivileged.py): the same command,
    # less the tests left to the root pass (tests/test_ci_selection.py).
    assert "python3 .ci/unprivileged.py" in ci
    assert '["python3", "course.py", "test", *selection(clone), *sys.argv[1:]]' in _text(".ci/unprivileged.py")
    # Every make target is a thin alias: one line that runs course.py.
    recipes = re.findall(r"^[\w-]+:\n\t(.*)$", makefile, re.M)
    assert len(recipes) >= 9 and all(r.startswith("$(PY) course.py ") for r in recipes), recipes
    for recipe in recipes:
        assert course.parser().parse_args([recipe.split()[2]]).command == recipe.split()[2], recipe
    assert '"make"' not in _text("course.py"), "course.py must not need make"


# --------------------------------------------------------------------------- one set-up at a time
# A `course.py setup` whose installers each take DELAY s and write when they start and
# end (with the process's id) to a log; the environment is a fake one in a folder of the test's.
SLOW_SETUP = r"""
import os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import course
env_dir, log, delay = Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4])
course.ENVIRONMENTS[course.LEARNER] = (str(env_dir), ["requirements.txt"])
python = course.venv_python(env_dir)
python.parent.mkdir(parents=True, exist_ok=True)
python.touch()
course.installed_version = lambda python, package: None

def run(command, **kw):
    with open(log, "a", encoding="utf-8") as f:
        f.write("start %d %.6f\n" % (os.getpid(), time.time()))
    time.sleep(delay)
    with open(log, "a", encoding="utf-8") as f:
        f.write("end %d %.6f\n" % (os.getpid(), time.time()))
    return 0

course.run = run
sys.exit(course.main(["--torch-index", "pypi", "setup"]))
"""


def _slow_setup(tmp_path, delay):
    return subprocess.Popen([sys.executable, "-c", SLOW_SETUP, str(ROOT), str(tmp_path / "env"),
                             str(tmp_path / "log"), str(delay)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _log(tmp_path):
    path = tmp_path / "log"
    lines = path.read_text(encoding="utf-8").split("\n") if path.exists() else []
    return [(kind, int(pid), float(t)) for kind, pid, t in (x.split() for x in lines if x)]


def _wait_for_first_install(tmp_path, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while not _log(tmp_path):
        assert proc.poll() is None and time.monotonic() < deadline, "the first set-up never began"
        time.sleep(0.05)


def test_two_setups_at_once_install_one_after_the_other(tmp_path):
    first = _slow_setup(tmp_path, 0.6)
    _wait_for_first_install(tmp_path, first)             # it is installing: it holds the lock
    second = _slow_setup(tmp_path, 0.6)
    out2 = second.communicate(timeout=120)[0].decode("utf-8", "replace")
    out1 = first.communicate(timeout=120)[0].decode("utf-8", "replace")
    assert first.returncode == 0 and second.returncode == 0, (out1, out2)
    log = _log(tmp_path)
    installers = {pid for _, pid, _ in log}
    assert installers == {first.pid}, f"both installed (pids {installers}):\n{out1}\n{out2}"
    assert len(log) == 8, log                 # PyPI's torch: -r, the data, -e, the kernel
    starts = [t for kind, _, t in log if kind == "start"]
    ends = [t for kind, _, t in log if kind == "end"]
    assert all(s >= e for s, e in zip(starts[1:], ends)), "installers overlapped"
    lines = out2.strip().splitlines()
    waiting = [x for x in lines if "waiting" in x]
    assert len(waiting) == 1 and f"process {first.pid}" in waiting[0], lines
    assert "learner environment" in waiting[0] and "Another course.py" in waiting[0], waiting
    assert lines[-1] == "The learner environment is ready in env.", lines
    assert not any(x.startswith("Installing") for x in lines), lines


def test_a_setup_killed_midway_does_not_block_the_next(tmp_path):
    first = _slow_setup(tmp_path, 120)
    _wait_for_first_install(tmp_path, first)
    first.kill()                                         # as a closed terminal or a crash would
    first.communicate(timeout=60)
    t0 = time.monotonic()
    second = _slow_setup(tmp_path, 0.01)
    out2 = second.communicate(timeout=60)[0].decode("utf-8", "replace")
    assert second.returncode == 0, out2
    assert time.monotonic() - t0 < 30
    assert "waiting" not in out2, "a dead process's lock was waited for:\n" + out2
    assert sum(1 for kind, pid, _ in _log(tmp_path) if kind == "end" and pid == second.pid) == 4
    assert "The learner environment is ready in env (set up in" in out2


# --------------------------------------------------------------------------- an unreachable index
def _refusing_url():
    """An http URL on 127.0.0.1 whose port nothing listens on: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/whl/cpu"


def test_an_unreachable_torch_index_is_found_out_once_and_left_aside(tmp_path, monkeypatch, capsys):
    _fake_learner_venv(tmp_path, monkeypatch, course.LEARNER, reachable=False)
    _fake_learner_venv(tmp_path, monkeypatch, course.INSTRUCTOR, reachable=False)
    url = _refusing_url()
    looks = []
    real_urlopen = course.urllib.request.urlopen
    monkeypatch.setattr(course.urllib.request, "urlopen",
                        lambda *a, **kw: looks.append(a) or real_urlopen(*a, **kw))
    ran = []
    monkeypatch.setattr(course, "run", lambda command, **kw: ran.append(command) or 0)
    monkeypatch.setattr(course, "installed_version", lambda python, package: None)
    t0 = time.monotonic()
    course.ensure_environment(course.LEARNER, url)
    course.ensure_environment(course.INSTRUCTOR, url)
    assert time.monotonic() - t0 < course.PROBE_S + 2
    assert len(looks) == 1, "the index was looked at more than once"
    assert not any("--index-url" in c for c in ran), ran
    assert sum(1 for c in ran if c[-2:] == ["-r", str(ROOT / "requirements.txt")]) == 2
    said = [x for x in capsys.readouterr().out.splitlines() if url in x]
    assert len(said) == 1 and "cannot be reached" in said[0] and "pip's own index" in said[0], said
    # A second run installs nothing, though torch came from elsewhere than the index asked for.
    ran.clear()
    course.ensure_environment(course.LEARNER, url)
    assert ran == []


def test_a_reachable_torch_index_is_used(tmp_path, monkeypatch):
    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = "http://127.0.0.1:%d/whl/cpu" % server.server_address[1]
        _fake_learner_venv(tmp_path, monkeypatch, reachable=False)
        assert course.index_unreachable(url) is None    # an error page is an answer
        ran = []
        monkeypatch.setattr(course, "run", lambda command, **kw: ran.append(command) or 0)
        monkeypatch.setattr(course, "installed_version", lambda python, package: None)
        course.ensure_environment(course.LEARNER, url)
        assert ran[0][-2:] == ["--index-url", url], ran[0]
    finally:
        server.shutdown()
        server.server_close()
    # A local folder as the index: there when it exists.
    assert course.index_unreachable(tmp_path.as_uri()) is None
    assert "does not exist" in course.index_unreachable((tmp_path / "nothing").as_uri())


# --------------------------------------------------------------------------- setup all
@pytest.mark.parametrize("system, euid, servers", [
    ("Linux", 0, True), ("Linux", 1000, False), ("Darwin", 501, False), ("Windows", None, False)])
def test_setup_all_builds_every_environment_that_can_be_used_here(system, euid, servers, monkeypatch):
    monkeypatch.setattr(course.platform, "system", lambda: system)
    if euid is not None:
        monkeypatch.setattr(course.os, "geteuid", lambda: euid, raising=False)
    made = []
    monkeypatch.setattr(course, "ensure_environment", lambda name, index, base=None: made.append((name, base)))
    monkeypatch.setattr(course, "shared_python", lambda: "/usr/bin/python3")
    assert course.main(["--torch-index", "pypi", "setup", "all"]) == 0
    expected = [(course.LEARNER, None), (course.INSTRUCTOR, None)]
    assert made == expected + ([(course.SERVERS, "/usr/bin/python3")] if servers else [])
    assert course.main(["setup", "servers"]) == 0 and made[-1] == (course.SERVERS, "/usr/bin/python3")
    # The help says what `all` holds.
    text = " ".join(course.parser()._subparsers._group_actions[0].choices["setup"].format_help().split())
    assert "all: learner and instructor, and servers too on Linux as root" in text


# --------------------------------------------------------------------------- one lesson's tests
def test_one_lesson_gets_the_same_passes_for_its_own_tests():
    """`test --lesson 05`: the browser, its other tests and nbval of that notebook alone, with
    --lesson for tests/conftest.py to keep that lesson's tests (tests/test_lesson_selection.py)."""
    args = course.parser().parse_args(["test", "--lesson", "5"])
    (first, beside), (other,) = course.pytest_passes(args, system="Linux", cores=2)   # nbval alone, after
    files = course.browser_test_files()          # not the whole suite: only files with browser tests
    assert first[2][:len(files) + 4] == files + ["-m", "browser", "--lesson", "05"] and first[1] == {}
    assert {"tests/test_browser.py", "tests/test_screen_reader.py", "tests/test_keyboard_reach.py"} <= set(files)
    assert "tests/test_attention.py" not in files and "tests/test_setup.py" not in files
    assert _workers(first[2]) == [("browser0", 0), ("browser1", 0)]      # lesson 02's screen reader beside the rest
    assert first[2][-2:] == ["--dist", "worksteal"], "single tests to the two workers, not a file each"
    assert beside[1] == dict(course.NON_UTF8, COURSE_TEST_PASS="other", **{course.PASS_NICE: str(course.BESIDE_NICE)})
    assert beside[2] == ["tests", "-m", "not browser and not lessons and not quiet", "--lesson", "05"]
    # A few tests a pass: no xdist workers (each collected the whole suite again), and no
    # timing claims (the quiet stage belongs to no lesson).
    assert other[1] == course.network_guarded(course.OTHER_MACHINE) and other[2] == ["notebooks/05_transformer_block.ipynb"]
    assert [course.short_title(t) for t, _, _ in (first, beside, other)] == [
        "lesson 05: its student version in JupyterLab and headless Chromium", "lesson 05: its checkers",
        "lesson 05: nbval on a simulated other machine"]
    args = course.parser().parse_args(["test", "--lesson", "02,05"])
    _, (other,) = course.pytest_passes(args, system="Linux", cores=2)
    assert other[2] == ["notebooks/02_attention.ipynb", "notebooks/05_transformer_block.ipynb"]


def test_a_screen_reader_lesson_gets_a_pass_and_a_worker_per_test():
    """`test --lesson 02`: its two screen-reader tests (an Orca each) in a pass of their own,
    a worker each, beside the rest of its browser tests and its checkers (both lower in
    priority); every browser test is in exactly one of the two."""
    args = course.parser().parse_args(["test", "--lesson", "02,05"])
    (rest, reader, beside), (other,) = course.pytest_passes(args, system="Linux", cores=2)
    files = course.browser_test_files()
    assert rest[2][:len(files) + 4] == files + ["-m", "browser and not screen_reader", "--lesson", "02,05"]
    assert reader[2][:len(files) + 4] == files + ["-m", "browser and screen_reader", "--lesson", "02,05"]
    assert _workers(rest[2]) == [("browser0", course.BESIDE_NICE), ("browser1", course.BESIDE_NICE)]
    assert _workers(reader[2]) == [("reader0", 0), ("reader1", 0)]
    assert course.BESIDE_NICE > 0 and beside[1][course.PASS_NICE] == str(course.BESIDE_NICE)
    assert course.short_title(reader[0]) == "lessons 02, 05: lesson 02 read by a screen reader (Orca)"
    # One core, or no browser: one browser pass as before, the screen reader in it.
    (alone,), _, _ = course.pytest_passes(args, system="Linux", cores=1)
    assert "-m" in alone[2] and alone[2][alone[2].index("-m") + 1] == "browser"
    args = course.parser().parse_args(["test", "--lesson", "5"])
    assert len(course.pytest_passes(args, system="Linux", cores=2)[0]) == 2     # no screen reader in 05
    with pytest.raises(course.CourseError, match="no such lesson 13 .the lessons: 00, 01"):
        course.lesson_numbers("13")
    with pytest.raises(SystemExit):
        course.parser().parse_args(["test", "--fast", "--lesson", "05"])


# --------------------------------------------------------------------------- the test browser
def _program(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_the_browser_is_found_where_chromium_chrome_or_playwright_put_it(tmp_path):
    bin_dir = tmp_path / "bin"
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path / "home")}
    assert course.find_browser(env) == (None, None)
    own = _program(tmp_path / "home" / ".cache" / "ms-playwright" / "chromium-1200" / "chrome-linux" / "chrome")
    assert course.find_browser(env) == (own, None)                        # Playwright's own, last
    chrome = _program(bin_dir / "google-chrome")
    assert course.find_browser(env) == (chrome, None)
    chromium = _program(bin_dir / "chromium")
    assert course.find_browser(env) == (chromium, None)                   # Debian's first
    assert course.find_browser(dict(env, COURSE_CHROMIUM=chrome)) == (chrome, None)
    path, why = course.find_browser(dict(env, COURSE_CHROMIUM=str(tmp_path / "gone")))
    assert path is None and why.startswith(f"COURSE_CHROMIUM={tmp_path / 'gone'} is not a program")


NO_BROWSER = {"PATH": "", "HOME": "/nonexistent", "PLAYWRIGHT_BROWSERS_PATH": "/nonexistent",
              "PLAYWRIGHT_DOWNLOAD_HOST": "file:///nonexistent"}


def test_without_a_browser_root_installs_debians_and_says_so(monkeypatch, capsys):
    args = course.parser().parse_args(["test"])
    ran, installed = [], []
    monkeypatch.setattr(course, "run", lambda command, env=None: ran.append(command) or installed.append(1) or 0)
    monkeypatch.setattr(course, "find_browser", lambda environ, which: ("/usr/bin/chromium", None) if installed
                        else (None, None))
    which = {"apt-get": "/usr/bin/apt-get"}.get
    assert course.ensure_browser(args, NO_BROWSER, euid=0, which=lambda n, path=None: which(n)) == "/usr/bin/chromium"
    assert ran == [["/usr/bin/apt-get", "update", "-qq"], ["/usr/bin/apt-get", "install", "-y", "-qq", "chromium"]]
    said = capsys.readouterr().out.strip().splitlines()
    assert len(said) == 1 and "installing Debian's chromium" in said[0], said


def test_without_a_browser_an_account_stops_in_one_line_or_runs_the_rest_when_asked(monkeypatch):
    args = course.parser().parse_args(["test"])
    monkeypatch.setattr(course, "ensure_environment", lambda *a, **k: pytest.fail("set up anyway"))
    none = lambda name, path=None: None                                    # noqa: E731
    with pytest.raises(course.CourseError) as stop:
        course.ensure_browser(args, NO_BROWSER, euid=1000, which=none)
    line = str(stop.value)
    assert "\n" not in line and "apt-get install chromium" in line and "playwright install chromium" in line
    assert "COURSE_ALLOW_NO_BROWSER=1" in line
    assert course.ensure_browser(args, dict(NO_BROWSER, COURSE_ALLOW_NO_BROWSER="1"), euid=1000, which=none) is None
    # Then the student versions run in nbclient, and the summary says what did not run.
    (first, _), _, _ = course.pytest_passes(args, system="Linux", cores=2, browser=False)
    assert first[2][:3] == ["tests", "-m", "lessons and not browser"] and "no browser here" in first[0]
    lines = course.not_run(args, None, system="Linux", environ={}, which=none)
    assert lines[0].startswith("not run: the browser tests") and len(lines) == 1


def test_a_missing_screen_reader_is_named_in_the_summary():
    args = course.parser().parse_args(["test"])
    none = lambda name, path=None: None                                    # noqa: E731
    lines = course.not_run(args, "/usr/bin/chromium", system="Linux", environ={}, which=none)
    assert len(lines) == 1 and lines[0].startswith("skipped: the screen-reader test") and "orca" in lines[0]
    assert course.SCREEN_READER_PACKAGES in lines[0]
    assert course.not_run(args, "/usr/bin/chromium", system="Linux", environ={"COURSE_REQUIRE_SCREEN_READER": "1"},
                          which=none) == []                               # CI: the test fails instead
    lesson05 = course.parser().parse_args(["test", "--lesson", "05"])
    assert course.not_run(lesson05, "/usr/bin/chromium", system="Linux", environ={}, which=none) == []
    # One list of what the screen reader needs: the test's own.
    import screen_reader_support as sr
    assert set(course.SCREEN_READER) == set(sr.BINARIES) | set(sr.LIBEXEC)
    assert course.SCREEN_READER_PACKAGES == sr.PACKAGES


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the browser tests run on Linux")
@pytest.mark.parametrize("env, words", [
    (NO_BROWSER, "apt-get install chromium"),
    (dict(NO_BROWSER, COURSE_CHROMIUM="/nonexistent/chromium"), "COURSE_CHROMIUM=/nonexistent/chromium"),
])
def test_a_machine_without_a_browser_stops_in_seconds_with_one_line(env, words):
    """The README's second command on a machine with no Chromium (simulated: nothing on PATH, no
    Playwright browser, no download host) stops before setting up or running anything."""
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, str(ROOT / "course.py"), "test"], cwd=ROOT, env=env,
                         capture_output=True, timeout=120)
    took = time.monotonic() - t0
    err = out.stderr.decode("utf-8", "replace").strip().splitlines()
    assert out.returncode == 1 and out.stdout == b"" and len(err) == 1, (out.stdout, err)
    assert err[0].startswith("course.py: ") and words in err[0], err[0]
    assert took < 15, f"{took:.1f} s to say there is no browser"


def test_the_nbval_pass_is_guarded_against_the_network(tmp_path, monkeypatch):
    """A kernel of the nbval pass is a Python started with the pass's environment: a connection
    beyond loopback is refused and lands in the log that `course.py test` reads at the end."""
    monkeypatch.setattr(course, "NBVAL_GUARD_LOG", tmp_path / "guard.log")
    env = dict(os.environ, **course.network_guarded({}))
    env.pop("PYTHONSAFEPATH", None)
    code = ("import socket\n"
            "try:\n    socket.create_connection(('192.0.2.1', 80), timeout=2)\n"
            "except OSError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         encoding="utf-8", timeout=60)
    assert "refused" in out.stdout, out.stdout + out.stderr
    assert "192.0.2.1" in course.network_attempts()


def test_the_summary_says_where_each_pass_ran(monkeypatch, capsys):
    """`test --lesson 05`'s last lines: the checkers beside the browser pass, nbval after them."""
    monkeypatch.setattr(course, "ensure_browser", lambda args: "/usr/bin/chromium")
    monkeypatch.setattr(course, "ensure_environment", lambda *a, **k: sys.executable)
    monkeypatch.setattr(course, "network_attempts", lambda: "")
    monkeypatch.setattr(course, "not_run", lambda args, browser: [])
    monkeypatch.setattr(course, "run_side_by_side", lambda program, stage, extra: [
        (title, 1 if "nbval" in title else 0, 2.0) for title, _, _ in stage])
    assert course.main(["test", "--lesson", "05"]) == 1                 # nbval "failed": the run fails
    lines = [l.strip() for l in capsys.readouterr().out.splitlines() if " s  exit " in l]
    assert len(lines) == 3, lines
    assert lines[0].endswith("its student version in JupyterLab and headless Chromium")
    assert lines[1].endswith("its checkers (side by side with the pass above)")
    assert lines[2].startswith("2 s  exit 1") and lines[2].endswith("nbval on a simulated other machine")
