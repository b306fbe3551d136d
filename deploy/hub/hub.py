"""Start a JupyterHub that serves the course to a class (`python course.py hub`).

    python deploy/hub/hub.py --users alice,bob,carol [--port 8000]
    python deploy/hub/hub.py --roster roster.txt --admin teacher
    python deploy/hub/hub.py --remove-accounts        # the students' Unix accounts, when done

Checks what it is given (one line per problem, no traceback), keeps the hub's state —
database, cookie secret, password hashes, accounts made, log — in a git-ignored runtime
folder only the hub can open, the students' homes beside it, then replaces itself with
`jupyterhub -f jupyterhub_config.py`. Each student chooses their password the first
time they log in. Run as root, every student's server runs as a Unix account of their
own (accounts.py); without root, all servers would run as one user, so it serves one
student unless --shared-unix-user says the class accepts that.
"""
from __future__ import annotations

import argparse
import os
import pwd
import re
import secrets
import socket
import sys
from pathlib import Path

import accounts
import limits
from course_lib.console import utf8_output


HERE = Path(__file__).resolve().parent
RUNTIME = HERE / "runtime"
CONFIG = HERE / "jupyterhub_config.py"
# JupyterHub's own rule for names that make safe URLs and folder names.
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
COURSE_VERSION_WARNING = (
    "--version course: the students get the instructor's lessons, with every solution in "
    "sight and every check already passed; the default (student) hands out exercises to do.")
SHARED_WARNING = (
    "All students share one Unix user ({user}): the hub keeps them out of each other's "
    "servers, but code in any notebook runs with that user's rights, so any student can read "
    "and change every classmate's work, read the hub's cookie secret and database (and so log "
    "in as anyone, the instructor included), and stop or inspect everyone's processes; no "
    "memory cap keeps one student's kernel from starving the others. Use this only for a "
    "class that trusts each other; run the hub as root for one account per student.")


class HubConfigError(ValueError):
    """Bad input for the hub; the message is the one line printed."""


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_users(users: str | None, roster: str | None) -> list[str]:
    """The class list from --users a,b,c or a roster file (one name a line, # comments)."""
    names: list[str] = []
    if users:
        names += [u.strip() for u in users.split(",") if u.strip()]
    if roster:
        path = Path(roster)
        if not path.is_file():
            raise HubConfigError(f"roster file {path} not found (expected one user name a line)")
        names += [ln.split("#")[0].strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    names = [n for n in names if n]
    if not names:
        raise HubConfigError("no students given: use --users alice,bob or --roster FILE "
                             "(python course.py hub --users alice,bob)")
    bad = [n for n in names if not _NAME.match(n) or n == accounts.BOARD]
    if bad:
        raise HubConfigError(f"user names must be lowercase letters, digits, '.', '_' or '-' "
                             f"(got {', '.join(map(repr, bad[:3]))})")
    return sorted(set(names))


def parse_size(text: str, option: str = "--mem-limit") -> int:
    """'4G', '512M' or a number of bytes -> bytes; one line otherwise."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    t = str(text).strip().upper().removesuffix("B").removesuffix("I")
    try:
        size = int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except ValueError:
        size = 0
    if size < 256 * 2**20:
        raise HubConfigError(f"{option} must be like 4G or 1500M (at least 256M), got {text!r}")
    return size


def parse_limits(args) -> limits.Limits:
    """The per-student limits from the command line; one line for a bad one."""
    if not 0.05 <= args.cpu_limit <= (os.cpu_count() or 1):
        raise HubConfigError(f"--cpu-limit is in cores, from 0.05 to this machine's "
                             f"{os.cpu_count()}, got {args.cpu_limit:g}")
    if not 32 <= args.pids_limit <= 100_000:
        raise HubConfigError(f"--pids-limit counts a student's processes and threads: from 32 "
                             f"(a server and one kernel need about 40) to 100000, got {args.pids_limit}")
    if not 0 < args.disk_reserve < 0.5:
        raise HubConfigError(f"--disk-reserve is the fraction of the disk kept free, e.g. 0.05, "
                             f"got {args.disk_reserve:g}")
    return limits.Limits(cpu=args.cpu_limit, memory=parse_size(args.mem_limit),
                         pids=args.pids_limit,
                         file_size=parse_size(args.file_limit, "--file-limit"))


def isolation(euid: int, n_users: int, shared: bool) -> str:
    """'accounts' (one Unix account per student: needs root) or 'shared' (every server as
    the hub's user: one student, or all of them when --shared-unix-user says so)."""
    if shared:
        return "shared"
    if euid == 0:
        return "accounts"
    if n_users > 1:
        raise HubConfigError(
            f"{n_users} students without root would all run as your Unix user, able to read "
            f"each other's work and the hub's secrets: run the hub as root (one account per "
            f"student), serve one student, or pass --shared-unix-user to accept it")
    return "shared"


def servers_bin(servers_env: str | None) -> Path:
    """Where jupyterhub-singleuser and the servers' Python are: --servers-env, else the hub's."""
    if not servers_env:
        return Path(sys.executable).parent
    env = Path(servers_env).resolve()
    if not (env / "bin" / "jupyterhub-singleuser").is_file():
        raise HubConfigError(f"--servers-env {env} holds no bin/jupyterhub-singleuser "
                             f"(a venv with requirements.txt and jupyterhub)")
    return env / "bin"


def hub_environment(args, runtime: Path) -> dict[str, str]:
    """The COURSE_HUB_* variables jupyterhub_config.py reads."""
    users = read_users(args.users, args.roster)
    admins = [a for a in (args.admin or "").split(",") if a]
    everyone = sorted(set(users) | set(admins))
    mode = isolation(os.geteuid(), len(everyone), args.shared_unix_user)
    if mode == "accounts":
        try:
            for name in everyone:
                accounts.account_name(args.account_prefix, name)
        except accounts.AccountError as e:
            raise HubConfigError(str(e)) from None
    if not 1 <= args.port <= 65535:
        raise HubConfigError(f"--port must be 1-65535, got {args.port}")
    if not port_is_free(args.port, args.ip):
        raise HubConfigError(
            f"Port {args.port} on {args.ip} is busy (another hub or JupyterLab?). "
            f"Stop it, or choose another port: python course.py hub --port {args.port + 1} ...")
    if args.cull_timeout < 60:
        raise HubConfigError(f"--cull-timeout is in seconds and must be at least 60, "
                             f"got {args.cull_timeout}")
    lim = parse_limits(args)
    env = {
        "COURSE_HUB_RUNTIME": str(runtime),
        "COURSE_HUB_HOMES": str(homes_folder(args, runtime)),
        # The students' verdict records, for the class board: beside the runtime folder.
        "COURSE_HUB_RECORDS": str(runtime.parent / "records"),
        "COURSE_HUB_BOARD_PORT": str(free_port()),
        "COURSE_HUB_ISOLATION": mode,
        "COURSE_HUB_ACCOUNT_PREFIX": args.account_prefix,
        "COURSE_HUB_MEM_LIMIT": str(lim.memory),
        "COURSE_HUB_CPU_LIMIT": str(lim.cpu),
        "COURSE_HUB_PIDS_LIMIT": str(lim.pids),
        "COURSE_HUB_FILE_LIMIT": str(lim.file_size),
        "COURSE_HUB_LIMITS": args.limits,
        "COURSE_HUB_DISK_RESERVE": str(args.disk_reserve),
        "COURSE_HUB_DISK_SHARE": str(parse_size(args.disk_share, "--disk-share")),
        "COURSE_HUB_SERVERS_BIN": str(servers_bin(args.servers_env)),
        "COURSE_HUB_IP": args.ip,
        "COURSE_HUB_PORT": str(args.port),
        # Internal ports picked free, so a second hub (or a test) never collides.
        "COURSE_HUB_API_PORT": str(free_port()),
        "COURSE_HUB_PROXY_API_PORT": str(free_port()),
        "COURSE_HUB_USERS": ",".join(everyone),
        "COURSE_HUB_ADMINS": ",".join(admins),
        "COURSE_HUB_VERSION": args.version,
        "COURSE_HUB_SOLUTIONS": "on" if args.solutions else "off",
        "COURSE_HUB_CULL_TIMEOUT": str(args.cull_timeout),
        # The hub makes the proxy's token itself when unset, with a warning; say it here.
        "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(32),
        # The hub logs provisioning lines with "—": UTF-8 whatever the server's locale.
        "PYTHONUTF8": "1",
    }
    return env


def homes_folder(args, runtime: Path) -> Path:
    """The students' homes: --homes, else homes/ beside the runtime folder (which only the
    hub may open, so the students' homes cannot be inside it)."""
    return Path(args.homes).resolve() if args.homes else runtime.parent / "homes"


def make_accounts(env: dict[str, str], runtime: Path) -> None:
    """One account per student, their homes 700 in a folder everyone may pass through;
    then check that the first account can run the servers' Python."""
    homes = Path(env["COURSE_HUB_HOMES"])
    homes.mkdir(parents=True, exist_ok=True)
    homes.chmod(0o755)
    prefix, users = env["COURSE_HUB_ACCOUNT_PREFIX"], env["COURSE_HUB_USERS"].split(",")
    entries = [accounts.ensure_account(runtime, homes, prefix, u) for u in users]
    board = accounts.ensure_account(runtime, homes, prefix, accounts.BOARD)
    students = [(u, e) for u, e in zip(users, entries)
                if u not in env["COURSE_HUB_ADMINS"].split(",")]        # the board shows students
    accounts.prepare_records(Path(env["COURSE_HUB_RECORDS"]), [e for _, e in students],
                             [u for u, _ in students], board)
    accounts.check_can_run(entries[0], Path(env["COURSE_HUB_SERVERS_BIN"]) / "python")
    write_kernel_notice(Path(env["COURSE_HUB_SERVERS_BIN"]).parent)


# Loaded by every kernel started from the servers' environment (IPython reads
# <sys.prefix>/etc/ipython): the kernel says why one of the student's kernels stopped.
KERNEL_CONFIG = ("# Written by deploy/hub/hub.py: a kernel stopped at the class's memory limit is\n"
                 "# explained in the student's notebook (course_lib.classroom.limit_notice).\n"
                 "c.InteractiveShellApp.extensions = ['course_lib.classroom.limit_notice']\n")


def write_kernel_notice(servers_env: Path) -> None:
    folder = servers_env / "etc" / "ipython"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ipython_kernel_config.py").write_text(KERNEL_CONFIG, encoding="utf-8")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", help="comma-separated user names (the class list)")
    p.add_argument("--roster", help="file with one user name a line")
    p.add_argument("--admin", help="comma-separated admin names (instructors)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--ip", default="127.0.0.1",
                   help="where students connect; 127.0.0.1 unless a TLS proxy fronts the hub")
    p.add_argument("--version", choices=["course", "student"], default="student",
                   help="student (default): exercises to do — solutions stripped, figures and "
                        "saved outputs kept (course_lib.classroom.workspace); course: the "
                        "instructor's lessons, every solution in sight")
    p.add_argument("--solutions", action="store_true",
                   help="let students call show_solution() (off by default in a class)")
    p.add_argument("--cull-timeout", type=int, default=3600,
                   help="seconds of inactivity before a student's server is stopped")
    p.add_argument("--runtime", default=str(RUNTIME),
                   help="the hub's state folder, mode 700 (git-ignored)")
    p.add_argument("--homes", help="students' folders (default: homes/ beside --runtime)")
    p.add_argument("--servers-env",
                   help="the venv students' servers run from (default: the hub's); as root it "
                        "must be one every student account can run (course.py hub builds it)")
    p.add_argument("--account-prefix", default=accounts.DEFAULT_PREFIX,
                   help="as root: each student's Unix account is PREFIX + name")
    p.add_argument("--mem-limit", default="4G",
                   help="as root: memory of all of a student's processes together (and the "
                        "address space of each)")
    p.add_argument("--cpu-limit", type=float, default=1.0,
                   help="as root: cores all of a student's processes may use together")
    p.add_argument("--pids-limit", type=int, default=128,
                   help="as root: a student's processes and threads, all together")
    p.add_argument("--file-limit", default="2G", help="as root: the largest file a student may write")
    p.add_argument("--limits", choices=["auto", "cgroup2", "cgroup1", "rlimits"], default="auto",
                   help="how the limits are kept: control groups where the machine allows "
                        "(auto), or only rlimits (no CPU cap)")
    p.add_argument("--disk-reserve", type=float, default=0.05,
                   help="no server starts while less than this fraction of the disk is free")
    p.add_argument("--disk-share", default="2G",
                   help="a student's folder past this size is flagged on the class board")
    p.add_argument("--shared-unix-user", action="store_true",
                   help="all students' servers run as the hub's own Unix user (see the warning)")
    p.add_argument("--remove-accounts", action="store_true",
                   help="remove the Unix accounts listed in RUNTIME/accounts.txt, then exit")
    return p


def main(argv=None) -> int:
    utf8_output()                # its messages hold "—": any console, any locale
    args = parser().parse_args(argv)
    runtime = Path(args.runtime).resolve()
    if args.remove_accounts:
        return remove(runtime)
    try:
        env = hub_environment(args, runtime)
        runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
        runtime.chmod(0o700)                 # the hub's alone: database, secret, passwords
        if env["COURSE_HUB_ISOLATION"] == "accounts":
            make_accounts(env, runtime)
            groups = limits.detect(parse_limits(args), want=args.limits,
                                   tag=args.account_prefix + "hub")
            print(groups.summary(), flush=True)
            (runtime / limits.BASES).write_text(
                "".join(f"{b}\n" for b in groups.bases.values()), encoding="utf-8")
            env["COURSE_HUB_LIMITS"] = groups.kind     # the hub uses what was found here
    except (HubConfigError, accounts.AccountError) as e:
        print(f"course.py hub: {e}", file=sys.stderr)
        return 1
    if version_notice(args):
        print(version_notice(args), flush=True)
    if env["COURSE_HUB_ISOLATION"] == "shared" and len(env["COURSE_HUB_USERS"].split(",")) > 1:
        print(SHARED_WARNING.format(user=pwd.getpwuid(os.geteuid()).pw_name), flush=True)
    os.environ.update(env)
    os.chdir(runtime)                        # anything the hub writes lands in runtime/
    print(f"JupyterHub for {len(env['COURSE_HUB_USERS'].split(','))} student(s) on "
          f"http://{args.ip}:{args.port} — each student sets a password at first login.",
          flush=True)
    jupyterhub = Path(sys.executable).parent / "jupyterhub"
    os.execv(str(jupyterhub), [str(jupyterhub), "-f", str(CONFIG)])


def version_notice(args) -> str | None:
    """One line when the class is handed the instructor's lessons (every solution in sight)."""
    return COURSE_VERSION_WARNING if args.version == "course" else None


def hub_pid(runtime: Path) -> int | None:
    """The pid of the hub running from `runtime` (JupyterHub removes its pid file on exit)."""
    try:
        pid = int((runtime / "jupyterhub.pid").read_text(encoding="utf-8").strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def remove(runtime: Path) -> int:
    """--remove-accounts: one line if not root; else one line per account removed."""
    if os.geteuid() != 0:
        print("course.py hub: removing accounts needs root (sudo python3 course.py hub "
              "--remove-accounts)", file=sys.stderr)
        return 1
    running = hub_pid(runtime)
    if running:
        print(f"course.py hub: the hub of {runtime} is still running (pid {running}): stop it "
              f"first (Ctrl-C, or kill {running})", file=sys.stderr)
        return 1
    for line in limits.remove_bases(runtime / limits.BASES):
        print(line)
    if not accounts.ledger(runtime):
        print(f"no accounts listed in {runtime / accounts.LEDGER}: nothing to remove")
        return 0
    return accounts.remove_accounts(runtime)


if __name__ == "__main__":
    sys.exit(main())
