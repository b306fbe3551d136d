"""The network guard refuses non-loopback connections, in this process and in kernels."""
import os
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.allow_network_attempt

PROBE = """
import socket
try:
    socket.create_connection(("10.255.255.1", 80), timeout=2)
    print("CONNECTED")
except OSError as e:
    print("BLOCKED" if "blocked by the course" in str(e) else "OTHER " + str(e))
"""


def _run_child(tmp_path, code):
    env = dict(os.environ, COURSE_NETGUARD_LOG=str(tmp_path / "guard.log"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, encoding="utf-8", timeout=60)
    log = (tmp_path / "guard.log").read_text(encoding="utf-8") if (tmp_path / "guard.log").exists() else ""
    return out.stdout.strip(), log


def test_child_process_is_blocked_and_logged(tmp_path):
    stdout, log = _run_child(tmp_path, PROBE)
    assert stdout == "BLOCKED"
    assert "connect to 10.255.255.1:80" in log


def test_dns_lookup_is_blocked(tmp_path):
    stdout, log = _run_child(tmp_path, "import socket\ntry:\n socket.getaddrinfo('huggingface.co', 443)\n"
                                       "except OSError as e: print('BLOCKED')")
    assert stdout == "BLOCKED" and "huggingface.co" in log


def test_loopback_is_allowed(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    stdout, log = _run_child(tmp_path, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\nprint('OK')")
    server.close()
    assert stdout == "OK" and log == ""


@pytest.mark.slow
def test_notebook_kernel_is_guarded(tmp_path):
    """A kernel started the way nbval starts one inherits the guard."""
    import nbformat
    from lesson_client import LessonClient

    os.environ["COURSE_NETGUARD_LOG"], saved = str(tmp_path / "guard.log"), os.environ["COURSE_NETGUARD_LOG"]
    try:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROBE)])
        LessonClient(nb, timeout=60, kernel_name="python3").execute()
    finally:
        os.environ["COURSE_NETGUARD_LOG"] = saved
    assert nb.cells[0].outputs[0]["text"].strip() == "BLOCKED"
    assert "10.255.255.1" in (tmp_path / "guard.log").read_text(encoding="utf-8")


def test_this_process_is_guarded():
    with pytest.raises(OSError, match="blocked by the course"):
        socket.create_connection(("10.255.255.1", 80), timeout=2)
