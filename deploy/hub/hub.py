"""Start a JupyterHub that serves the course to a class (`python course.py hub`).

    python deploy/hub/hub.py --users alice,bob,carol [--port 8000]
    python deploy/hub/hub.py --roster roster.txt --admin teacher

Checks what it is given (one line per problem, no traceback), keeps every piece
of state — database, cookie secret, passwords, students' homes — in a git-ignored
runtime folder, then replaces itself with `jupyterhub -f jupyterhub_config.py`.
Each student chooses their password the first time they log in.
"""
from __future__ import annotations

import argparse
import os
import re
import secrets
import socket
import sys
from pathlib import Path

from course_lib.console import utf8_output


HERE = Path(__file__).resolve().parent
RUNTIME = HERE / "runtime"
CONFIG = HERE / "jupyterhub_config.py"
# JupyterHub's own rule for names that make safe URLs and folder names.
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


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
    bad = [n for n in names if not _NAME.match(n)]
    if bad:
        raise HubConfigError(f"user names must be lowercase letters, digits, '.', '_' or '-' "
                             f"(got {', '.join(map(repr, bad[:3]))})")
    return sorted(set(names))


def hub_environment(args, runtime: Path) -> dict[str, str]:
    """The COURSE_HUB_* variables jupyterhub_config.py reads."""
    users = read_users(args.users, args.roster)
    admins = [a for a in (args.admin or "").split(",") if a]
    if not 1 <= args.port <= 65535:
        raise HubConfigError(f"--port must be 1-65535, got {args.port}")
    if not port_is_free(args.port, args.ip):
        raise HubConfigError(
            f"Port {args.port} on {args.ip} is busy (another hub or JupyterLab?). "
            f"Stop it, or choose another port: python course.py hub --port {args.port + 1} ...")
    if args.cull_timeout < 60:
        raise HubConfigError(f"--cull-timeout is in seconds and must be at least 60, "
                             f"got {args.cull_timeout}")
    env = {
        "COURSE_HUB_RUNTIME": str(runtime),
        "COURSE_HUB_HOMES": str(Path(args.homes).resolve() if args.homes else runtime / "homes"),
        "COURSE_HUB_IP": args.ip,
        "COURSE_HUB_PORT": str(args.port),
        # Internal ports picked free, so a second hub (or a test) never collides.
        "COURSE_HUB_API_PORT": str(free_port()),
        "COURSE_HUB_PROXY_API_PORT": str(free_port()),
        "COURSE_HUB_USERS": ",".join(sorted(set(users) | set(admins))),
        "COURSE_HUB_ADMINS": ",".join(admins),
        "COURSE_HUB_VERSION": args.version,
        "COURSE_HUB_CULL_TIMEOUT": str(args.cull_timeout),
        # The hub makes the proxy's token itself when unset, with a warning; say it here.
        "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(32),
        # The hub logs provisioning lines with "—": UTF-8 whatever the server's locale.
        "PYTHONUTF8": "1",
    }
    return env


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", help="comma-separated user names (the class list)")
    p.add_argument("--roster", help="file with one user name a line")
    p.add_argument("--admin", help="comma-separated admin names (instructors)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--ip", default="127.0.0.1",
                   help="where students connect; 127.0.0.1 unless a TLS proxy fronts the hub")
    p.add_argument("--version", choices=["course", "student"], default="course",
                   help="course: lessons with solutions and saved outputs (as in the repo); "
                        "student: solutions stripped (course_lib.classroom.student)")
    p.add_argument("--cull-timeout", type=int, default=3600,
                   help="seconds of inactivity before a student's server is stopped")
    p.add_argument("--runtime", default=str(RUNTIME), help="state folder (git-ignored)")
    p.add_argument("--homes", help="students' folders (default: RUNTIME/homes)")
    return p


def main(argv=None) -> int:
    utf8_output()                # its messages hold "—": any console, any locale
    args = parser().parse_args(argv)
    runtime = Path(args.runtime).resolve()
    try:
        env = hub_environment(args, runtime)
    except HubConfigError as e:
        print(f"course.py hub: {e}", file=sys.stderr)
        return 1
    runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.environ.update(env)
    os.chdir(runtime)                        # anything the hub writes lands in runtime/
    print(f"JupyterHub for {len(env['COURSE_HUB_USERS'].split(','))} student(s) on "
          f"http://{args.ip}:{args.port} — each student sets a password at first login.",
          flush=True)
    jupyterhub = Path(sys.executable).parent / "jupyterhub"
    os.execv(str(jupyterhub), [str(jupyterhub), "-f", str(CONFIG)])


if __name__ == "__main__":
    sys.exit(main())
