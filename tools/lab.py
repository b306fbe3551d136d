"""Start JupyterLab for the course on 127.0.0.1, at lesson 00 of the learner's own copy.

Run by `python course.py lab` in the learner's environment (and so by the browser
test, which starts the server exactly the way a learner does). Checks the port
first so a busy port gives one line instead of a page of Tornado traceback; then
makes or updates the learner's workspace (course_lib.classroom.workspace: my-course/,
exercises to do, their work never overwritten) and opens JupyterLab on it, so the file
browser shows the lessons and nothing of the repository's machinery.

    --instructor      open the instructor's lessons (notebooks/, solutions inside) instead
    --take-new NN     replace your lesson NN by the course's new version (yours kept as a backup)
"""
import argparse
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from course_lib.classroom import workspace
from course_lib.console import utf8_output

ROOT = Path(__file__).resolve().parent.parent
FIRST_LESSON = "notebooks/00_start_here.ipynb"


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


# JupyterLab settings every learner wants: no "get notified about Jupyter news?"
# pop-up (the course is used offline and in class, projected); every cell of a lesson in the
# page (windowing off): JupyterLab 4.6's default, "contentVisibility", leaves far cells to be
# drawn when scrolled to, and a screen reader's heading and find keys, which walk the
# page, must reach every explorer (issue 37; the route is in lesson 00, section 3).
SETTINGS_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}


def install_settings_overrides(prefix: Path = Path(sys.prefix)) -> Path:
    """Write JupyterLab's overrides.json into this environment (idempotent)."""
    path = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    current = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    merged = {**current, **SETTINGS_OVERRIDES}
    if merged != current:
        path.write_text(json.dumps(merged, indent=2), encoding="utf-8")
    return path


def trust_lessons(folder: Path = ROOT / "notebooks") -> int:
    """Mark the course's own lessons trusted, so their saved widgets and plots show.

    JupyterLab renders saved widget state only in trusted notebooks, and trust
    is recorded per machine: a fresh clone's notebooks are untrusted.
    """
    from nbformat import read
    from nbformat.sign import NotebookNotary

    notary = NotebookNotary()
    lessons = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    for path in lessons:
        nb = read(path, as_version=4)
        if not notary.check_signature(nb):
            notary.sign(nb)
    return len(lessons)


def lab_command(port: int, token: str | None, open_browser: bool, root: Path = ROOT) -> list[str]:
    """The jupyter-lab command line (list of args) for this port, serving `root`."""
    cmd = [
        sys.executable, "-m", "jupyterlab",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",      # a busy port must fail, not wander off
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=",              # offline: no news feed fetch
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        # The address Jupyter prints (and `/` redirects to) is lesson 00, not the Launcher:
        # JupyterLab's own default_url ("/lab") wins over ServerApp's, so it is set here.
        f"--LabApp.default_url=/lab/tree/{FIRST_LESSON}",
    ]
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if not open_browser:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")         # containers and CI often run as root
    cmd.append(FIRST_LESSON)
    return cmd


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8888)))
    p.add_argument("--token", default=None, help="fixed token (tests); default: Jupyter makes one")
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--instructor", action="store_true",
                   help="open the instructor's lessons (notebooks/, solutions inside) on purpose")
    p.add_argument("--take-new", metavar="LESSON",
                   help="replace your copy of LESSON (e.g. 02) by the course's new version; "
                        "yours is kept beside it as a backup")
    args = p.parse_args(argv)
    utf8_output()                  # the lines below hold "—" and the learner's file names
    if args.take_new:
        try:
            print(workspace.take_new(args.take_new))
        except workspace.WorkspaceError as e:
            print(f"course.py lab: {e}", file=sys.stderr)
            return 1
        return 0
    if not port_is_free(args.port):
        print(f"Port {args.port} on 127.0.0.1 is busy (another JupyterLab?). "
              f"Stop it, or choose another port: python course.py lab --port {args.port + 1}", file=sys.stderr)
        return 1
    install_settings_overrides()
    if args.instructor:
        root = ROOT
        trust_lessons()
        print("Opening the instructor's lessons (notebooks/): every solution is in sight. "
              "Your own copy is opened by `python3 course.py lab`.")
    else:
        root = workspace.workspace_dir()
        try:
            for line in workspace.sync(root):
                print(line)
        except (workspace.WorkspaceError, OSError) as e:
            print(f"course.py lab: your workspace {root} could not be made or updated: {e}", file=sys.stderr)
            return 1
        trust_lessons(root / "notebooks")
    sys.stdout.flush()
    cmd = lab_command(args.port, args.token, open_browser=not args.no_browser, root=root)
    os.chdir(root)
    if os.name == "nt":            # Windows has no exec: wait for Jupyter instead
        return subprocess.call(cmd)
    os.execv(cmd[0], cmd)          # replace this process: Ctrl-C goes straight to Jupyter


if __name__ == "__main__":
    sys.exit(main())
