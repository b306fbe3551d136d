"""The class hub's choice between one Unix account per student (root) and one shared
user (an explicit flag, with its warning), the accounts' names, the memory cap's
parsing, the removal command, and how course.py finds a Python every account can run.
Without a hub: these take a second (the live attacker's tests: test_hub_isolation.py)."""
from __future__ import annotations

import os
import secrets
import stat
import subprocess
import tempfile
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy" / "hub"))
sys.path.insert(0, str(ROOT))
import course  # noqa: E402
import hub  # noqa: E402

HUB = str(ROOT / "deploy" / "hub" / "hub.py")
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="creating Unix accounts needs root")


@pytest.mark.parametrize("euid, n, shared, expected", [
    (0, 30, False, "accounts"),           # root: one account per student
    (0, 30, True, "shared"),              # root, told to share
    (1000, 1, False, "shared"),           # one student on the instructor's own account
    (1000, 30, True, "shared"),           # the explicit flag
])
def test_isolation_mode(euid, n, shared, expected):
    assert hub.isolation(euid, n, shared) == expected


def test_many_students_without_root_need_the_flag():
    with pytest.raises(hub.HubConfigError, match="--shared-unix-user") as e:
        hub.isolation(1000, 2, False)
    assert "\n" not in str(e.value)


def test_the_shared_user_warning_is_one_paragraph_that_says_what_it_means():
    text = hub.SHARED_WARNING.format(user="teacher")
    assert "\n" not in text and "teacher" in text
    for consequence in ("read and change every classmate's work", "cookie secret",
                        "log in as anyone", "memory cap"):
        assert consequence in text


@needs_root
def test_without_root_two_students_are_refused_in_one_line(tmp_path):
    tmp_path.chmod(0o755)
    r = subprocess.run([sys.executable, HUB, "--users", "alice,bob", "--port", "8799",
                        "--runtime", str(tmp_path / "rt")], user=65534, group=65534,
                       extra_groups=[], capture_output=True, text=True, encoding="utf-8",
                       timeout=60, cwd="/")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and "--shared-unix-user" in lines[0], r.stderr
    assert not (tmp_path / "rt").exists()


@pytest.mark.parametrize("text, size", [("4G", 4 * 2**30), ("1500M", 1500 * 2**20),
                                        ("2GiB", 2 * 2**30), (str(2**30), 2**30)])
def test_memory_cap_sizes(text, size):
    assert hub.parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "10M", "", "-1G"])
def test_bad_memory_cap_is_one_line(text):
    with pytest.raises(hub.HubConfigError, match="--mem-limit must be like 4G"):
        hub.parse_size(text)


def test_account_names():
    import accounts
    assert accounts.account_name("course-", "alice") == "course-alice"
    for bad in ("j.doe", "a" * 30):
        with pytest.raises(accounts.AccountError, match="cannot be a Unix account name"):
            accounts.account_name("course-", bad)


def test_homes_live_beside_the_runtime_folder(tmp_path):
    args = hub.parser().parse_args(["--users", "alice"])
    assert hub.homes_folder(args, tmp_path / "runtime") == tmp_path / "homes"


# ------------------------------------------------------------------ course.py: a Python for every account
def test_a_python_under_a_private_folder_is_not_for_everyone(tmp_path):
    private = tmp_path / "private"
    (private / "bin").mkdir(parents=True)
    exe = private / "bin" / "python"
    exe.write_bytes(b"")
    exe.chmod(0o755)
    private.chmod(0o700)                           # like /root, where pyenv lives
    assert not course.everyone_can_run(exe, private)
    private.chmod(0o755)
    tmp_path.chmod(0o755)
    assert course.everyone_can_run(exe, private) == all(
        p.stat().st_mode & 0o001 for p in [tmp_path, *tmp_path.parents])


def test_no_python_for_everyone_is_one_line(tmp_path):
    with pytest.raises(course.CourseError, match="found no Python") as e:
        course.shared_python([str(tmp_path / "missing")])
    assert "\n" not in str(e.value)


def test_hub_arguments_add_the_servers_environment_only_as_root(monkeypatch):
    made = []
    monkeypatch.setattr(course, "ensure_environment", lambda *a, **kw: made.append((a, kw)))
    monkeypatch.setattr(course, "shared_python", lambda: "/usr/bin/python3")
    assert course.hub_arguments(["--users", "a"], "", euid=1000) == ["--users", "a"]
    assert course.hub_arguments(["--remove-accounts"], "", euid=0) == ["--remove-accounts"]
    assert made == []
    args = course.hub_arguments(["--users", "a"], "", euid=0)
    assert args == ["--users", "a", "--servers-env", course.venv_dir(course.SERVERS)]
    assert made == [((course.SERVERS, ""), {"base": "/usr/bin/python3"})]


def test_the_servers_environment_adds_the_hubs_jupyterhub():
    commands = course.install_commands("PY", course.SERVERS, "")
    pin = course.pinned("jupyterhub", "requirements-instructor.txt")
    assert [c for c in commands if c[-1] == "jupyterhub==" + pin]
    assert ROOT / "requirements-instructor.txt" in course.requirement_files(course.SERVERS)


# ------------------------------------------------------------------ the removal command
def _python_only_root_can_enter(folder: Path) -> Path:
    """This environment's Python, reached through `folder` (mode 700, root's): its
    pyvenv.cfg and lib/ linked in, so root runs it as the venv; any other account is
    refused at the folder."""
    folder.mkdir(mode=0o700)
    (folder / "bin").mkdir()
    prefix = Path(sys.prefix)
    if (prefix / "pyvenv.cfg").is_file():
        (folder / "pyvenv.cfg").write_bytes((prefix / "pyvenv.cfg").read_bytes())
        (folder / "lib").symlink_to(prefix / "lib", target_is_directory=True)
    python = folder / "bin" / "python"
    python.symlink_to(Path(sys.executable).resolve())
    os.chmod(folder, 0o700)
    return python


@pytest.mark.skipif(not Path("/usr/sbin/useradd").exists() and not Path("/sbin/useradd").exists(),
                    reason="no useradd in an sbin folder (not a Linux with the account tools)")
def test_account_tools_are_found_without_sbin_on_path(monkeypatch):
    import accounts

    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")      # `su` without `-`
    assert Path(accounts.account_tool("useradd")).name == "useradd"
    monkeypatch.setattr(accounts, "_SBIN", ())
    monkeypatch.setenv("PATH", "")
    with pytest.raises(accounts.AccountError, match="useradd was not found .*apt-get install passwd") as e:
        accounts.account_tool("useradd")
    assert "\n" not in str(e.value)


@needs_root
def test_remove_accounts_removes_what_the_hub_made(tmp_path):
    import pwd

    import accounts

    tmp_path.chmod(0o755)
    runtime, homes = tmp_path / "hub", tmp_path / "homes"
    runtime.mkdir(mode=0o700)
    prefix = f"t{secrets.token_hex(3)}-"
    try:
        entry = accounts.ensure_account(runtime, homes, prefix, "carol")
        (homes / "carol" / "work.txt").write_text("mine", encoding="utf-8")
        tmp = accounts.private_tmp(entry)
        assert (tmp.stat().st_uid, stat.S_IMODE(tmp.stat().st_mode)) == (entry.pw_uid, 0o700)
        # What a program of hers left in the shared /tmp anyway (torch's compile cache does).
        left = Path(tempfile.mkdtemp(prefix="torchinductor_carol-"))
        (left / "cache").write_text("x", encoding="utf-8")
        for path in (left, left / "cache"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        mine = Path(tempfile.mkdtemp(prefix="not-carols-"))           # root's: stays
        assert stat.S_IMODE(os.stat(homes / "carol").st_mode) == 0o700
        assert accounts.ledger(runtime) == [prefix + "carol"]
        # The hub checks, before any server starts, that the account can run the servers'
        # Python as itself: a venv of pyenv's Python under /root (mode 700) cannot. Such a
        # Python is built here (the one running the tests may be the system's, which every
        # account can run): this venv's interpreter, seen through a folder only root enters.
        with pytest.raises(accounts.AccountError, match="cannot run the servers' Python") as e:
            accounts.check_can_run(entry, _python_only_root_can_enter(tmp_path / "private"))
        assert "\n" not in str(e.value)
        if (ROOT / ".venv-servers" / "bin" / "python").is_file():
            accounts.check_can_run(entry, ROOT / ".venv-servers" / "bin" / "python")
        # An account the hub did not make is never taken over.
        with pytest.raises(accounts.AccountError, match="was not made by this hub"):
            accounts.ensure_account(tmp_path / "other", homes, prefix, "carol")
        # Not while the hub runs (its pid file names a live process: this one, here).
        (runtime / "jupyterhub.pid").write_text(str(os.getpid()), encoding="utf-8")
        r = subprocess.run([sys.executable, HUB, "--remove-accounts", "--runtime", str(runtime)],
                           capture_output=True, text=True, encoding="utf-8", timeout=120)
        assert r.returncode == 1 and "still running" in r.stderr and pwd.getpwnam(prefix + "carol")
        (runtime / "jupyterhub.pid").unlink()
        r = subprocess.run([sys.executable, HUB, "--remove-accounts", "--runtime", str(runtime)],
                           capture_output=True, text=True, encoding="utf-8", timeout=120)
        assert r.returncode == 0 and f"removed account {prefix}carol" in r.stdout, r
        assert "removed 1 of its temporary files" in r.stdout, r.stdout
        assert not left.exists() and mine.is_dir()
        mine.rmdir()
        with pytest.raises(KeyError):
            pwd.getpwnam(prefix + "carol")
        assert accounts.ledger(runtime) == []
        assert os.stat(homes / "carol").st_uid == 0 != entry.pw_uid      # work kept, root's
        assert (homes / "carol" / "work.txt").read_text(encoding="utf-8") == "mine"
    finally:
        subprocess.run([accounts.account_tool("userdel"), prefix + "carol"], capture_output=True, timeout=60)
