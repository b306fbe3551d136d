"""Copy the course into a student's own directory, without ever overwriting their work.

Called by the hub (jupyterhub_config.py, pre-spawn hook) each time a student's
server starts. A manifest (``<home>/.course/manifest.json``) records the hash of
every file this code wrote. On a later start a file is

* created when it is missing,
* updated when the course changed and the student's copy is still exactly what
  we wrote (the instructor fixed a lesson mid-term: unedited copies follow),
* kept — with one log line — when the student's copy differs from what we wrote,
  or when there is no record of writing it (a folder that already held notebooks).

Every notebook written is signed with the *student's* notary (trust is stored
per user, under ``$HOME/.local/share/jupyter``), so saved widgets and plots render
in JupyterLab without re-running.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("course", "student")


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _course_files(root: Path, version: str) -> dict[str, bytes]:
    """relative path -> bytes to place in the student's directory."""
    import nbformat

    files: dict[str, bytes] = {}
    lessons = sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not lessons:
        raise FileNotFoundError(f"no lessons (NN_name.ipynb) in {root / 'notebooks'}")
    from course_lib.classroom.workspace import learner_notebook, lesson_assets

    for path in lessons:
        if version == "student":       # as a learner's own copy: stubs, figures kept
            nb = learner_notebook(nbformat.read(path, as_version=4), where=path.name)
            files[f"notebooks/{path.name}"] = (nbformat.writes(nb) + "\n").encode()
        else:
            files[f"notebooks/{path.name}"] = path.read_bytes()
    for rel in lesson_assets(lessons):             # what the lessons show, no test machinery
        if (root / "assets" / rel).is_file():
            files[f"assets/{rel}"] = (root / "assets" / rel).read_bytes()
    return files


def _sign(paths: list[Path], home: Path) -> None:
    """Trust these notebooks in the student's own notary database."""
    import nbformat
    from nbformat.sign import NotebookNotary

    data_dir = home / ".local" / "share" / "jupyter"
    data_dir.mkdir(parents=True, exist_ok=True)
    notary = NotebookNotary(data_dir=str(data_dir))
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if not notary.check_signature(nb):
            notary.sign(nb)


def provision(home: Path, version: str = "student", root: Path = ROOT) -> list[str]:
    """Bring `home` up to date with the course; returns one line per file not created
    silently ("kept ...", "updated ..."), for the hub's log."""
    if version not in VERSIONS:
        raise ValueError(f"version must be one of {VERSIONS}, got {version!r}")
    home = Path(home)
    manifest_path = home / ".course" / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    lines, written = [], []
    for rel, data in _course_files(Path(root), version).items():
        dest = home / rel
        new = _hash(data)
        if dest.exists():
            current = _hash(dest.read_bytes())
            if current == new:
                manifest[rel] = new
                continue
            if manifest.get(rel) != current:
                lines.append(f"{home.name}: {rel} kept — it holds the student's own edits "
                             "(never overwritten)")
                continue
            lines.append(f"{home.name}: {rel} updated to the course's new version")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        manifest[rel] = new
        if dest.suffix == ".ipynb":
            written.append(dest)
    _sign(written, home)
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    return lines


if __name__ == "__main__":
    # On Kubernetes (deploy/kubernetes/values.yaml) each student's pod runs this at
    # start: python /srv/repo/deploy/hub/provision.py $HOME
    import argparse

    from course_lib.console import utf8_output

    utf8_output()                # its lines hold "—": any console, any locale
    p = argparse.ArgumentParser(description="Copy the course into a student's folder; "
                                "edited files are kept.")
    p.add_argument("home", type=Path)
    p.add_argument("--version", choices=VERSIONS, default="student")
    a = p.parse_args()
    for line in provision(a.home, a.version):
        print(line)
