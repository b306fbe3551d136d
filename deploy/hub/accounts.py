"""One Unix account per student, for a hub that runs as root (`python course.py hub`).

Each student of the roster gets a system account named PREFIX + name (default
`course-alice`): no login shell, no password, a home of their own (mode 700) under
the homes folder. Their server runs as that account (spawner.py), so a student's code
cannot read or change a classmate's files, read the hub's secrets or signal a
classmate's processes. Every account this hub made is listed, one a line, in
RUNTIME/accounts.txt; `python course.py hub --remove-accounts` removes exactly those.
Linux only, like the hub.
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

DEFAULT_PREFIX = "course-"
LEDGER = "accounts.txt"
NOLOGIN = next((s for s in ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false") if Path(s).exists()),
               "/bin/false")
# What useradd accepts on every distribution (Debian's default NAME_REGEX, 32 characters).
_ACCOUNT = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")


class AccountError(ValueError):
    """A problem with the students' accounts; the message is the one line printed."""


# Where Linux distributions put the account tools: a root shell whose PATH lacks the sbin
# folders (`su` without `-`, some container entry points) must still find them.
_SBIN = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


def account_tool(name: str) -> str:
    """The path of `useradd` / `userdel`, from PATH or the sbin folders; one line if missing."""
    found = shutil.which(name) or shutil.which(name, path=os.pathsep.join(_SBIN))
    if found is None:
        raise AccountError(f"{name} was not found (PATH, {', '.join(_SBIN)}): install the "
                           f"system's account tools (Debian/Ubuntu: apt-get install passwd; "
                           f"Fedora/RHEL: dnf install shadow-utils)")
    return found


def account_name(prefix: str, user: str) -> str:
    """The Unix account of hub user `user`; one line if the system would refuse it."""
    name = prefix + user
    if not _ACCOUNT.match(name):
        raise AccountError(f"{name!r} cannot be a Unix account name (at most 32 characters: "
                           f"lowercase letters, digits, '_' and '-'): rename the student or "
                           f"choose another --account-prefix")
    return name


def ledger(runtime: Path) -> list[str]:
    """The accounts this hub created, as recorded in its runtime folder."""
    path = Path(runtime) / LEDGER
    if not path.is_file():
        return []
    return [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _record(runtime: Path, name: str) -> None:
    names = ledger(runtime)
    if name not in names:
        (Path(runtime) / LEDGER).write_text("".join(n + "\n" for n in names + [name]),
                                            encoding="utf-8")


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _own_tree(home: Path, uid: int, gid: int) -> None:
    """Give a pre-existing home (an earlier term's folder) to its student. lchown and no
    following of links: a link planted in the folder must not hand over its target."""
    for folder, dirs, files in os.walk(home):
        for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(entry, uid, gid, follow_symlinks=False)


def ensure_account(runtime: Path, homes: Path, prefix: str, user: str) -> pwd.struct_passwd:
    """Create the student's account (or reuse the one this hub made), home mode 700."""
    name = account_name(prefix, user)
    home = Path(homes) / user
    if _exists(name) and name not in ledger(runtime):
        raise AccountError(f"a Unix account {name!r} exists and was not made by this hub: "
                           f"choose another --account-prefix")
    if not _exists(name):
        made = subprocess.run([account_tool("useradd"), "--system", "--user-group", "--shell", NOLOGIN,
                               "--home-dir", str(home), "--no-create-home",
                               "--comment", f"course student {user}", name],
                              capture_output=True, text=True, encoding="utf-8")
        if made.returncode != 0:
            raise AccountError(f"useradd {name} failed: {made.stderr.strip()}")
        _record(runtime, name)       # recorded at once: a failure later still cleans up
    entry = pwd.getpwnam(name)
    home.mkdir(parents=True, exist_ok=True)
    (home / TMP).mkdir(exist_ok=True)
    _own_tree(home, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)
    (home / TMP).chmod(0o700)
    return entry


TMP = ".tmp"    # the student's TMPDIR, in their home (the spawner sets it)


def private_tmp(entry: pwd.struct_passwd) -> Path:
    """The student's own temporary folder: pytest's, torch's compile cache and the like
    (left in the shared /tmp they are other accounts' to list, some of them world-readable)."""
    return Path(entry.pw_dir) / TMP


def _remove_temporary_files_of(uid: int) -> int:
    """Remove what `uid` left directly in the system's temporary folders (a student whose
    programs ignored TMPDIR); links are removed, never followed. Returns how many."""
    removed = 0
    for tmp in {Path(tempfile.gettempdir()), Path("/tmp"), Path("/dev/shm")}:
        try:
            entries = list(tmp.iterdir())
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.lstat().st_uid != uid:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed += 1
            except OSError:
                continue
    return removed


def run_as(entry: pwd.struct_passwd, command: list[str], timeout: float = 300, **kw):
    """Run `command` as the student's account (no supplementary groups), in their home."""
    return subprocess.run(command, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[],
                          cwd=entry.pw_dir, capture_output=True, text=True, encoding="utf-8",
                          errors="replace", timeout=timeout, **kw)


def check_can_run(entry: pwd.struct_passwd, python: Path) -> None:
    """One line if the student's account cannot run the servers' Python *as itself*: a
    venv made from an interpreter under a private folder (pyenv under /root) fails, or
    silently starts the system's Python with the venv's packages."""
    probe = "import sys, jupyterhub, course_lib; print(sys.base_prefix)"
    mine = subprocess.run([str(python), "-c", probe], capture_output=True, text=True,
                          encoding="utf-8", errors="replace")
    try:
        theirs = run_as(entry, [str(python), "-c", probe], timeout=120)
    except OSError as e:
        theirs = subprocess.CompletedProcess([], 1, "", str(e))
    if theirs.returncode != 0 or theirs.stdout != mine.stdout:
        why = (theirs.stderr.strip().splitlines()
               or [f"as that account it starts {theirs.stdout.strip()}'s Python, not "
                   f"{mine.stdout.strip()}'s, a folder other accounts cannot open"])[-1]
        raise AccountError(
            f"student account {entry.pw_name} cannot run the servers' Python {python} ({why}): "
            f"build the servers' environment from a Python every account can run, "
            f"e.g. /usr/bin/python3 (python3 course.py hub does), and keep the course in a "
            f"folder every account can read (not under /root)")


def _processes_of(uid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def remove_accounts(runtime: Path, say=print) -> int:
    """Remove every account listed in RUNTIME/accounts.txt: stop what still runs as it,
    hand its home to root (the student's work stays, readable by root only), userdel."""
    names = ledger(runtime)
    for name in list(names):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            names.remove(name)
            continue
        for pid in _processes_of(entry.pw_uid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while _processes_of(entry.pw_uid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _remove_temporary_files_of(entry.pw_uid)
        home = Path(entry.pw_dir)
        shutil.rmtree(home / TMP, ignore_errors=True)      # temporary: not the student's work
        if home.is_dir():
            _own_tree(home, 0, 0)
        subprocess.run([account_tool("userdel"), name], check=True, capture_output=True, text=True, encoding="utf-8")
        names.remove(name)
        say(f"removed account {name} (its home {home} kept, now root's"
            + (f"; removed {left} of its temporary files from the shared folders)" if left else ")"))
    (Path(runtime) / LEDGER).write_text("".join(n + "\n" for n in names), encoding="utf-8")
    return 0


BOARD = "class-board"       # the class board's account: PREFIX + this


def prepare_records(records: Path, students: list[pwd.struct_passwd], users: list[str],
                    board: pwd.struct_passwd) -> None:
    """RECORDS/<student>/ for each student's verdict records: the student's, readable by
    the board's group alone (setgid: every file written there is that group's); RECORDS
    itself is listed by the board's group, only passed through by the students."""
    records = Path(records)
    records.mkdir(parents=True, exist_ok=True)
    os.chown(records, 0, board.pw_gid)
    records.chmod(0o751)
    for user, entry in zip(users, students):
        folder = records / user
        folder.mkdir(exist_ok=True)
        os.chown(folder, entry.pw_uid, board.pw_gid, follow_symlinks=False)
        folder.chmod(0o2750)
