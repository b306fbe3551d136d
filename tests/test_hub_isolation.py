"""Students cannot reach each other, as an attacker would try it (issue 20): on the class
hub run as root, a notebook alice runs in her own server — through the hub, as a class
does — tries with plain Python to read and write bob's files, read the hub's cookie
secret, database, password hashes and log, list or forge the class board's records, read
bob's, the hub's and the board's processes' environment and signal them; and for the class
votes (issue 42): read bob's concept answers, record one as bob (write, replace, or a records
folder of a made-up student), or fetch the votes page — through the hub, straight from the
board's port, without credentials or with her own token. Every attempt must fail, and bob's
files and answers stay as they were. Then the memory cap: alice's kernel allocating past it fails alone, bob's keeps
running. The accounts: no shell, no password, homes 700, listed for removal."""
from __future__ import annotations

import hashlib
import json
import os
import pwd
import stat
import time
from pathlib import Path

import nbformat
import psutil
import pytest
import requests

import client
from hub_fixture import MEM_LIMIT_GB, PASSWORDS, run_as_student as _run, started as _started
# (the session's `hub` fixture: conftest.py)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                       reason="one Unix account per student needs the hub to run as root"),
]


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# The attacker's notebook: plain Python, every attempt recorded, nothing raised.
ATTACK = r'''
import json, os, signal
from pathlib import Path
T = json.loads(TARGETS)
results = {}
def attempt(what, action):
    try:
        action()
        results[what] = "SUCCEEDED"
    except OSError as e:
        results[what] = type(e).__name__
attempt("read bob's lesson", lambda: Path(T["bob_lesson"]).read_bytes())
attempt("list bob's home", lambda: os.listdir(T["bob_home"]))
attempt("overwrite bob's lesson", lambda: open(T["bob_lesson"], "r+b").write(b"{}"))
attempt("write a file into bob's notebooks",
        lambda: Path(T["bob_home"], "notebooks", "from_alice.txt").write_text("hi", encoding="utf-8"))
attempt("list the hub's runtime folder", lambda: os.listdir(T["runtime"]))
attempt("list every student's records", lambda: os.listdir(T["records"]))
attempt("list bob's records", lambda: os.listdir(Path(T["records"], "bob")))
attempt("forge bob's verdicts", lambda: Path(T["records"], "bob", "progress.json").write_text(
    '{"attention": {"last": "ok", "solved": true}}', encoding="utf-8"))
# The class votes: bob's answers are his to record and the instructor's to see.
FORGED = '{"concept_checks": {"%s": {"first": "a", "latest": "a", "attempts": 1}}}' % T["question"]
attempt("read bob's concept answers", lambda: Path(T["records"], "bob", "progress.json").read_bytes())
attempt("record a concept answer as bob",
        lambda: Path(T["records"], "bob", "progress.json").write_text(FORGED, encoding="utf-8"))
def _replace_bobs_file():
    Path("forged.json").write_text(FORGED, encoding="utf-8")
    os.replace("forged.json", Path(T["records"], "bob", "progress.json"))
attempt("replace bob's progress file with a forged one", _replace_bobs_file)
attempt("make records for a made-up student", lambda: Path(T["records"], "mallory").mkdir())
def _record_as_bob():                                 # the recorder never raises: it says
    os.environ["COURSE_PROGRESS_FILE"] = str(Path(T["records"], "bob", "progress.json"))
    from course_lib.classroom.records import record_answer
    if not record_answer(T["question"], T["lesson"], "a", False):
        raise PermissionError("the course's recorder could not write bob's file")
attempt("record a concept answer as bob with the course's recorder", _record_as_bob)
import urllib.error, urllib.request
class _Stay(urllib.request.HTTPRedirectHandler):      # a redirect to the login page is a refusal
    def redirect_request(self, *args, **kwargs):
        return None
web = {}
def fetch(what, url, token=None):
    request = urllib.request.Request(url, headers={"Authorization": "token " + token} if token else {})
    try:
        with urllib.request.build_opener(_Stay).open(request, timeout=60) as r:
            web[what] = r.status
    except urllib.error.HTTPError as e:
        web[what] = e.code
for where in ("proxy", "direct"):
    fetch(f"the votes page ({where}), no credentials", T["votes_" + where])
    fetch(f"the votes page ({where}), her own token", T["votes_" + where], T["alice_token"])
    if os.environ.get("JUPYTERHUB_API_TOKEN"):
        fetch(f"the votes page ({where}), her server's token", T["votes_" + where],
              os.environ["JUPYTERHUB_API_TOKEN"])
for path in T["runtime_files"]:
    attempt("read " + path, lambda path=path: Path(path).read_bytes())
for pid in T["bob_pids"] + [T["hub_pid"], T["board_pid"]]:
    attempt(f"read the environment of process {pid}",
            lambda pid=pid: Path(f"/proc/{pid}/environ").read_bytes())
    attempt(f"signal 0 to process {pid}", lambda pid=pid: os.kill(pid, 0))
    attempt(f"SIGTERM to process {pid}", lambda pid=pid: os.kill(pid, signal.SIGTERM))
# Controls: the same calls on alice's own things work, so the refusals above mean something.
attempt("CONTROL read own environment", lambda: Path("/proc/self/environ").read_bytes())
attempt("CONTROL write own file", lambda: Path("mine.txt").write_text("ok", encoding="utf-8"))
Path("attack_results.json").write_text(json.dumps(results), encoding="utf-8")
Path("web_results.json").write_text(json.dumps(web), encoding="utf-8")
'''


# Bob answers a concept check in his own server, with the course's recorder (first vote kept).
VOTE = """from course_lib.classroom.records import record_answer
assert record_answer(QUESTION, LESSON, "b", False), "not recorded"
"""


def _wait_for_kernels_to_end(hub, user: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if not any("ipykernel" in " ".join(p.cmdline()) for p in hub.server_processes(user)[1:]):
                return
        except psutil.Error:
            pass
        time.sleep(0.5)


def _board_service(hub) -> psutil.Process:
    """The class board's service process (started by the hub, as its own account)."""
    for p in psutil.Process(hub.proc.pid).children(recursive=True):
        try:
            if p.environ().get("JUPYTERHUB_SERVICE_NAME") == "class-board":
                return p
        except psutil.Error:
            continue
    raise AssertionError(f"the class board's service is not running:\n{hub.log_tail(2000)}")


@pytest.mark.timeout(300)
def test_alice_cannot_reach_bob_or_the_hub(hub):
    for user in ("alice", "bob"):             # their first logins store the password hashes
        client.login(hub.url, user, PASSWORDS[user])
    _started(hub, "bob")
    question, lesson = _first_question()
    voted = _run(hub, "bob", "vote.ipynb", f"QUESTION, LESSON = {question!r}, {lesson!r}\n" + VOTE)
    assert voted.completed, voted
    bob_records = hub.base / "records" / "bob"
    answers = _snapshot(bob_records)
    assert json.loads((bob_records / "progress.json").read_text(encoding="utf-8"))[
        "concept_checks"][question]["first"] == "b"
    _wait_for_kernels_to_end(hub, "bob")    # his processes below: the server, not a closing kernel
    bob_home = hub.homes / "bob"
    before = _snapshot(bob_home / "notebooks")
    bob_pids = [p.pid for p in hub.server_processes("bob")]
    runtime_files = sorted(str(p) for p in hub.runtime.rglob("*") if p.is_file())
    names = " ".join(runtime_files)
    # The targets exist, so a refusal is not a missing file.
    for secret in ("jupyterhub_cookie_secret", "jupyterhub.sqlite", "passwords", "accounts.txt"):
        assert secret in names, (secret, runtime_files)
    assert bob_pids and before
    board = _board_service(hub)
    board_env = board.environ()
    votes_path = "services/class-board/?view=votes&names=1"
    targets = {"bob_home": str(bob_home), "bob_lesson": str(bob_home / "notebooks/00_start_here.ipynb"),
               "runtime": str(hub.runtime), "runtime_files": runtime_files + [str(hub.log_path)],
               "records": str(hub.base / "records"),
               "bob_pids": bob_pids, "hub_pid": hub.proc.pid, "board_pid": board.pid,
               "question": question, "lesson": lesson, "alice_token": _started(hub, "alice"),
               "votes_proxy": f"{hub.url}/{votes_path}",
               "votes_direct": f"{board_env['JUPYTERHUB_SERVICE_URL'].rstrip('/')}/{votes_path}"}
    run = _run(hub, "alice", "attack.ipynb", f"TARGETS = {json.dumps(json.dumps(targets))}\n" + ATTACK)
    assert run.completed, run
    results = json.loads((hub.homes / "alice" / "attack_results.json").read_text(encoding="utf-8"))
    controls = {k: v for k, v in results.items() if k.startswith("CONTROL")}
    attacks = {k: v for k, v in results.items() if not k.startswith("CONTROL")}
    print(json.dumps(results, indent=1))      # shown by pytest -s, and on failure
    assert set(controls.values()) == {"SUCCEEDED"}, controls
    succeeded = [k for k, v in attacks.items() if v == "SUCCEEDED"]
    assert not succeeded, f"{len(succeeded)} of {len(attacks)} attempts succeeded: {succeeded}"
    assert len(attacks) >= 13 + len(runtime_files) + 3 * (len(bob_pids) + 2)
    assert set(attacks.values()) <= {"PermissionError"}, attacks
    # The votes page: a redirect to the hub's login without credentials, 403 with a student's.
    web = json.loads((hub.homes / "alice" / "web_results.json").read_text(encoding="utf-8"))
    print(json.dumps(web, indent=1))
    assert len(web) >= 4 and not [k for k, code in web.items() if code == 200], web
    assert all(code == 403 for k, code in web.items() if "token" in k), web
    assert all(code in (302, 303) for k, code in web.items() if "no credentials" in k), web
    assert _snapshot(bob_records) == answers, "bob's concept answers changed"
    assert not (hub.base / "records" / "mallory").exists()
    # Bob's files unchanged, his server still running.
    assert _snapshot(bob_home / "notebooks") == before
    assert not (bob_home / "notebooks" / "from_alice.txt").exists()
    assert all(psutil.pid_exists(pid) for pid in bob_pids)


def _first_question() -> tuple[str, str]:
    """A concept check the board knows (it reads the same registry at start)."""
    from course_lib.exercises.concepts.questions import all_questions

    questions = all_questions()
    assert questions, "no concept checks in the course (course_lib/exercises/concepts/lessonNN.py)"
    return questions[0].id, questions[0].lesson


@pytest.mark.timeout(240)
def test_a_kernel_past_the_memory_cap_fails_alone(hub):
    cap = MEM_LIMIT_GB * 2**30
    hog = ("import resource\n"
           "soft, hard = resource.getrlimit(resource.RLIMIT_AS)\n"
           f"assert soft == hard == {cap}, (soft, hard)   # else never allocate: a real machine\n"
           "try:\n"
           f"    hog = bytearray({cap} + 2**30)\n"
           "    outcome = 'allocated'\n"
           "except MemoryError:\n"
           "    outcome = 'MemoryError'\n"
           "open('hog_result.txt', 'w', encoding='utf-8').write(outcome)\n")
    bob_pids = [p.pid for p in hub.server_processes("bob")] or None
    run = _run(hub, "alice", "hog.ipynb", hog)
    assert run.completed or run.kernel_died, run
    if run.completed:
        outcome = (hub.homes / "alice" / "hog_result.txt").read_text(encoding="utf-8")
        assert outcome == "MemoryError", outcome
    # The classmate's kernel keeps running, and so does alice's server.
    bob = _run(hub, "bob", "still_here.ipynb", "x = sum(range(10**6)); assert x > 0")
    assert bob.completed, bob
    if bob_pids:
        assert all(psutil.pid_exists(pid) for pid in bob_pids[:1])
    again = _run(hub, "alice", "after.ipynb", "print('alive')")
    assert again.completed, again


@pytest.mark.timeout(120)
def test_each_student_has_an_account_of_their_own(hub):
    for user in ("alice", "bob"):
        _started(hub, user)
        entry = pwd.getpwnam(hub.account_prefix + user)
        assert entry.pw_shell.endswith(("nologin", "false")), entry.pw_shell
        shadow = next(ln.split(":") for ln in Path("/etc/shadow").read_text(encoding="utf-8").splitlines()
                      if ln.startswith(entry.pw_name + ":"))
        assert shadow[1].startswith(("!", "*")), "no password: nobody logs in as the account"
        home = os.stat(entry.pw_dir)
        assert Path(entry.pw_dir) == hub.homes / user
        assert (home.st_uid, stat.S_IMODE(home.st_mode)) == (entry.pw_uid, 0o700)
        server = hub.server_processes(user)[0]
        assert server.uids().real == entry.pw_uid and server.uids().effective == entry.pw_uid
        # Temporary files go to a folder of the student's, not the shared /tmp.
        tmp = Path(entry.pw_dir) / ".tmp"
        assert server.environ().get("TMPDIR") == str(tmp), server.environ().get("TMPDIR")
        assert (tmp.stat().st_uid, stat.S_IMODE(tmp.stat().st_mode)) == (entry.pw_uid, 0o700)
        lesson = Path(entry.pw_dir) / "notebooks" / "02_attention.ipynb"
        assert lesson.stat().st_uid == entry.pw_uid, "the course is copied in as the student"
    runtime = os.stat(hub.runtime)
    assert (runtime.st_uid, stat.S_IMODE(runtime.st_mode)) == (0, 0o700)
    listed = (hub.runtime / "accounts.txt").read_text(encoding="utf-8").split()
    assert sorted(listed) == sorted(hub.account_prefix + u
                                    for u in ("alice", "bob", "teacher", "class-board"))
