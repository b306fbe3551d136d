"""A real screen reader for the tests: Orca reading Chromium on a virtual display.

`ScreenReader` starts, in a temporary home of its own: a D-Bus session bus, Xvfb, openbox
(keyboard focus follows the one window), the AT-SPI bus launcher and registry with
`org.a11y.Status` IsEnabled/ScreenReaderEnabled set, and Orca with `--debug-file`, whose
lines "SPEECH DISPATCHER: Speaking '…'" are the transcript: the text Orca sends to
speech-dispatcher. There is no sound card, so speech-dispatcher is given
`AudioOutputMethod "libao"` and libao `default_driver=null` (its default "pulse" output
makes Orca hang after "Loading. Please wait."); Orca's settings are its defaults but two: it does
not start reading a page when the page loads (Orca 43 can be left stuck "reading" an empty
page), and it speaks at its fastest rate (less sound to make: see `_home`). Two
ScreenReaders can run at once (`orca_command`). `chromium_app(url)` opens a URL in an app
window of Debian's Chromium with `--force-renderer-accessibility`, the way a learner's
browser opens it (the page has the keyboard focus), and connects playwright to it over
CDP to look at the page (never to press keys: keys go through X with xdotool, as a
learner's do, so Orca hears them).

Orca is slow on a busy 2-core machine (1-5 s per key): `press` waits until Orca has said
something and then been quiet for `quiet` seconds, or `timeout` seconds.

Debian packages (apt-get install): see PACKAGES; `require()` skips with that line when one
is missing (fails instead when COURSE_REQUIRE_SCREEN_READER=1).
"""
from __future__ import annotations

import html
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

PACKAGES = ("xvfb orca at-spi2-core dbus-x11 speech-dispatcher speech-dispatcher-espeak-ng espeak-ng "
            "xdotool python3-pyatspi gir1.2-atspi-2.0 libatk-adaptor openbox")
INSTALL = f"apt-get install -y --no-install-recommends {PACKAGES}"
BINARIES = ("Xvfb", "orca", "xdotool", "openbox", "dbus-daemon", "gdbus", "speech-dispatcher")
LIBEXEC = ("/usr/libexec/at-spi-bus-launcher", "/usr/libexec/at-spi2-registryd")
MATH_ITALIC = re.compile("[\U0001D400-\U0001D7FF]")

# One key press as Orca's debug log records it: the key, then (inside the block) where Orca's
# focus was, whether Orca kept the key for itself (browse mode) and whether it was in focus mode.
_KEY_BLOCK = re.compile(r"vvvvv PROCESS ATSPI_KEY_PRESSED_EVENT: '([^']+)' \(\d+\) vvvvv\n(.*?)\^\^\^\^\^", re.S)

# One utterance; a text with a line break (a check's verdict and its "Stuck?" line) spans lines.
_SPOKEN = re.compile(r"SPEECH DISPATCHER: Speaking '(.*?)'[ \t]*$", re.M | re.S)


def missing() -> list[str]:
    """What of the screen-reader stack is not installed here."""
    gone = [b for b in BINARIES if shutil.which(b) is None]
    gone += [p for p in LIBEXEC if not os.access(p, os.X_OK)]
    return gone


def require() -> None:
    """Skip (or, with COURSE_REQUIRE_SCREEN_READER=1, fail) when the stack is missing."""
    gone = missing()
    if not gone:
        return
    msg = f"the screen-reader test needs {', '.join(gone)}: on Debian/Ubuntu, as root: {INSTALL}"
    if os.environ.get("COURSE_REQUIRE_SCREEN_READER") == "1":
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


# Orca's launcher (/usr/bin/orca) refuses to start while another Orca of the same user runs
# (`pgrep -u $UID -x orca`). Each ScreenReader has a display, D-Bus, AT-SPI bus and home of
# its own, as another user's would, so two can read side by side (the screen-reader tests
# are two, run at once by `course.py test --lesson 02`): the launcher is run here with that
# one check answered "none", and nothing else changed.
ORCA_BESIDE_OTHERS = (
    "import sys\n"
    "path = sys.argv[1]\n"
    "sys.argv = [path] + sys.argv[2:]\n"
    "launcher = {'__name__': 'orca_launcher', '__file__': path}\n"
    "exec(compile(open(path, encoding='utf-8').read(), path, 'exec'), launcher)\n"
    "launcher['otherOrcas'] = lambda: []\n"
    "sys.exit(launcher['main']())\n")


def orca_command(*args: str) -> list[str]:
    """The command that starts Orca with `args`, beside any other Orca of this user: the
    launcher's own interpreter (its #! line: Orca's modules are that Python's) running
    ORCA_BESIDE_OTHERS."""
    orca = shutil.which("orca")
    if orca is None:
        raise RuntimeError(f"orca is not installed: {INSTALL}")
    with open(orca, "rb") as f:
        first = f.readline().decode("utf-8", "replace")
    python = first[2:].split()[0] if first.startswith("#!") and "python" in first else "python3"
    return [python, "-c", ORCA_BESIDE_OTHERS, orca, *args]


def utterances_of(log_text: str) -> list[str]:
    """The texts Orca spoke, in order (its SSML marks dropped)."""
    out = []
    for m in _SPOKEN.finditer(log_text):
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).split())
        if text:
            out.append(text)
    return out


class ScreenReader:
    """Orca on a virtual display (see the module doc). Use as a context manager."""

    def __init__(self, width: int = 1366, height: int = 768):
        self.size = (width, height)
        self.tmp = Path(tempfile.mkdtemp(prefix="course-orca-"))
        self.log = self.tmp / "orca-debug.log"
        self.display = ""                  # Xvfb picks a free one (start)
        self._procs: list[subprocess.Popen] = []
        self._mark = 0
        self.env: dict[str, str] = {}

    # -- set-up
    def _home(self) -> dict[str, str]:
        home = self.tmp / "home"
        config = home / ".config"
        config.mkdir(parents=True)
        runtime = self.tmp / "run"
        runtime.mkdir(mode=0o700)
        speechd = config / "speech-dispatcher"
        shutil.copytree("/etc/speech-dispatcher", speechd)
        conf = speechd / "speechd.conf"
        conf.write_text(conf.read_text(encoding="utf-8")
                        + '\nAudioOutputMethod "libao"\nDefaultModule espeak-ng\n', encoding="utf-8")
        (home / ".libao").write_text("default_driver=null\n", encoding="utf-8")
        # Orca's settings: its defaults, but for "Automatically start speaking a page when it is
        # first loaded". Orca 43 starts that reading when JupyterLab's page reports it has loaded;
        # on a busy machine the page is still empty then, the reading stops without ending
        # (its debug log: "SayAll called", no "textLines complete"), and Orca believes it is
        # reading from then on: it never switches to focus mode, so an arrow key on a slider
        # moves Orca's caret, not the slider (CI, 2026-12-07; reproduced here beside 3 busy loops).
        orca_dir = home / ".local" / "share" / "orca"
        orca_dir.mkdir(parents=True)
        #
        # And the fastest speech rate: the test reads what Orca sends to speech (its debug log),
        # and espeak-ng makes each utterance's sound (thrown away here) at the CPU's pace: at
        # the default rate `top` showed speech-dispatcher at 41-47 % of a core at moments beside two
        # Orcas (at this rate: 9-10 s of CPU each in a whole `--lesson 02`). Orca's four
        # voices, as its settings.py has them, each faster (one missing, Orca stopped handling
        # keys that speak with it: Shift+H echoed "left shift" and moved nowhere).
        fast = {"established": True, "rate": 99}
        voices = {"default": fast, "uppercase": dict(fast, **{"average-pitch": 7.0}),
                  "hyperlink": fast, "system": fast}
        ours = {"sayAllOnLoad": False, "voices": voices}
        (orca_dir / "user-settings.conf").write_text(json.dumps({
            "general": ours, "pronunciations": {}, "keybindings": {},
            "profiles": {"default": {"profile": ["Default", "default"], **ours}}}),
            encoding="utf-8")
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
        return dict(keep, HOME=str(home), XDG_CONFIG_HOME=str(config), XDG_RUNTIME_DIR=str(runtime),
                    XDG_DATA_HOME=str(home / ".local" / "share"), XDG_CACHE_HOME=str(home / ".cache"),
                    LANG=os.environ.get("LANG", "C.UTF-8"))

    def _start(self, cmd, **kw) -> subprocess.Popen:
        p = subprocess.Popen(cmd, env=self.env, stdin=subprocess.DEVNULL,
                             stdout=kw.pop("stdout", subprocess.DEVNULL), stderr=subprocess.STDOUT,
                             start_new_session=True, **kw)
        self._procs.append(p)
        return p

    def start(self) -> "ScreenReader":
        self.env = self._home()
        # Xvfb chooses a free display and writes its number to a pipe: two screen readers
        # starting at once never pick the same one.
        read_end, write_end = os.pipe()
        try:
            self._start(["Xvfb", "-displayfd", str(write_end), "-screen", "0",
                         f"{self.size[0]}x{self.size[1]}x24", "-nolisten", "tcp"], pass_fds=(write_end,))
            os.close(write_end)
            write_end = None
            self.display = f":{self._read_display(read_end)}"
        finally:
            os.close(read_end)
            if write_end is not None:
                os.close(write_end)
        self.env["DISPLAY"] = self.display
        bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"], env=self.env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, encoding="utf-8", start_new_session=True)
        self._procs.append(bus)
        self.env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().strip()
        self._start(["openbox"])
        self._start([LIBEXEC[0], "--launch-immediately"])
        self._wait(self._a11y_bus_up, 15, "the AT-SPI bus")
        for prop in ("IsEnabled", "ScreenReaderEnabled"):
            subprocess.run(["gdbus", "call", "--session", "--dest", "org.a11y.Bus", "--object-path",
                            "/org/a11y/bus", "--method", "org.freedesktop.DBus.Properties.Set",
                            "org.a11y.Status", prop, "<true>"], env=self.env, check=True,
                           capture_output=True, timeout=15)
        self._start([LIBEXEC[1]])
        self._start(orca_command(f"--debug-file={self.log}"), stdout=open(self.tmp / "orca.out", "wb"))
        self._wait(lambda: self.transcript(), 60, "Orca's first words")
        return self

    @staticmethod
    def _read_display(fd: int, seconds: float = 15) -> str:
        """The display number Xvfb writes to `fd` once it accepts connections."""
        got = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            deadline = time.monotonic() + seconds
            while not got.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise RuntimeError(f"Xvfb did not come up within {seconds} s")
                chunk = os.read(fd, 16)
                if not chunk:
                    raise RuntimeError("Xvfb exited before it chose a display")
                got += chunk
        return got.decode("ascii").strip()

    def _a11y_bus_up(self) -> bool:
        r = subprocess.run(["gdbus", "call", "--session", "--dest", "org.a11y.Bus", "--object-path",
                            "/org/a11y/bus", "--method", "org.a11y.Bus.GetAddress"],
                           env=self.env, capture_output=True, timeout=10)
        return r.returncode == 0

    @staticmethod
    def _wait(ready, seconds, what) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} did not come up within {seconds} s")

    def stop(self) -> None:
        for p in reversed(self._procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in reversed(self._procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        keep = os.environ.get("COURSE_ORCA_DEBUG_COPY")      # where to keep Orca's debug log, if set
        if keep and self.log.exists():
            shutil.copy(self.log, keep)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "ScreenReader":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what Orca said
    def transcript(self) -> list[str]:
        try:
            return utterances_of(self.log.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return []

    def key_decisions(self, key: str, last: int = 3) -> list[str]:
        """What Orca did with the last `last` presses of `key`, from its debug log: e.g.
        "Right at [slider | d_k]: kept by Orca: False (Script indication), focus mode: True"
        (a key Orca keeps in browse mode moves its own caret, not the control)."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        out = []
        for name, block in _KEY_BLOCK.findall(text):
            if name != key:
                continue
            where = re.search(r"LOCATION: (.*)", block)
            kept = re.search(r"CONSUME:\s+(.*)", block)
            mode = re.search(r"_inFocusMode: (\w+)", block)
            out.append(f"{key} at {where.group(1).strip() if where else '?'}: kept by Orca: "
                       f"{kept.group(1).strip() if kept else '?'}, focus mode: {mode.group(1) if mode else '?'}")
        return out[-last:]

    def said(self) -> list[str]:
        """What Orca said since the last call."""
        words = self.transcript()
        new, self._mark = words[self._mark:], len(words)
        return new

    def settle(self, quiet: float = 1.5, timeout: float = 12.0, first: float | None = None) -> list[str]:
        """Wait until Orca said something and was then quiet for `quiet` s (or `timeout` s
        passed; `first`: give up after that many seconds of silence); returns what it said."""
        start = time.monotonic()
        count, changed = len(self.transcript()), None
        while time.monotonic() - start < timeout:
            time.sleep(0.25)
            n = len(self.transcript())
            if n != count:
                count, changed = n, time.monotonic()
            elif changed is not None and time.monotonic() - changed >= quiet:
                break
            elif changed is None and first is not None and time.monotonic() - start >= first:
                break
        return self.said()

    # -- keys, through X as a learner's
    def press(self, key: str, quiet: float = 1.5, timeout: float = 12.0, first: float | None = 6.0) -> list[str]:
        """Press `key` (xdotool's names: Tab, shift+Tab, Right, Insert+a) and return what
        Orca said about it."""
        self.said()
        subprocess.run(["xdotool", "key", "--clearmodifiers", key], env=self.env, check=True, timeout=15)
        return self.settle(quiet, timeout, first)

    # -- the browser
    def chromium_app(self, url: str, chromium: str, args, debug_port: int) -> subprocess.Popen:
        """Chromium showing `url` in an app window (no toolbar: the page has the focus)."""
        return self._start([chromium, *args, "--force-renderer-accessibility", f"--user-data-dir={self.tmp / 'chromium'}",
                            f"--remote-debugging-port={debug_port}", "--window-position=0,0",
                            f"--window-size={self.size[0]},{self.size[1]}", f"--app={url}"])
