"""The class hub (`python course.py hub`, deploy/hub/): a real JupyterHub + configurable-http-proxy
serving the course to two students at once, on loopback only, each in their own
folder, isolated from each other, idle culling on; and its bad input. Run as root (as
here), each student's server runs as a Unix account of their own: the attacker's tests
are in tests/test_hub_isolation.py, on the same hub (tests/hub_fixture.py)."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import psutil
import pytest
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy" / "hub"))
import client  # noqa: E402
import hub  # noqa: E402
import provision  # noqa: E402

HUB = str(ROOT / "deploy" / "hub" / "hub.py")
LESSON00 = "notebooks/00_start_here.ipynb"


# ------------------------------------------------------------------ the client's websocket frames
def test_a_message_with_buffers_is_read_from_its_binary_frame():
    # An explorer's figure is an Image widget: its PNG comes as a binary frame, which the
    # class client once fed to json.loads (UnicodeDecodeError, every load-sweep run failed).
    from jupyter_server.services.kernels.connection.base import serialize_binary_message

    msg = {"header": {"msg_type": "comm_msg"}, "parent_header": {"msg_id": "x"},
           "metadata": {}, "content": {"data": {"state": {}}}, "channel": "iopub",
           "buffers": [b"\x89PNG\r\n\x1a\n" + bytes(range(256)), b"second"]}
    decoded = client.decode_frame(serialize_binary_message(msg))
    assert decoded["header"]["msg_type"] == "comm_msg" and decoded["parent_header"]["msg_id"] == "x"
    assert client.decode_frame('{"msg_type": "status"}') == {"msg_type": "status"}
    with pytest.raises(ValueError, match="does not parse"):
        client.decode_frame(b"\x00\x00\x00\x05\x00")


# ------------------------------------------------------------------ bad input: one line each
def _hub_cli(*args, timeout=60):
    return subprocess.run([sys.executable, HUB, *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=timeout)


@pytest.mark.parametrize("bind_host", ["127.0.0.1", "0.0.0.0"])
def test_busy_port_gives_one_line(bind_host, tmp_path):
    with socket.socket() as busy:
        busy.bind((bind_host, 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = _hub_cli("--users", "alice", "--port", str(port), "--runtime", str(tmp_path / "rt"))
    assert r.returncode == 1, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"Port {port}" in lines[0] and "busy" in lines[0], r.stderr
    assert f"--port {port + 1}" in lines[0]
    assert not (tmp_path / "rt").exists(), "nothing is written before the inputs are checked"


@pytest.mark.parametrize("args, expected", [
    ([], "no students given"),
    (["--users", "Alice Smith"], "user names must be lowercase"),
    (["--roster", "/nonexistent/roster.txt"], "roster file /nonexistent/roster.txt not found"),
    (["--users", "alice", "--cull-timeout", "5"], "--cull-timeout is in seconds"),
])
def test_bad_class_list_gives_one_line(args, expected, tmp_path):
    r = _hub_cli(*args, "--port", str(client.free_port()), "--runtime", str(tmp_path / "rt"))
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], r.stderr


def test_roster_file_read(tmp_path):
    import hub
    roster = tmp_path / "roster.txt"
    roster.write_text("# class of 2027\nalice\nbob   # late\n\ncarol\n", encoding="utf-8")
    assert hub.read_users("dave", str(roster)) == ["alice", "bob", "carol", "dave"]


# ------------------------------------------------------------------ the course copied, edits kept
def _tiny_course(root: Path, text: str) -> Path:
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    (root / "assets").mkdir(exist_ok=True)
    for name in ("00_start_here.ipynb", "01_next.ipynb"):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
            f"{name} {text} ![a figure](../assets/figure.svg)")])
        nbformat.write(nb, root / "notebooks" / name)
    (root / "assets" / "figure.svg").write_text("<svg/>", encoding="utf-8")
    return root


def test_provision_copies_then_never_overwrites_edits(tmp_path):
    course = _tiny_course(tmp_path / "course", "v1")
    home = tmp_path / "homes" / "alice"
    assert provision.provision(home, root=course) == []
    assert (home / "notebooks" / "00_start_here.ipynb").is_file()
    assert (home / "assets" / "figure.svg").read_text(encoding="utf-8") == "<svg/>"

    # Trusted in the student's own notary: saved widgets render in JupyterLab.
    from nbformat.sign import NotebookNotary
    notary = NotebookNotary(data_dir=str(home / ".local" / "share" / "jupyter"))
    assert notary.check_signature(nbformat.read(home / "notebooks" / "01_next.ipynb", 4))

    # The student edits lesson 00; the instructor then fixes both lessons.
    edited = home / "notebooks" / "00_start_here.ipynb"
    nb = nbformat.read(edited, 4)
    nb.cells.append(nbformat.v4.new_code_cell("my_answer = 42"))
    nbformat.write(nb, edited)
    mine = edited.read_bytes()
    _tiny_course(course, "v2")
    lines = provision.provision(home, root=course)
    assert lines == ["alice: notebooks/00_start_here.ipynb kept — it holds the student's own "
                     "edits (never overwritten)",
                     "alice: notebooks/01_next.ipynb updated to the course's new version"]
    assert edited.read_bytes() == mine
    assert "v2" in (home / "notebooks" / "01_next.ipynb").read_text(encoding="utf-8")


def test_provision_keeps_a_folder_that_already_held_notebooks(tmp_path):
    course = _tiny_course(tmp_path / "course", "v1")
    home = tmp_path / "homes" / "bob"
    (home / "notebooks").mkdir(parents=True)
    (home / "notebooks" / "00_start_here.ipynb").write_text("bob's own work", encoding="utf-8")
    lines = provision.provision(home, root=course)
    assert lines == ["bob: notebooks/00_start_here.ipynb kept — it holds the student's own "
                     "edits (never overwritten)"]
    assert (home / "notebooks" / "00_start_here.ipynb").read_text(encoding="utf-8") == "bob's own work"


def _solution_lines(lesson: Path) -> set[str]:
    """Every distinctive line of a lesson's solution regions that the lesson does not also
    show elsewhere (a line a later cell or the prose repeats is no leak)."""
    from course_lib.classroom.student import BEGIN, END
    inside_lines, outside_lines = set(), set()
    for cell in nbformat.read(lesson, as_version=4).cells:
        inside = False
        for line in cell.source.splitlines():
            if line.strip() in (BEGIN, END):
                inside = line.strip() == BEGIN
            else:
                (inside_lines if inside else outside_lines).add(line.strip())
    return {line for line in inside_lines - outside_lines
            if len(line) > 12 and not line.startswith("#")}


def test_provision_by_default_hands_out_exercises_to_do(tmp_path):
    """The class default (issue 36): stubs, no solution text in any student file, figures kept."""
    home = tmp_path / "carol"
    provision.provision(home)
    files = [p for p in home.rglob("*") if p.is_file() and ".local" not in p.parts]
    assert files and not any(p.name == "nbval_sanitize.cfg" for p in files)
    lessons = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for path in files:
        if path.suffix == ".ipynb":
            code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
            assert not any("### BEGIN SOLUTION" in c for c in code), path.name
    n_lines = 0
    for lesson in lessons:
        solutions = _solution_lines(lesson)
        n_lines += len(solutions)
        mine = {line.strip() for c in nbformat.read(home / "notebooks" / lesson.name, as_version=4).cells
                if c.cell_type == "code" for line in c.source.splitlines()}
        leaked = sorted(solutions & mine)
        assert not leaked, f"{lesson.name} holds solution lines: {leaked[:3]}"
    assert n_lines > 50, n_lines
    lesson = nbformat.read(home / "notebooks" / "02_attention.ipynb", as_version=4)
    assert any("NotImplementedError" in c.source for c in lesson.cells)
    assert any("image/png" in o.get("data", {}) for c in lesson.cells if c.cell_type == "code"
               for o in c.get("outputs", [])), "the lesson's figures should be there before Run All"
    assert "\u2705" not in json.dumps(lesson) and "✅" not in json.dumps(lesson, ensure_ascii=False)
    with pytest.raises(ValueError, match="version must be one of"):
        provision.provision(home, version="teacher")


def test_hub_hands_out_the_student_version_unless_asked(capsys):
    args = hub.parser().parse_args(["--users", "alice"])
    assert args.version == "student" and not args.solutions
    assert hub.version_notice(args) is None
    env = hub.hub_environment(args, Path("/nonexistent-runtime"))
    assert env["COURSE_HUB_VERSION"] == "student" and env["COURSE_HUB_SOLUTIONS"] == "off"
    course = hub.parser().parse_args(["--users", "alice", "--version", "course"])
    assert "every solution in sight" in hub.version_notice(course)


# ------------------------------------------------------------------ a real hub, two students
from hub_fixture import PASSWORDS  # noqa: E402  (the `hub` fixture: conftest.py)


def _parallel(fn, users):
    out, errors = {}, []

    def work(u):
        try:
            out[u] = fn(u)
        except Exception as e:   # noqa: BLE001 — re-raised below, in the test's thread
            errors.append(e)
    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_hub_serves_lesson_00_to_two_students_at_once(hub):
    def first_visit(user):
        s = client.login(hub.url, user, PASSWORDS[user])
        hub.start_server(user)
        page = s.get(f"{hub.url}/user/{user}/lab/tree/{LESSON00}", timeout=60)
        token = hub.user_token(user)
        return s, page, token

    visits = _parallel(first_visit, ["alice", "bob"])
    for user, (_, page, _) in visits.items():
        assert page.status_code == 200 and page.url.endswith(f"/user/{user}/lab/tree/{LESSON00}")
        assert "jupyter-config-data" in page.text            # JupyterLab, not the hub's page
    hub.tokens = {u: v[2] for u, v in visits.items()}

    runs = _parallel(lambda u: client.run_notebook(hub.url, u, hub.tokens[u], LESSON00),
                     ["alice", "bob"])
    for user, run in runs.items():
        assert run.completed and run.cells > 3, run

    # Each student's own copy (the student version: the class default), trusted; bob's
    # earlier edits kept, with one log line.
    from course_lib.classroom.workspace import learner_notebook
    home = hub.homes
    handed_out = nbformat.writes(learner_notebook(nbformat.read(ROOT / LESSON00, as_version=4))) + "\n"
    assert (home / "alice" / LESSON00).read_bytes() == handed_out.encode("utf-8")
    assert (home / "bob" / LESSON00).read_bytes() == hub.bob_lesson_bytes
    assert "bob: notebooks/00_start_here.ipynb kept — it holds the student's own edits" \
        in hub.log_tail(10**7)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_students_are_isolated(hub):
    if not hasattr(hub, "tokens"):
        pytest.skip("needs the servers started by the test above")
    alice = hub.tokens["alice"]
    mine = requests.get(f"{hub.url}/user/alice/api/contents/notebooks",
                        headers={"Authorization": f"token {alice}"}, timeout=30)
    assert mine.status_code == 200
    # Alice's token on bob's server: refused by the hub, and no listing leaks.
    for path in ("/user/bob/api/contents/notebooks", "/user/bob/api/kernels",
                 "/user/bob/files/notebooks/00_start_here.ipynb"):
        r = requests.get(hub.url + path, headers={"Authorization": f"token {alice}"}, timeout=30)
        assert r.status_code in (403, 404), (path, r.status_code)
        # (bob's server's 403 page links to its default URL; nothing of his files.)
        assert '"nbformat"' not in r.text and '"type": "directory"' not in r.text
        assert '"content"' not in r.text and '"execution_state"' not in r.text
    r = requests.post(f"{hub.url}/hub/api/users/bob/tokens", json={},
                      headers={"Authorization": f"token {alice}"}, timeout=30)
    assert r.status_code in (403, 404)
    # Alice logged in with her cookie, opening bob's lab: not bob's files.
    s = client.login(hub.url, "alice", PASSWORDS["alice"])
    r = s.get(f"{hub.url}/user/bob/api/contents/notebooks", timeout=30)
    assert r.status_code in (403, 404) and '"content"' not in r.text
    # Passwords are per student once chosen; the roster is closed.
    with pytest.raises(PermissionError):
        client.login(hub.url, "bob", PASSWORDS["alice"])
    with pytest.raises(PermissionError):
        client.login(hub.url, "mallory", "any-password-1")


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_everything_listens_on_loopback_and_culling_is_on(hub):
    procs = [psutil.Process(hub.proc.pid), *psutil.Process(hub.proc.pid).children(recursive=True)]
    procs += [p for u in ("alice", "bob") for p in hub.server_processes(u)]
    listening = [(p.name(), c.laddr) for p in procs for c in p.net_connections("inet")
                 if c.status == psutil.CONN_LISTEN]
    assert listening, "found no listening socket of the hub"
    assert all(addr.ip == "127.0.0.1" for _, addr in listening), listening
    ports = {addr.port for _, addr in listening}
    assert hub.port in ports                                     # the proxy's public side
    culler = [p.cmdline() for p in procs if "jupyterhub_idle_culler" in " ".join(p.cmdline())]
    assert culler and "--timeout=600" in culler[0], culler
    r = hub.api("GET", "/")
    assert r.ok and json.loads(r.text)["version"].startswith("6.")
