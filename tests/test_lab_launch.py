"""tools/lab.py (what `make lab` runs): JupyterLab on 127.0.0.1 only, and a busy
port stops it with one line before Jupyter starts."""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request

import psutil
import pytest

import browser_support as bs

LAB = str(bs.LAB_SCRIPT)


def _fake_jupyterlab(tmp_path):
    """A `jupyterlab` package that only records that it was started: put first on
    PYTHONPATH, it shows whether lab.py went on to exec `python -m jupyterlab`."""
    pkg = tmp_path / "fake" / "jupyterlab"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    marker = tmp_path / "jupyter-started"
    (pkg / "__main__.py").write_text(textwrap.dedent(f"""
        import json, sys
        open({str(marker)!r}, "w", encoding="utf-8").write(json.dumps(sys.argv[1:]))
    """), encoding="utf-8")
    env = dict(os.environ, COURSE_WORKSPACE=str(tmp_path / "my-course"))   # never the learner's
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "fake")] +
                                        [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env, marker


@pytest.mark.parametrize("bind_host", ["127.0.0.1", "0.0.0.0"])
def test_busy_port_gives_one_line_and_exit_1(tmp_path, bind_host):
    env, marker = _fake_jupyterlab(tmp_path)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind((bind_host, 0))
        busy.listen()
        port = busy.getsockname()[1]
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, LAB, "--port", str(port), "--no-browser"],
                           capture_output=True, text=True, encoding="utf-8", env=env, timeout=60)
        elapsed = time.monotonic() - t0
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert str(port) in lines[0] and "busy" in lines[0], lines[0]
    assert "Traceback" not in r.stderr
    assert not marker.exists(), "lab.py started Jupyter although the port was busy"
    assert elapsed < 30, f"a busy port took {elapsed:.1f} s to report"


def test_free_port_execs_jupyterlab_on_loopback(tmp_path):
    """The command lab.py hands over to (checked without starting a real server): JupyterLab
    on the learner's own copy of the course, made on first run, at lesson 00."""
    env, marker = _fake_jupyterlab(tmp_path)
    env["COURSE_WORKSPACE"] = str(tmp_path / "my-course")
    port = bs.free_port()
    r = subprocess.run([sys.executable, LAB, "--port", str(port), "--no-browser"],
                       capture_output=True, text=True, encoding="utf-8", env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Your own copy of the course is in " + str(tmp_path / "my-course")), r.stdout
    args = json.loads(marker.read_text(encoding="utf-8"))
    assert "--ServerApp.ip=127.0.0.1" in args
    assert f"--ServerApp.port={port}" in args
    assert "--ServerApp.port_retries=0" in args
    assert "--no-browser" in args
    assert f"--ServerApp.root_dir={tmp_path / 'my-course'}" in args
    assert args[-1] == "notebooks/00_start_here.ipynb"
    # The address Jupyter prints and opens is lesson 00's, not the Launcher's (issue 45).
    assert "--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb" in args
    assert (tmp_path / "my-course" / "notebooks" / "00_start_here.ipynb").is_file()


def test_instructor_opens_the_lessons_with_their_solutions_on_purpose(tmp_path):
    env, marker = _fake_jupyterlab(tmp_path)
    env["COURSE_WORKSPACE"] = str(tmp_path / "my-course")
    r = subprocess.run([sys.executable, LAB, "--port", str(bs.free_port()), "--no-browser", "--instructor"],
                       capture_output=True, text=True, encoding="utf-8", env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "every solution is in sight" in r.stdout
    args = json.loads(marker.read_text(encoding="utf-8"))
    assert f"--ServerApp.root_dir={bs.ROOT}" in args and args[-1] == "notebooks/00_start_here.ipynb"
    assert not (tmp_path / "my-course").exists(), "--instructor makes no workspace"


def _listening(pid: int, port: int) -> list[str]:
    """host addresses on which process ``pid`` listens on ``port``."""
    proc = psutil.Process(pid)
    conns = proc.net_connections(kind="inet")
    return sorted({c.laddr.ip for c in conns
                   if c.status == psutil.CONN_LISTEN and c.laddr.port == port})


@pytest.mark.slow
def test_lab_serves_on_loopback_only():
    with bs.LabServer() as server:
        # It answers on 127.0.0.1, and serves the JupyterLab page there.
        status, info = server.api("/api/status")
        assert status == 200 and "started" in info
        with urllib.request.urlopen(server.url("/lab"), timeout=10) as r:
            assert r.status == 200
            assert b"JupyterLab" in r.read()
        # lab.py exec'd Jupyter in place (same pid); its listening socket for this
        # port is bound to 127.0.0.1, not 0.0.0.0 / :: / another interface.
        assert _listening(server.proc.pid, server.port) == ["127.0.0.1"]
        listening = {(c.laddr.ip, c.laddr.port)
                     for c in psutil.Process(server.proc.pid).net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN}
        assert all(ip == "127.0.0.1" for ip, _ in listening), listening
        log = server.log_text()
        # The address it prints is lesson 00 of the learner's workspace (the README's promise),
        # and the server's root leads there too.
        lesson00 = f"http://127.0.0.1:{server.port}/lab/tree/notebooks/00_start_here.ipynb?token="
        assert lesson00 in log, server.log_tail()
        assert f"http://127.0.0.1:{server.port}/lab?token=" not in log, server.log_tail()
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/")
        where = conn.getresponse().getheader("Location", "")
        conn.close()
        assert where.split("?")[0].endswith("/lab/tree/notebooks/00_start_here.ipynb"), where
        assert "0.0.0.0" not in log
