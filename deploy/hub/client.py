"""Drive the class hub from Python: start/stop it, log students in, run a lesson.

Used by tests/test_hub.py and benchmarks/class_load.py, so the tests and the
measurement exercise the same path a class does: login form -> hub -> proxy ->
the student's own server -> a kernel, over loopback only.
"""
from __future__ import annotations

import json
import struct
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import requests

HERE = Path(__file__).resolve().parent
HUB_SCRIPT = HERE / "hub.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:
    """A hub on a free loopback port, in a temporary folder; always stopped, and the Unix
    accounts it made (as root) always removed.

    `users` are the roster; `token` is the course-admin service token (random). The
    folder `base` holds `hub/` (the runtime folder) and `homes/`. As root, accounts get
    a prefix of their own (`account_prefix`), so two hubs never share one.
    """

    def __init__(self, users, runtime: Path | None = None, extra_args=(), python=sys.executable,
                 start_timeout: float = 60):
        self.users = list(users)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(16)
        # mkdtemp (mode 700) opened to passing through: students' accounts reach homes/.
        self._tmp = None if runtime else tempfile.mkdtemp(prefix="course-hub-")
        self.base = Path(runtime or self._tmp)
        self.base.mkdir(parents=True, exist_ok=True)
        self.base.chmod(0o755)
        self.runtime = self.base / "hub"
        self.homes = self.base / "homes"
        self.account_prefix = f"c{secrets.token_hex(3)}-"
        self.log_path = self.base / "hub.log"
        self.extra_args = list(extra_args)
        self.python = python
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Hub":
        env = {**os.environ, "COURSE_HUB_SERVICE_TOKEN": self.token}
        self._log = open(self.log_path, "wb")
        self.log_path.chmod(0o600)           # it holds the hub's log: nobody else's to read
        self.proc = subprocess.Popen(
            [self.python, str(HUB_SCRIPT), "--users", ",".join(self.users),
             "--port", str(self.port), "--runtime", str(self.runtime),
             "--homes", str(self.homes), "--account-prefix", self.account_prefix,
             *self.extra_args],
            stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = self.log_tail()
                self.stop()
                raise RuntimeError(f"the hub exited at start:\n{log}")
            try:
                if requests.get(self.url + "/hub/api/", timeout=2).ok:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the hub did not answer within {self.start_timeout} s:\n{self.log_tail()}")

    def __exit__(self, *exc):
        self.stop()

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM (the hub stops every student's server), then make sure nothing is left."""
        if self.proc is None:
            return
        try:
            self._stop_processes()
        finally:
            self.proc = None
            self._log.close()
            self.remove_accounts()
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)

    def remove_accounts(self) -> None:
        """The hub's own removal command (the one the guide documents); a leftover is an error."""
        if not (self.runtime / "accounts.txt").is_file():
            return
        r = subprocess.run([self.python, str(HUB_SCRIPT), "--remove-accounts",
                            "--runtime", str(self.runtime)],
                           capture_output=True, text=True, encoding="utf-8", timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"removing the hub's accounts failed: {r.stderr.strip()}")

    def _stop_processes(self) -> None:
        try:
            tree = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            tree = []
        tree += [p for p in psutil.process_iter() if self._belongs(p)]
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        for p in tree:               # servers live in sessions of their own
            try:
                p.kill()
            except psutil.Error:
                pass

    def _belongs(self, p: psutil.Process) -> bool:
        try:
            return f"127.0.0.1:{self.port}" in p.environ().get("JUPYTERHUB_BASE_URL_PUBLIC", "") \
                or str(self.base) in p.environ().get("HOME", "")
        except psutil.Error:
            return False

    # ------------------------------------------------------------ hub REST, as the course-admin service
    def api(self, method: str, path: str, **kw) -> requests.Response:
        headers = {"Authorization": f"token {self.token}", **kw.pop("headers", {})}
        return requests.request(method, f"{self.url}/hub/api{path}", headers=headers,
                                timeout=kw.pop("timeout", 30), **kw)

    def user_token(self, user: str) -> str:
        r = self.api("POST", f"/users/{user}/tokens", json={"note": "course tests", "expires_in": 3600})
        r.raise_for_status()
        return r.json()["token"]

    def start_server(self, user: str, timeout: float = 120) -> None:
        r = self.api("POST", f"/users/{user}/server")
        if r.status_code not in (201, 202, 400):   # 400: already running
            raise RuntimeError(f"starting {user}'s server: {r.status_code} {r.text[:200]}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self.api("GET", f"/users/{user}").json()
            server = info.get("servers", {}).get("")
            if server and server.get("ready"):
                return
            time.sleep(0.5)
        raise TimeoutError(f"{user}'s server not ready within {timeout} s:\n{self.log_tail()}")

    def server_processes(self, user: str) -> list[psutil.Process]:
        """The student's single-user server and its kernels."""
        for p in psutil.process_iter(["cmdline"]):
            try:
                if "jupyterhub-singleuser" in " ".join(p.info["cmdline"] or []) \
                        and p.environ().get("JUPYTERHUB_USER") == user \
                        and self._belongs(p):
                    return [p, *p.children(recursive=True)]
            except psutil.Error:
                continue
        return []

    def rss(self, user: str) -> int:
        total = 0
        for p in self.server_processes(user):
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total


def login(hub_url: str, user: str, password: str, timeout: float = 120) -> requests.Session:
    """Log in through the hub's form, as a browser does; the session carries the cookies.
    Raises PermissionError if the hub refuses the password."""
    s = requests.Session()
    s.get(f"{hub_url}/hub/login", timeout=timeout)
    r = s.post(f"{hub_url}/hub/login", timeout=timeout,
               data={"username": user, "password": password, "_xsrf": s.cookies.get("_xsrf", "")})
    if "/hub/login" in r.url and r.status_code in (200, 403):
        raise PermissionError(f"the hub refused {user}'s login")
    return s


# ------------------------------------------------------------------ running a lesson through a kernel
@dataclass
class Run:
    """One Run All of a notebook through a student's kernel."""

    user: str
    cells: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    kernel_died: bool = False
    failure: str = ""

    @property
    def completed(self) -> bool:
        return not self.failure and not self.kernel_died and not self.errors


def _msg(msg_type: str, content: dict, session: str) -> dict:
    return {"header": {"msg_id": uuid.uuid4().hex, "username": "course", "session": session,
                       "msg_type": msg_type, "version": "5.3"},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"}


def decode_frame(frame) -> dict:
    """One kernel-websocket frame as a message dict. A message with binary buffers (an
    image widget's PNG) comes as a binary frame, read with jupyter_server's own decoder."""
    from jupyter_server.services.kernels.connection.base import deserialize_binary_message

    if isinstance(frame, str):
        return json.loads(frame)
    try:
        return deserialize_binary_message(frame)
    except (ValueError, struct.error, UnicodeDecodeError) as e:
        raise ValueError(f"a binary kernel message of {len(frame)} bytes that does not parse: {e}") from None


def run_notebook(hub_url: str, user: str, token: str, path: str, cell_timeout: float = 300,
                 allowed_error_cells=()) -> Run:
    """Open `path` (relative to the student's home) as JupyterLab does — a session,
    a kernel — and execute every code cell in order over the kernel websocket."""
    import websocket

    run = Run(user)
    auth = {"Authorization": f"token {token}"}
    base = f"{hub_url}/user/{user}"
    t0 = time.perf_counter()
    try:
        nb = requests.get(f"{base}/api/contents/{path}", headers=auth, timeout=60)
        nb.raise_for_status()
        cells = [c for c in nb.json()["content"]["cells"] if c["cell_type"] == "code"]
        r = requests.post(f"{base}/api/sessions", headers=auth, timeout=120, json={
            "path": path, "type": "notebook", "name": Path(path).name,
            "kernel": {"name": "transformers-course"}})
        r.raise_for_status()
        sess = r.json()
    except (requests.RequestException, KeyError, ValueError) as e:
        run.failure = f"{type(e).__name__}: {e}"
        run.seconds = time.perf_counter() - t0
        return run
    kid, session = sess["kernel"]["id"], uuid.uuid4().hex
    ws_url = base.replace("http", "ws", 1) + f"/api/kernels/{kid}/channels"
    try:
        ws = websocket.create_connection(ws_url, header=[f"Authorization: token {token}"],
                                         timeout=cell_timeout)
        for i, cell in enumerate(cells):
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            req = _msg("execute_request", {"code": src, "silent": False, "store_history": True,
                                           "allow_stdin": False, "stop_on_error": True}, session)
            ws.send(json.dumps(req))
            run.cells += 1
            replied = idle = False
            while not (replied and idle):
                m = decode_frame(ws.recv())
                if m.get("parent_header", {}).get("msg_id") != req["header"]["msg_id"]:
                    if m.get("msg_type") == "status" and \
                            m["content"].get("execution_state") in ("dead", "restarting"):
                        run.kernel_died = True
                        raise RuntimeError("kernel died")
                    continue
                kind = m["msg_type"]
                if kind == "execute_reply":
                    replied = True
                    tags = cell.get("metadata", {}).get("tags", [])
                    if m["content"]["status"] != "ok" and "raises-exception" not in tags:
                        run.errors.append(f"cell {i}: {m['content'].get('ename')}: "
                                          f"{m['content'].get('evalue', '')[:200]}")
                elif kind == "status" and m["content"]["execution_state"] == "idle":
                    idle = True
                elif kind == "status" and m["content"]["execution_state"] in ("dead", "restarting"):
                    run.kernel_died = True
                    raise RuntimeError("kernel died")
        ws.close()
    except Exception as e:   # noqa: BLE001 — any failure is a result of the run, reported
        if not run.kernel_died:
            run.failure = f"{type(e).__name__}: {e}"[:300]
    finally:
        run.seconds = time.perf_counter() - t0
        try:
            requests.delete(f"{base}/api/sessions/{sess['id']}", headers=auth, timeout=30)
        except requests.RequestException:
            pass
    return run


# ------------------------------------------------------------------ a kernel kept open
@dataclass
class Reply:
    """What one execute_request gave: its status, the text it printed, a dead kernel."""

    status: str = ""
    text: str = ""
    kernel_died: bool = False


class Kernel:
    """A kernel of the student's server, open until closed (as a notebook left open in
    JupyterLab): run code in it cell by cell."""

    def __init__(self, hub_url: str, user: str, token: str, timeout: float = 120):
        import websocket

        self.base, self.auth = f"{hub_url}/user/{user}", {"Authorization": f"token {token}"}
        r = requests.post(f"{self.base}/api/kernels", headers=self.auth, timeout=timeout,
                          json={"name": "transformers-course"})
        r.raise_for_status()
        self.id, self.session = r.json()["id"], uuid.uuid4().hex
        self.ws = websocket.create_connection(
            self.base.replace("http", "ws", 1) + f"/api/kernels/{self.id}/channels",
            header=[f"Authorization: token {token}"], timeout=timeout)

    def run(self, code: str) -> Reply:
        req = _msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                       "allow_stdin": False, "stop_on_error": True}, self.session)
        self.ws.send(json.dumps(req))
        reply, idle = Reply(), False
        while not (reply.status and idle):
            m = decode_frame(self.ws.recv())
            if m.get("msg_type") == "status" and \
                    m["content"].get("execution_state") in ("dead", "restarting"):
                reply.kernel_died = True
                return reply
            if m.get("parent_header", {}).get("msg_id") != req["header"]["msg_id"]:
                continue
            kind, content = m["msg_type"], m["content"]
            if kind == "execute_reply":
                reply.status = content["status"]
                if content["status"] == "error":
                    reply.text += f"{content.get('ename')}: {content.get('evalue')}\n"
            elif kind == "stream":
                reply.text += content["text"]
            elif kind == "error":
                reply.text += f"{content['ename']}: {content['evalue']}\n"
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
        return reply

    def settle(self, timeout: float = 60) -> None:
        """Wait until the kernel answers (a restart done), and drop the messages so far.
        It is asked on its own channel (kernel_info_request, again every 2 s until answered),
        not by the server's REST model: a kernel the memory limit stopped and the server
        restarted stayed "starting" there until it was next spoken to (each wait ran its
        whole 60 s, 2 minutes of a hub test)."""
        import websocket

        asked: set[str] = set()
        deadline = time.monotonic() + timeout
        self.ws.settimeout(0.5)
        try:
            while True:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"kernel {self.id} did not answer within {timeout:.0f} s")
                req = _msg("kernel_info_request", {}, self.session)
                asked.add(req["header"]["msg_id"])
                self.ws.send(json.dumps(req))
                until = time.monotonic() + 2
                answered = False
                while not answered and time.monotonic() < until:
                    try:
                        m = decode_frame(self.ws.recv())
                    except websocket.WebSocketTimeoutException:
                        continue
                    answered = (m.get("msg_type") == "kernel_info_reply"
                                and m.get("parent_header", {}).get("msg_id") in asked)
                if answered:
                    break
            self.ws.settimeout(1)
            while True:                     # what is still on its way (late answers too)
                self.ws.recv()
        except websocket.WebSocketTimeoutException:
            pass
        finally:
            self.ws.settimeout(None)

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            try:
                requests.delete(f"{self.base}/api/kernels/{self.id}", headers=self.auth, timeout=30)
            except requests.RequestException:
                pass
