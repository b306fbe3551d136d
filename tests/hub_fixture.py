"""One real class hub for the session, shared by tests/test_hub.py and
tests/test_hub_isolation.py (a hub takes a minute to start on a busy 2-core machine).

Run as root, the hub makes a Unix account per student (a random prefix of its own, so
two test runs never share one) and the servers run from .venv-servers, which
`python3 course.py test` builds from a Python every account can run. Whatever happens,
the accounts are removed when the session ends — by the hub's own removal command,
then checked here, with a last-resort userdel for any left over.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy" / "hub"))
import client  # noqa: E402

LESSON00 = "notebooks/00_start_here.ipynb"
PASSWORDS = {"alice": "alice-pass-1", "bob": "bob-pass-22", "teacher": "teacher-pass-3"}
SERVERS_ENV = ROOT / ".venv-servers"
MEM_LIMIT_GB = 4
PIDS_LIMIT = 128
FILE_LIMIT_MB = 256


def _leftover_accounts(prefix: str) -> list[str]:
    import pwd                      # Unix only; this file is imported on every system

    return [e.pw_name for e in pwd.getpwall() if e.pw_name.startswith(prefix)]


@pytest.fixture(scope="session")
def hub():
    extra = ["--cull-timeout", "600", "--admin", "teacher"]
    if os.geteuid() == 0:
        if not (SERVERS_ENV / "bin" / "jupyterhub-singleuser").is_file():
            pytest.skip("as root, students' servers run as their own accounts from "
                        ".venv-servers: `python3 course.py test` builds it")
        extra += ["--servers-env", str(SERVERS_ENV), "--mem-limit", f"{MEM_LIMIT_GB}G",
                  "--cpu-limit", "1", "--pids-limit", str(PIDS_LIMIT),
                  "--file-limit", f"{FILE_LIMIT_MB}M"]
    else:                         # one Unix user for all: the tests' students trust each other
        extra += ["--shared-unix-user"]
    h = client.Hub(["alice", "bob"], extra_args=extra)
    # Bob's folder already holds his own edited lesson 00 (from an earlier term,
    # or a copy he made): it must survive his first login untouched.
    bob_lesson = h.homes / "bob" / LESSON00
    bob_lesson.parent.mkdir(parents=True)
    nb = nbformat.read(ROOT / LESSON00, 4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("Bob's notes"))
    nbformat.write(nb, bob_lesson)
    h.bob_lesson_bytes = bob_lesson.read_bytes()
    try:
        with h:
            yield h
    finally:
        left = _leftover_accounts(h.account_prefix)
        for name in left:                               # last resort; the test still fails
            subprocess.run([shutil.which("userdel", path="/usr/sbin:/sbin") or "userdel", name],
                           capture_output=True, timeout=60)
        assert not left, f"the hub's removal command left accounts behind: {left}"


# ------------------------------------------------------------------ running code as a student
def started(hub, user: str) -> str:
    """The user's server running; their API token (made once)."""
    hub.start_server(user)
    tokens = hub.__dict__.setdefault("tokens", {})
    if user not in tokens:
        tokens[user] = hub.user_token(user)
    return tokens[user]


def put_notebook(hub, user: str, token: str, name: str, code: str) -> None:
    """Save a one-cell notebook in the user's home through their own server (as them)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    r = requests.put(f"{hub.url}/user/{user}/api/contents/{name}",
                     headers={"Authorization": f"token {token}"}, timeout=60,
                     json={"type": "notebook", "format": "json", "content": nb})
    assert r.status_code in (200, 201), r.text[:300]


def run_as_student(hub, user: str, name: str, code: str) -> client.Run:
    token = started(hub, user)
    put_notebook(hub, user, token, name, code)
    return client.run_notebook(hub.url, user, token, name, cell_timeout=120)
