"""The learner's own copy of the course: exercises to do, figures already there, work kept.

`python course.py lab` opens a *workspace* — by default `my-course/` beside the course's
files (git ignores it), or $COURSE_WORKSPACE — made from the instructor's lessons:

    my-course/notebooks/NN_name.ipynb   the lessons, learner's version (see `learner_notebook`)
    my-course/assets/...                the files the lessons show (../assets/x.svg)
    my-course/.course/manifest.json     what was written last, to tell the learner's edits apart

Each lesson's learner version: every solution becomes its stub (`raise NotImplementedError`),
the checks' outputs are cleared (no ✅ before the learner runs one), and so are the outputs of
the cells that answer a prediction (tag "concept-answer": the learner predicts first) and any
answer a saved concept check holds; every other output — figures, tables, saved explorer
pictures — stays, so a lesson reads like a book before anything runs. nbgrader's graded cells
("# Graded when you hand in the lesson", hidden tests stripped) mean nothing to a learner
working alone and are left out of the workspace; the hub's class copy, which is handed in,
keeps them (`keep_graded`). Solutions are one deliberate step away: `show_solution`
(course_lib.classroom.solutions).

Updates never cost work. When the course changes (`git pull`), the next `sync` brings each
changed lesson in where the learner has not edited it, and *keeps* every lesson they did edit,
saying in one line that a newer version exists and which command takes it (`take_new`, which
keeps their copy as a backup first). Why keep rather than merge their exercise cells into the
new lesson: a course fix may change the very cell they worked in (a signature, a hint), and a
merge that guesses could lose or break their code silently; a kept file loses nothing. "Edited"
means a cell's source differs from what was written (running cells and saving is not editing).
While a JupyterLab serves the workspace, `sync` changes nothing (its open tabs may hold unsaved
edits) and says so.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

import nbformat

from .student import BEGIN, HIDDEN_BEGIN, HIDDEN_END, fingerprint, strip_hidden_tests, strip_solutions
from course_lib.mathtext import speakable_markdown

ROOT = Path(__file__).resolve().parents[2]          # the course's files (instructor lessons)
DEFAULT_NAME = "my-course"
LESSON_GLOB = "[0-9][0-9]_*.ipynb"
_CHECK_CALL = re.compile(r"^\s*check_\w+\(", re.M)
_ASSET_REF = re.compile(r"\.\./assets/([\w./-]+)")


class WorkspaceError(ValueError):
    """A problem with the workspace the learner can fix; the message is one line."""


def workspace_dir(environ=None) -> Path:
    """Where the learner's copy lives: $COURSE_WORKSPACE, else my-course/ beside the course."""
    environ = os.environ if environ is None else environ
    chosen = environ.get("COURSE_WORKSPACE")
    return Path(chosen).expanduser().resolve() if chosen else ROOT / DEFAULT_NAME


def is_check_cell(cell) -> bool:
    """A cell that runs an exercise's check (`check_softmax(softmax)`)."""
    return cell.cell_type == "code" and "course_lib.exercises" in cell.source \
        and bool(_CHECK_CALL.search(cell.source))


CONCEPT_ANSWER = "concept-answer"     # the tag of a cell whose output answers a prediction


def is_graded_cell(cell) -> bool:
    """nbgrader's graded cell (tools/nbgrader_metadata.py): the check run again, hidden."""
    return cell.cell_type == "code" and (HIDDEN_BEGIN in cell.source or HIDDEN_END in cell.source)


def _unanswered(nb: nbformat.NotebookNode) -> None:
    """Saved concept checks (course_lib.exercises.concepts.widget) show no answer."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    for model in state.get("state", {}).values():
        st = model.get("state", {}) if isinstance(model, dict) else {}
        if "question_id" in st and st.get("verdict"):
            st["verdict"] = {}


def learner_notebook(nb: nbformat.NotebookNode, where: str = "notebook",
                     keep_graded: bool = True) -> nbformat.NotebookNode:
    """A copy of the instructor's `nb` for a learner: solutions stubbed, the checks' and the
    predictions' answers ("concept-answer" cells) cleared, every other output (and the saved
    widget state, concept checks unanswered) kept, each formula of the Markdown labelled with
    its words for a screen reader (course_lib.mathtext). keep_graded=False leaves nbgrader's
    graded cells out (the learner's own workspace; the hub's class copy keeps them)."""
    nb = nbformat.from_dict(nb)          # deep copy
    if not keep_graded:
        nb.cells = [c for c in nb.cells if not is_graded_cell(c)]
    _unanswered(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            cell.source = speakable_markdown(cell.source)    # each formula said as one phrase
        if cell.cell_type != "code":
            continue
        exercise = BEGIN in cell.source
        graded = is_graded_cell(cell)
        answer = CONCEPT_ANSWER in cell.metadata.get("tags", [])
        if exercise:
            cell.source = strip_solutions(cell.source, f"{where}, cell {i}")
        if graded:
            cell.source = strip_hidden_tests(cell.source, f"{where}, cell {i}")
        if exercise or graded or answer or is_check_cell(cell):
            # An exercise's own cell prints nothing worth keeping; its check said ✅; nbgrader's
            # graded cell is a comment in the learner's copy (no run count either).
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    nb.metadata["course_student"] = {"fingerprint": fingerprint(nb)}
    return nb


def lesson_assets(lessons: list[Path]) -> list[str]:
    """The files under assets/ the lessons show (`../assets/x.svg`), relative to assets/."""
    found = set()
    for path in lessons:
        found.update(_ASSET_REF.findall(path.read_text(encoding="utf-8")))
    return sorted(found)


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _lessons(source: Path) -> list[Path]:
    lessons = sorted(Path(source).glob(LESSON_GLOB))
    if not lessons:
        raise WorkspaceError(f"no lessons (NN_name.ipynb) in {source}")
    return lessons


def _edited(path: Path) -> bool:
    """Whether the learner changed a cell's source since the file was written."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:                       # noqa: BLE001 — a damaged file is theirs: keep it
        return True
    recorded = nb.metadata.get("course_student", {}).get("fingerprint")
    return recorded != fingerprint(nb)


def _manifest_path(workspace: Path) -> Path:
    return workspace / ".course" / "manifest.json"


def _read_manifest(workspace: Path) -> dict:
    path = _manifest_path(workspace)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_manifest(workspace: Path, manifest: dict) -> None:
    path = _manifest_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")


def learner_files(source: Path = ROOT / "notebooks", assets: Path = ROOT / "assets") -> dict[str, bytes]:
    """{path in the workspace: bytes}: every lesson's learner version and the assets they show."""
    lessons = _lessons(source)
    files = {}
    for path in lessons:
        nb = learner_notebook(nbformat.read(path, as_version=4), where=path.name, keep_graded=False)
        files[f"notebooks/{path.name}"] = (nbformat.writes(nb) + "\n").encode("utf-8")
    for rel in lesson_assets(lessons):
        if (Path(assets) / rel).is_file():
            files[f"assets/{rel}"] = (Path(assets) / rel).read_bytes()
    return files


def serving(workspace: Path) -> str | None:
    """The URL of a running Jupyter server whose root is `workspace`, else None."""
    try:
        from jupyter_server.serverapp import list_running_servers
    except ImportError:
        return None
    target = os.path.realpath(str(workspace))
    for info in list_running_servers():
        if os.path.realpath(str(info.get("root_dir", ""))) == target:
            return info.get("url") or "a running JupyterLab"
    return None


def take_command(lesson: str) -> str:
    return f"python3 course.py lab --take-new {lesson[:2]}"


def sync(workspace: Path | None = None, source: Path = ROOT / "notebooks",
         assets: Path = ROOT / "assets", check_running: bool = True) -> list[str]:
    """Create or update the workspace from the course; one line per thing the learner should
    know (created, updated lessons; kept lessons that have a newer version)."""
    workspace = Path(workspace or workspace_dir())
    if check_running and workspace.is_dir():
        url = serving(workspace)
        if url:
            return [f"A JupyterLab already serves your workspace ({url}): nothing in it was "
                    "changed; the course's updates come in when you start `lab` after stopping it."]
    first = not workspace.exists()
    manifest = _read_manifest(workspace)
    lines, written = [], []
    for rel, data in learner_files(source, assets).items():
        dest = workspace / rel
        new = _hash(data)
        if dest.exists():
            current = dest.read_bytes()
            if _hash(current) == new or manifest.get(rel) == new:
                manifest[rel] = new         # up to date (or this version already offered)
                continue
            if dest.suffix == ".ipynb" and _edited(dest):
                lines.append(f"{dest.name}: a newer version of this lesson exists; yours holds your "
                             f"work and is kept. `{take_command(dest.name)}` takes the new one "
                             "(your copy saved beside it as a backup).")
                continue
            if dest.suffix != ".ipynb" and manifest.get(rel) not in (None, _hash(current)):
                lines.append(f"{rel}: kept (you changed it); the course's new version is not copied.")
                continue
            lines.append(f"{dest.name}: updated to the course's new version.")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        manifest[rel] = new
        written.append(dest)
    _write_manifest(workspace, manifest)
    if first:
        lines = [f"Your own copy of the course is in {workspace} (exercises to do; "
                 "your work there is never overwritten)."]
    return lines


def find_lesson(workspace: Path, lesson: str) -> Path:
    """The workspace's lesson for '02', '2', '02_attention' or '02_attention.ipynb'."""
    key = lesson.removesuffix(".ipynb")
    if key.isdigit():
        key = f"{int(key):02d}_"
    hits = sorted(p for p in (workspace / "notebooks").glob(LESSON_GLOB) if p.stem.startswith(key))
    if len(hits) != 1:
        names = ", ".join(p.stem for p in sorted((workspace / "notebooks").glob(LESSON_GLOB)))
        raise WorkspaceError(f"no single lesson matches {lesson!r} in {workspace / 'notebooks'} "
                             f"(lessons: {names or 'none'})")
    return hits[0]


def backup(path: Path) -> Path:
    """Copy `path` beside itself as NN_name.backup-<date-time>.ipynb; return the copy."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    copy = path.with_name(f"{path.stem}.backup-{stamp}{path.suffix}")
    n = 1
    while copy.exists():
        n += 1
        copy = path.with_name(f"{path.stem}.backup-{stamp}-{n}{path.suffix}")
    shutil.copy2(path, copy)
    return copy


def take_new(lesson: str, workspace: Path | None = None, source: Path = ROOT / "notebooks") -> str:
    """Replace the learner's copy of `lesson` by the course's current version, after backing
    theirs up beside it. One line saying what happened."""
    workspace = Path(workspace or workspace_dir())
    url = serving(workspace)
    if url:
        raise WorkspaceError(f"a JupyterLab serves your workspace ({url}); stop it first "
                             "(File > Shut Down), so no open tab holds unsaved work")
    mine = find_lesson(workspace, lesson)
    original = Path(source) / mine.name
    if not original.is_file():
        raise WorkspaceError(f"the course has no lesson {mine.name} any more; yours is kept")
    data = (nbformat.writes(learner_notebook(nbformat.read(original, as_version=4),
                                             where=original.name, keep_graded=False)) + "\n").encode("utf-8")
    saved = backup(mine)
    mine.write_bytes(data)
    manifest = _read_manifest(workspace)
    manifest[f"notebooks/{mine.name}"] = _hash(data)
    _write_manifest(workspace, manifest)
    return f"{mine.name}: the course's new version is in place; your copy is {saved.name}."
