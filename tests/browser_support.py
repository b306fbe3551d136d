"""Helpers for driving the course in a real JupyterLab + headless Chromium.

Used by tests/test_browser.py and tests/test_lab_launch.py; later lessons reuse
them through the LESSONS list in test_browser.py.

* ``LabServer`` starts JupyterLab with the README's command, ``python course.py lab``
  (the learner's environment, ``tools/lab.py``: 127.0.0.1, ``port_retries=0``), on a
  free loopback port with a random token, in its own process group, and always shuts
  it down.
* ``launch_chromium`` starts Debian's Chromium (playwright's browser download is
  not available) with flags that keep it off the network.
* ``PageWatcher`` records console errors, uncaught page errors, failed requests,
  HTTP errors and any request (or WebSocket) to a host other than loopback, and
  aborts every such request before it leaves the browser: the network is off.
* ``bertviz_views`` / ``wait_bertviz_drawn`` check that the offline bertviz views
  (course_lib/bertviz_views.py) drew their SVG; ``bertviz_hover`` hovers a token of a
  head view and reads which lines stay, and how dark.
* ``open_notebook`` / ``run_all_cells`` / ``sliders`` / ``move_slider`` /
  ``output_snapshot`` drive the notebook through the UI, as a learner would.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAB_SCRIPT = ROOT / "tools" / "lab.py"
COURSE = ROOT / "course.py"
ARTIFACTS = ROOT / "test-artifacts" / "browser"

CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",                      # runs as root in containers / CI
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these Chromium keeps trying to reach Google services, which on a
    # closed network means a stream of failed connections and slow start-up.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Text @jupyter-widgets/jupyterlab-manager leaves in an output when a widget does
# not render: the placeholder, and its error views.
WIDGET_FAILURE_TEXTS = ("Loading widget", "Error displaying widget", "Failed to create view",
                        "Failed to load model class", "Failed to load view class")


# --------------------------------------------------------------------------- chromium
def require_chromium() -> Path:
    """The Chromium binary; fail (or skip when COURSE_ALLOW_NO_BROWSER=1) if missing."""
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    msg = (f"{CHROMIUM} not found: install Debian's chromium "
           f"(`apt-get install chromium`; .ci/run does this)")
    if os.environ.get("COURSE_ALLOW_NO_BROWSER") == "1":
        pytest.skip(msg + " [skipped because COURSE_ALLOW_NO_BROWSER=1]")
    pytest.fail(msg + " (set COURSE_ALLOW_NO_BROWSER=1 to skip browser tests instead)",
                pytrace=False)


def launch_chromium(playwright):
    """Headless Chromium from ``playwright.sync_api.sync_playwright()``."""
    return playwright.chromium.launch(executable_path=str(require_chromium()),
                                      headless=True, args=CHROMIUM_ARGS)


@contextlib.contextmanager
def chromium_browser():
    """Headless Debian Chromium for the length of a `with` (a module fixture's body)."""
    require_chromium()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            yield browser
        finally:
            browser.close()


# --------------------------------------------------------------------------- server
def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """JupyterLab started by ``python course.py lab`` in its own process group.

    Per-user JupyterLab state (settings, workspaces, runtime files) goes to a
    temporary directory so the learner's own settings cannot change what the
    test sees, and autosave is turned off there. So do the learner's workspace
    (`course.py lab` makes it there and serves it: the server's root) and progress file.

    Use as a context manager; on exit the server (and its kernels) are shut down.
    """

    def __init__(self, root: Path = ROOT, port: int | None = None, token: str | None = None,
                 autosave: bool = False, start_timeout: float = 60.0):
        self.root = Path(root)
        self.port = port or free_port()
        self.token = token or secrets.token_hex(16)
        self.autosave = autosave
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self._tmp = Path(tempfile.mkdtemp(prefix="course-lab-"))
        self.log_path = self._tmp / "server.log"
        # The learner's workspace `course.py lab` makes and opens, and their progress file:
        # the test's own, never a real learner's my-course/ or ~/.transformers-course.
        self.workspace = self._tmp / "my-course"
        self.progress_file = self._tmp / "progress.json"
        # Jupyter's data folder, where the notary keeps its secret and its signature database
        # (nbsignatures.db): the test's own. The shared one in ~/.local/share/jupyter is written
        # by every server and tool of the suite at once, and a server that finds SQLite's lock
        # held for 5 s (a writer at nice 10, descheduled) fails to open the notebook; a test
        # signs a notebook with `self.notary()`.
        self.data_dir = self._tmp / "data"

    def notary(self):
        """The notebook notary this server trusts by (its secret and signature database)."""
        from nbformat.sign import NotebookNotary
        return NotebookNotary(data_dir=str(self.data_dir))

    # -- URLs
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str, **query: str) -> str:
        q = "&".join([f"token={self.token}"] + [f"{k}={v}" if v else k for k, v in query.items()])
        return f"{self.base_url}{path}?{q}"

    def notebook_url(self, relpath: str) -> str:
        """URL that opens ``relpath`` (relative to the server root: the learner's workspace)
        in a fresh JupyterLab workspace (layout)."""
        return self.url("/lab/tree/" + quote(relpath), reset="")

    def api(self, path: str, method: str = "GET", timeout: float = 5.0):
        req = urllib.request.Request(self.base_url + path, method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
            return r.status, (json.loads(body) if body else None)

    def shutdown_kernels(self) -> None:
        """End every session (and its kernel); keeps memory down between lessons."""
        try:
            _, sessions = self.api("/api/sessions")
            for sess in sessions or []:
                self.api(f"/api/sessions/{sess['id']}", method="DELETE", timeout=15)
        except (OSError, urllib.error.URLError):
            pass

    # -- lifecycle
    def command(self) -> list[str]:
        return [sys.executable, str(COURSE), "lab", "--port", str(self.port),
                "--token", self.token, "--no-browser"]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        settings = self._tmp / "settings"
        env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
        env["JUPYTERLAB_WORKSPACES_DIR"] = str(self._tmp / "workspaces")
        env["JUPYTER_RUNTIME_DIR"] = str(self._tmp / "runtime")
        env["JUPYTER_DATA_DIR"] = str(self.data_dir)
        env["COURSE_WORKSPACE"] = str(self.workspace)
        env["COURSE_PROGRESS_FILE"] = str(self.progress_file)
        env.pop("JUPYTER_TOKEN", None)
        if not self.autosave:
            f = settings / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps({"autosave": False}), encoding="utf-8")
        return env

    def start(self) -> "LabServer":
        # The learner's environment, set up as `course.py lab` would (nothing to do when
        # `course.py test` already did it); outside the start-up timeout.
        subprocess.run([sys.executable, str(COURSE), "setup", "learner"], cwd=ROOT,
                       stdin=subprocess.DEVNULL, check=True, timeout=1800)
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.command(), cwd=self.root, env=self.env(),
                                     stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"course.py lab exited with {self.proc.returncode}:\n"
                                   + self.log_tail())
            try:
                status, _ = self.api("/api/status", timeout=2)
                if status == 200:
                    return self
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer within {self.start_timeout:.0f} s:\n"
                           + self.log_tail())

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def stop(self) -> None:
        """Shut down kernels and server; escalate to SIGTERM/SIGKILL of the group."""
        p = self.proc
        if p is not None and p.poll() is None:
            try:  # clean shutdown: the server stops its kernels too
                self.api("/api/shutdown", method="POST", timeout=5)
                p.wait(timeout=15)
            except Exception:
                pass
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
                if p.poll() is not None:
                    break
                try:
                    os.killpg(p.pid, sig)
                    p.wait(timeout=wait)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> "LabServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --------------------------------------------------------------------------- page watching
# Patterns (regex) for console errors, failed requests and HTTP errors that are *not*
# errors of the course. Every entry must say why it is harmless; anything else
# fails the test. With the news feed and update check off (tools/lab.py) JupyterLab
# logs no other error and requests nothing off loopback.
IGNORED: list[str] = [
    # jupyterlab-manager's known race (jupyter-widgets/ipywidgets#3231): when the kernel
    # connects it restores the saved widget state again and re-renders the views, and a
    # view that asks for its model before the restore has finished logs this error. The
    # view is then drawn from the restored state; a widget that really fails to render
    # leaves "Error displaying widget" in the page, which wait_widgets_rendered rejects.
    r"^Error: widget model not found\s+at \S+\.get_model \(http://127\.0\.0\.1:\d+/lab/extensions/"
    r"@jupyter-widgets/jupyterlab-manager/",
]


@dataclass
class PageWatcher:
    """Collects everything on a page that counts as an error."""
    allowed_hosts: tuple[str, ...] = ("127.0.0.1",)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    http_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    closing: bool = False   # set before closing the page: aborted requests are then expected

    def attach(self, page) -> "PageWatcher":
        page.course_watcher = self      # wait_widgets_rendered's reload finds it here
        page.on("console", self._on_console)
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("request", self._on_request)
        page.on("requestfailed", self._on_request_failed)
        page.on("response", self._on_response)
        page.on("websocket", self._on_websocket)
        # Network off: every request to another host is aborted in the browser (and,
        # through the handlers above, still recorded as a problem). The pattern is
        # matched inside the browser, so loopback traffic is not intercepted at all.
        page.route(self.external_url_pattern(), lambda route: route.abort("internetdisconnected"))
        return self

    def external_url_pattern(self) -> re.Pattern:
        """URLs with a scheme://host whose host is not one of ``allowed_hosts``."""
        hosts = "|".join(re.escape(h) for h in self.allowed_hosts)
        return re.compile(rf"^(?!(?:https?|wss?)://(?:{hosts})(?::[0-9]+)?(?:[/?#]|$))[a-zA-Z][a-zA-Z0-9+.-]*://")

    def _on_websocket(self, ws) -> None:
        if urlsplit(ws.url).hostname not in self.allowed_hosts:
            self.external_requests.append(ws.url)

    def _ignored(self, text: str) -> bool:
        for pattern in IGNORED:
            if re.search(pattern, text):
                self.ignored.append(text)
                return True
        return False

    def _on_console(self, msg) -> None:
        if msg.type == "error":
            loc = msg.location or {}
            text = f"{msg.text} ({loc.get('url', '')}:{loc.get('lineNumber', '')})"
            if not self._ignored(text):
                self.console_errors.append(text)

    def _on_request(self, req) -> None:
        parts = urlsplit(req.url)
        if parts.scheme in ("data", "blob", "about"):
            return
        if parts.hostname not in self.allowed_hosts:
            self.external_requests.append(req.url)

    def _on_request_failed(self, req) -> None:
        text = f"{req.method} {req.url}: {req.failure}"
        # Navigating away / closing the page aborts in-flight long polls.
        if req.failure == "net::ERR_ABORTED" and self.closing:
            return
        # An explorer's figure is an ipywidgets Image: each new PNG gets a blob: URL and the
        # old one is revoked, so a figure replaced before it finished loading aborts its
        # own in-page load (seen under load in CI, lesson 11). Nothing left the page; a blob
        # that fails any other way (a broken image) is still a problem.
        if req.failure == "net::ERR_ABORTED" and urlsplit(req.url).scheme == "blob":
            self.ignored.append(text)
            return
        if not self._ignored(text):
            self.failed_requests.append(text)

    def _on_response(self, resp) -> None:
        if resp.status >= 400:
            text = f"HTTP {resp.status} {resp.request.method} {resp.url}"
            if not self._ignored(text):
                self.http_errors.append(text)

    def problems(self) -> list[str]:
        out = []
        for name in ("page_errors", "console_errors", "failed_requests", "http_errors",
                     "external_requests"):
            out += [f"{name}: {x}" for x in getattr(self, name)]
        return out


# --------------------------------------------------------------------------- notebook UI
def open_notebook(page, server: LabServer, relpath: str, timeout_ms: int = 60_000):
    """Open ``relpath`` and wait until its kernel is idle. Returns the panel locator."""
    if not hasattr(page, "course_console"):
        # The page's console, kept for a failure's message (wait_widgets_rendered).
        page.course_console = []
        page.on("console", lambda m: page.course_console.append(f"{m.type}: {m.text[:300]}"))
    page.goto(server.notebook_url(relpath), wait_until="domcontentloaded")
    return wait_notebook_open(page, Path(relpath).name, timeout_ms)


def wait_notebook_open(page, name: str, timeout_ms: int = 60_000):
    """Wait until notebook ``name`` is the current tab and its kernel is idle (after
    ``open_notebook`` or a ``page.reload()``). Returns the panel locator."""
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").filter(
        has=page.locator(".jp-Notebook")).first
    panel.wait_for(state="visible", timeout=timeout_ms)
    # The tab of this notebook is the current one.
    page.locator(f'.lm-TabBar-tab.lm-mod-current:has-text("{name}")').first.wait_for(
        timeout=timeout_ms)
    wait_kernel_idle(page, timeout_ms)
    return panel


# The status bar item "<kernel name> | <status>"; its status comes from the live
# kernel connection (the toolbar's execution indicator says "idle" before the
# kernel has even started, so it cannot be trusted on its own).
_KERNEL_STATUS_JS = """() => {
  const item = document.querySelector('.jp-StatusBar-TextItem[title^="Change kernel for"]');
  return item ? item.textContent : '';
}"""


def kernel_status(page) -> str:
    """'Idle', 'Busy', 'Starting', ... as shown in the status bar ('' if none)."""
    text = page.evaluate(_KERNEL_STATUS_JS)
    return text.rsplit("|", 1)[1].strip() if "|" in text else ""


def wait_kernel_idle(page, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(
        """() => {
          const item = document.querySelector('.jp-StatusBar-TextItem[title^="Change kernel for"]');
          const ind = document.querySelector(
            '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
          return !!item && /\\|\\s*Idle$/.test(item.textContent.trim())
                 && !!ind && ind.getAttribute('data-status') === 'idle';
        }""", timeout=timeout_ms, polling=200)


_WATCH_RUN_JS = """() => {
  window.__courseRun = {sawStar: false};
  const nb = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
  const check = () => {
    for (const p of nb.querySelectorAll('.jp-InputPrompt')) {
      if (p.textContent.includes('*')) { window.__courseRun.sawStar = true; }
    }
  };
  new MutationObserver(check).observe(nb, {subtree: true, childList: true, characterData: true});
}"""

_RUN_DONE_JS = """() => {
  if (!window.__courseRun || !window.__courseRun.sawStar) return false;
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const ind = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  if (!ind || ind.getAttribute('data-status') !== 'idle') return false;
  const item = document.querySelector('.jp-StatusBar-TextItem[title^="Change kernel for"]');
  if (!item || !/\\|\\s*Idle$/.test(item.textContent.trim())) return false;
  for (const p of panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')) {
    if (p.textContent.includes('*')) return false;
  }
  return true;
}"""


def run_all_cells(page, timeout_ms: int = 120_000) -> None:
    """Run > Run All Cells from the menu bar, then wait until every cell has run."""
    page.evaluate(_WATCH_RUN_JS)
    page.locator('.lm-MenuBar-itemLabel:text-is("Run")').click()
    page.locator('.lm-Menu-item:has(.lm-Menu-itemLabel:text-is("Run All Cells"))').click()
    page.wait_for_function(_RUN_DONE_JS, timeout=timeout_ms, polling=250)


def code_cell_states(page) -> list[dict]:
    """Prompt, source and output text of each code cell, in notebook order, and whether
    its source is folded (JupyterLab then shows neither its prompt nor its code).

    (JupyterLab renders an error traceback like stderr, so errors are recognised
    by their text; see test_browser.py.)

    A check's verdict announces itself (course_lib/classroom/speak.py): its words leave the
    page for about a second and come back inside a live region. Read only once every verdict
    is back — read during that second, lesson 05's last check was missing ("2 checks said 'not
    solved yet' for 3 stubs").
    """
    page.wait_for_function("""() => [...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .course-said')].every(p => p.firstElementChild)""",
                           timeout=20_000)
    return page.evaluate("""() => {
      const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
      return [...panel.querySelectorAll('.jp-CodeCell')].map(c => ({
        prompt: (c.querySelector('.jp-InputPrompt') || {}).textContent || '',
        output: [...c.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent).join('\\n'),
        source: (c.querySelector('.jp-InputArea-editor') || {}).textContent || '',
        // a folded cell (source_hidden) shows a placeholder bar instead of its input
        folded: !c.querySelector('.jp-InputArea') && !!c.querySelector('.jp-Placeholder'),
      }));
    }""")


def interact_widgets(page):
    """Locator for every ``ipywidgets.interactive`` box on the current notebook."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .widget-interact")


def sliders(container):
    """Locator for the sliders (IntSlider, FloatSlider, ...) inside ``container``."""
    return container.locator(".widget-slider")


def slider_value(slider) -> str:
    return slider.locator(".widget-readout").first.inner_text()


def move_slider(slider, presses: int = 3) -> None:
    """Move a slider with the keyboard, away from whichever end it sits at."""
    handle = slider.locator(".noUi-handle").first
    now = float(handle.get_attribute("aria-valuenow"))
    hi = float(handle.get_attribute("aria-valuemax"))
    key = "ArrowLeft" if now >= hi else "ArrowRight"
    handle.focus()
    for _ in range(presses):
        handle.press(key)


def output_snapshot(container) -> dict:
    """What the output area of ``container`` shows: a digest of each image's ``src``
    (the base64 PNG matplotlib sends) and the text."""
    snap = container.evaluate("""el => {
      const out = el.querySelector('.widget-output') || el;
      return {
        images: [...out.querySelectorAll('img')].map(i => i.getAttribute('src') || ''),
        text: out.textContent,
      };
    }""")
    snap["images"] = [f"{hashlib.sha1(src.encode()).hexdigest()[:12]}:{len(src)}B"
                      for src in snap["images"]]
    return snap


def wait_output_changed(page, container, before: dict, timeout_ms: int = 30_000) -> dict:
    """Wait until the images in ``container`` differ from ``before`` and the kernel is
    idle again (a few key presses queue several updates); return the new snapshot."""
    deadline = time.monotonic() + timeout_ms / 1000
    snap = output_snapshot(container)
    while time.monotonic() < deadline:
        snap = output_snapshot(container)
        if snap["images"] and snap["images"] != before["images"] and kernel_status(page) == "Idle":
            page.wait_for_timeout(300)          # let the last queued update land
            if kernel_status(page) == "Idle":
                return output_snapshot(container)
        page.wait_for_timeout(150)
    return snap


# Text of the page as rendered, plus the full text of every output area: cells out
# of view are skipped by `content-visibility` and missing from innerText.
_FAILURE_TEXTS_JS = """texts => {
  const outputs = [...document.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent);
  const all = document.body.innerText + '\\n' + outputs.join('\\n');
  return texts.filter(t => all.includes(t));
}"""


# jupyterlab_widgets 3.0.17 (ipywidgets 8.1.9) as it opens a notebook whose kernel is starting:
# the kernel's "connected" restores the kernel's widgets (none) and marks the state restored
# while the notebook's saved widgets still wait for a second comm_info reply from the kernel.
# An output first drawn in that window waits 2 s for its model, then shows this for good
# (its renderer retries only a view that was waiting before the state was restored). Seen
# only when the machine is starved: in the full suite, lessons 02 and 03 opened from page load.
MODEL_RACE = "Error displaying widget: model not found"
MODEL_RACE_LOG = ARTIFACTS / "widget-model-race.log"


def wait_widgets_rendered(page, timeout_ms: int = 30_000, reload_on_race: bool = True) -> None:
    """Wait until no widget shows 'Loading widget...' (or an error placeholder). Where every
    one left is the upstream race above, the page is reloaded once (what a learner who sees
    it does; the kernel is running by then) and the event noted in MODEL_RACE_LOG and as a
    warning in pytest's summary."""
    try:
        page.wait_for_function(f"texts => ({_FAILURE_TEXTS_JS})(texts).length === 0",
                               arg=list(WIDGET_FAILURE_TEXTS), timeout=timeout_ms, polling=250)
    except Exception:
        left = widget_failure_texts(page)
        # Which output, and what the widget manager said: the console's errors and warnings.
        where = page.evaluate("""texts => [...document.querySelectorAll('.jp-OutputArea-output')]
            .filter(o => texts.some(t => o.textContent.includes(t)))
            .map(o => o.innerText.slice(0, 300))""", list(WIDGET_FAILURE_TEXTS))
        said = [m for m in getattr(page, "course_console", []) if not m.startswith(("log:", "debug:", "info:"))]
        message = (f"widgets still show {left} after {timeout_ms / 1000:.0f} s, in {where}; "
                   f"the console said: {said[-12:]}")
        if reload_on_race and where and all(w.strip() == MODEL_RACE for w in where):
            name = unquote(urlsplit(page.url).path.rsplit("/", 1)[-1])
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            with open(MODEL_RACE_LOG, "a", encoding="utf-8") as log:
                log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {name}: {len(where)} outputs; reloaded\n")
            warnings.warn(f"{name}: {len(where)} saved widgets hit jupyterlab_widgets' restore race "
                          f"({MODEL_RACE}); the page was reloaded once")
            # A reload aborts the page's open requests (long polls), as closing it does.
            watcher = getattr(page, "course_watcher", None)
            if watcher:
                watcher.closing = True
            page.reload(wait_until="domcontentloaded")
            wait_notebook_open(page, name)
            if watcher:
                watcher.closing = False
            return wait_widgets_rendered(page, timeout_ms, reload_on_race=False)
        raise AssertionError(message) from None


def widget_failure_texts(page) -> list[str]:
    """Any 'Loading widget...' / 'Error displaying widget' left on the page."""
    return page.evaluate(_FAILURE_TEXTS_JS, list(WIDGET_FAILURE_TEXTS))


def save_notebook(page, path: Path, timeout_ms: int = 30_000) -> None:
    """File > Save Notebook, as a learner would; wait until ``path`` on disk changed
    and the tab is no longer marked dirty."""
    before = path.stat().st_mtime_ns if path.exists() else None
    page.locator('.lm-MenuBar-itemLabel:text-is("File")').click()
    page.locator('.lm-Menu-item:has(.lm-Menu-itemLabel:text-is("Save Notebook"))').click()
    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        saved = path.exists() and path.stat().st_mtime_ns != before
        dirty = page.locator(".lm-TabBar-tab.lm-mod-current.jp-mod-dirty").count()
        if saved and not dirty:
            return
        page.wait_for_timeout(200)
    raise AssertionError(f"{path} was not saved within {timeout_ms / 1000:.0f} s")


# --------------------------------------------------------------------------- bertviz views
# course_lib/bertviz_views.py emits each view as <div id="bertviz-<uuid hex>"> plus an
# inline script that draws an <svg> into it with d3. A view "drew" when its div holds an
# <svg> with token labels (<text>) and marks (<rect>/<line>/<path>).
_BERTVIZ_JS = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  return [...panel.querySelectorAll('div[id^="bertviz-"]')].map(v => {
    const n = sel => v.querySelectorAll(sel).length;
    return {id: v.id, svg: n('svg'), text: n('svg text'), rect: n('svg rect'),
            line: n('svg line'), path: n('svg path')};
  });
}"""


def bertviz_views(page) -> list[dict]:
    """For each bertviz view on the current notebook: its id and SVG element counts."""
    return page.evaluate(_BERTVIZ_JS)


def bertviz_drawn(view: dict) -> bool:
    return view["svg"] >= 1 and view["text"] >= 2 and view["rect"] + view["line"] + view["path"] >= 1


def wait_bertviz_drawn(page, expected: int, timeout_ms: int = 30_000) -> list[dict]:
    """Scroll each bertviz view into view (cells out of view may be skipped by
    JupyterLab's windowing) and wait until ``expected`` views are on the page and every
    one has drawn its SVG. Returns the views' element counts."""
    deadline = time.monotonic() + timeout_ms / 1000
    views = bertviz_views(page)
    while True:
        page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) div[id^="bertviz-"]').evaluate_all(
            "vs => vs.forEach(v => { if (!v.querySelector('svg')) v.scrollIntoView({block: 'center'}); })")
        views = bertviz_views(page)
        if len(views) == expected and all(bertviz_drawn(v) for v in views):
            return views
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {expected} drawn bertviz views, found {len(views)}: "
                                 + json.dumps(views))
        page.wait_for_timeout(250)


# bertviz's head view draws one <line> per (head, left token, right token) in <g id="attention">,
# with stroke-opacity = weight / number of heads shown. Hovering a token on the left hides the
# group and marks that token's lines visibility="visible". Summed over heads, a right token's
# visible opacity is the head mean of the weights — what a learner sees as the darkest lines.
_HOVER_LINES_JS = """view => {
  const svg = view.querySelector('svg');
  const right = [...svg.querySelectorAll('#right text')].map(t => t.textContent);
  const sums = {};
  for (const line of svg.querySelectorAll('#attention line[visibility="visible"]')) {
    const word = right[+line.getAttribute('right-token-index')];
    sums[word] = (sums[word] || 0) + parseFloat(line.getAttribute('stroke-opacity'));
  }
  return {layer: view.querySelector('#layer').value,
          hidden: svg.querySelector('#attention').getAttribute('visibility') === 'hidden',
          left: [...svg.querySelectorAll('#left text')].map(t => t.textContent), weights: sums};
}"""


def bertviz_hover(page, view_index: int, token: str) -> dict:
    """Hover the left-column ``token`` of the ``view_index``-th bertviz head view, as a
    learner would, and read the lines left on screen. Returns {"layer": the layer shown,
    "hidden": whether the other lines were hidden, "left": the left column's tokens,
    "weights": {right token: head-mean weight of its visible lines}}."""
    view = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) div[id^="bertviz-"]').nth(view_index)
    view.scroll_into_view_if_needed()
    label = view.locator("svg #left text").filter(has_text=re.compile(rf"^{re.escape(token)}$"))
    assert label.count() == 1, f"bertviz view #{view_index}: {label.count()} left-column tokens {token!r}"
    label.hover()
    page.wait_for_timeout(200)
    result = view.evaluate(_HOVER_LINES_JS)
    page.mouse.move(1, 1)   # leave nothing highlighted
    return result


def scroll_cell_to_top(locator) -> None:
    """Scroll the notebook so the cell holding ``locator`` starts at the top."""
    locator.evaluate("el => (el.closest('.jp-Cell') || el).scrollIntoView({block: 'start'})")
    locator.page.wait_for_timeout(200)


def screenshot_bertviz(page, name: str) -> Path:
    """Screenshot of the first bertviz view's cell output (scrolled to it twice: outputs
    above it may still be growing as their images load)."""
    view = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) div[id^="bertviz-"]').first
    out = view.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea-output')][1]")
    page.mouse.move(1, 1)   # no hover highlight left over from the last click
    for _ in range(2):
        scroll_cell_to_top(view)
        page.wait_for_timeout(300)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    out.screenshot(path=str(path))
    return path


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


# --------------------------------------------------------------------------- bertviz reach
# Is the far right of a bertviz view on screen? For each view: the rightmost drawn part
# that matters (model view: the last head column; neuron view, expanded: the right-hand
# tokens after the softmax column; head view: the right-hand tokens and the head squares),
# and the visible area: the viewport cut by every ancestor that clips (the SVG itself
# included). A view that does not fit may still be reachable by scrolling a clipping
# ancestor that scrolls; the check scrolls each one to its right end and measures again.
_BERTVIZ_REACH_JS = """view => {
  const svg = view.querySelector('svg');
  const kind = view.closest('[data-bertviz-view]') ? view.closest('[data-bertviz-view]').dataset.bertvizView
             : (view.querySelector('#expanded') ? 'neuron' : (view.querySelector('#attention') ? 'head' : 'model'));
  let targets;
  if (kind === 'neuron') targets = [...svg.querySelectorAll('#expanded #rightText text')];
  else if (kind === 'head') targets = [...svg.querySelectorAll('#right text'), ...svg.querySelectorAll(':scope > g > rect')];
  else targets = [...svg.querySelectorAll('line, rect')].filter(e => e.getBoundingClientRect().width > 0);
  const right = () => Math.max(...targets.map(t => t.getBoundingClientRect().right));
  const clippers = [];
  for (let el = svg; el && el !== document.documentElement; el = el.parentElement) {
    const ox = getComputedStyle(el).overflowX;
    if (el === svg || ox !== 'visible') clippers.push(el);
  }
  const visible = () => Math.min(window.innerWidth, ...clippers.map(el => {
    const r = el.getBoundingClientRect();
    return el === svg ? r.right : r.left + el.clientLeft + el.clientWidth;
  }));
  const before = {right: right(), visible: visible()};
  let scrolled = null;
  if (before.right > before.visible + 1) {
    for (const el of clippers) if (el !== svg && el.scrollWidth > el.clientWidth) el.scrollLeft = el.scrollWidth;
    scrolled = {right: right(), visible: visible()};
  }
  return {kind, targets: targets.length, before, scrolled,
          head_numbers: [...svg.querySelectorAll('text.head-number')].map(t => t.textContent),
          squares: svg.querySelectorAll(':scope > g > rect').length};
}"""


def open_file_browser(page) -> None:
    """Make sure JupyterLab's left sidebar shows the file browser, as a learner has it."""
    browser = page.locator("#filebrowser")
    if not browser.is_visible():
        page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="filebrowser"]').click()
        browser.wait_for(state="visible", timeout=10_000)
    page.wait_for_timeout(300)


def expand_neuron_view(view) -> None:
    """Click the (+) of the first query token, as a learner does to see q, k, q×k, softmax."""
    view.locator("#collapsed #leftText > g").first.hover()
    view.locator("#collapsed #leftText > g").first.locator("rect").last.click(force=True)
    view.page.wait_for_timeout(200)


def bertviz_reach(page, view_index: int) -> dict:
    """Where the far right of the ``view_index``-th bertviz view lies against what is
    visible (see _BERTVIZ_REACH_JS); expands a neuron view first, hovering a token."""
    view = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) div[id^="bertviz-"]').nth(view_index)
    scroll_cell_to_top(view)
    if view.locator("#collapsed").count():
        expand_neuron_view(view)
        view.locator("#expanded #leftText > g").first.hover()
        page.wait_for_timeout(200)
    result = view.evaluate(_BERTVIZ_REACH_JS)
    page.mouse.move(1, 1)
    return result
