"""CI run as root: the README's test command again, as an ordinary account.

A learner or a maintainer without root gets the course from a fresh clone and runs
`python3 course.py test`; the tests that need root skip with their reason, everything
else must pass. Here: a throwaway account (removed after, whatever happens), a fresh
clone of this repository in a folder of its own, the system's `python3` first on PATH
(root's own Python may sit in a folder other accounts cannot open), the package index
settings passed on (PIP_*). Prints the time taken; exits with the tests' status.

    sudo python3 .ci/unprivileged.py [extra arguments for course.py test]
"""
from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"


def tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=SBIN)
    if not found:
        sys.exit(f"unprivileged: {name} not found: install the system's account tools (passwd)")
    return found


def main() -> int:
    if os.geteuid() != 0:
        print("unprivileged: not root, so this CI run already is an ordinary account's")
        return 0
    name = f"course-ci-{secrets.token_hex(3)}"
    base = Path(tempfile.mkdtemp(prefix="course-ci-"))
    base.chmod(0o755)
    home = base / "home"
    subprocess.run([tool("useradd"), "--create-home", "--home-dir", str(home),
                    "--shell", "/bin/sh", name], check=True)
    try:
        entry = pwd.getpwnam(name)
        clone = home / "course"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)],
                       check=True)
        # Its temporary files (pytest's, torch's compile cache) go in a folder of its own,
        # removed with the account: nothing of it is left in the shared /tmp.
        (home / "tmp").mkdir(mode=0o700)
        subprocess.run(["chown", "-R", f"{entry.pw_uid}:{entry.pw_gid}", str(home)], check=True)
        env = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
        env.update(HOME=str(home), USER=name, LOGNAME=name, LANG="C.UTF-8", TMPDIR=str(home / "tmp"),
                   PATH="/usr/local/bin:/usr/bin:/bin", TERM=os.environ.get("TERM", "dumb"))
        print(f"== as {name} (uid {entry.pw_uid}), a fresh clone in {clone}, "
              f"{shutil.which('python3', path=env['PATH'])}: python3 course.py test "
              f"{' '.join(sys.argv[1:])}", flush=True)
        t0 = time.monotonic()
        status = subprocess.run(["python3", "course.py", "test", *sys.argv[1:]], cwd=clone,
                                env=env, user=entry.pw_uid, group=entry.pw_gid,
                                extra_groups=[]).returncode
        print(f"== as {name}: exit {status} after {time.monotonic() - t0:.0f} s", flush=True)
        return status
    finally:
        uid = pwd.getpwnam(name).pw_uid
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and proc.stat().st_uid == uid:
                    os.kill(int(proc.name), signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.5)
        subprocess.run([tool("userdel"), name], check=False)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
