"""The Colab set-up cell: every lesson's first code cell installs the course on Google
Colab and does nothing anywhere else.

    python tools/colab_cell.py notebooks/*.ipynb          # insert or update the cell
    python tools/colab_cell.py --check notebooks/*.ipynb  # exit 1 if a lesson is out of date

The cell is tagged `colab-setup` (cell id `colab-setup`), its code folded (JupyterLab's
`source_hidden`, Colab's form view), and sits just before the lesson's first other code cell. Running the tool again changes nothing unless the
cell's text changed (it is idempotent, and a notebook is rewritten only when it
changes).

Outside Colab the cell only checks `"google.colab" in sys.modules`: no pip, no
output. On Colab it clones the course repository into /content/transformers-course,
then runs this file with `--install`, which pip-installs what Colab lacks (pinned as in
requirements.txt; Colab's own torch, numpy, matplotlib, ipywidgets and transformers
are kept), the data packages with --no-deps and course_lib itself, and moves to the
clone's notebooks/ folder so relative paths work as in a local checkout.

The repository URL has ONE place: COURSE_REPO_URL below. Left empty, the URL of the
checkout's `origin` remote is used when it is a public http(s) or ssh URL, else a
placeholder; on Colab a cell with the placeholder stops with a message that says
what to set.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

# Instructors: set this to the course repository that Colab should clone, e.g.
# "https://github.com/your-org/transformers-course.git", then re-run this tool and commit.
COURSE_REPO_URL = ""

PLACEHOLDER_URL = "https://github.com/YOUR-ORG/YOUR-REPO.git"
TAG = "colab-setup"
COLAB_DIR = "/content/transformers-course"
ROOT = Path(__file__).resolve().parent.parent

# Needed by the lessons but not on Colab's image (installed pinned when missing);
# the rest of requirements.txt is tooling for this repository (tests, JupyterLab,
# export) that Colab does not need.
TOOLING = {"jupyterlab", "ipykernel", "nbformat", "nbclient", "nbconvert", "nbval", "pytest",
           "pytest-timeout", "playwright", "jupyter-repo2docker", "jupyter-server-mathjax"}

CELL_TEMPLATE = '''\
# @title Colab set-up: installs the course on Google Colab; does nothing anywhere else { display-mode: "form" }
import sys
if "google.colab" in sys.modules:
    COURSE_REPO_URL = "{url}"  # set in tools/colab_cell.py
    import importlib, os, subprocess
    if "YOUR-ORG" in COURSE_REPO_URL:
        raise RuntimeError("This copy of the course does not say where it lives: the instructor sets "
                           "COURSE_REPO_URL in tools/colab_cell.py and runs it (see the README, 'Colab').")
    if not os.path.isdir("{colab_dir}"):
        subprocess.run(["git", "clone", "--depth", "1", "--quiet", COURSE_REPO_URL, "{colab_dir}"], check=True)
        subprocess.run([sys.executable, "{colab_dir}/tools/colab_cell.py", "--install", "{colab_dir}"], check=True)
    importlib.invalidate_caches()
    os.chdir("{colab_dir}/notebooks")
    from google.colab import output
    output.enable_custom_widget_manager()
    print("Course ready on Colab:", COURSE_REPO_URL)'''


# ----------------------------------------------------------------------------- URL
def _public_url(remote: str) -> str | None:
    """origin remote -> an https URL Colab can clone, or None (local path, file://...)."""
    remote = remote.strip()
    m = re.fullmatch(r"(?:ssh://)?git@([\w.-]+)[:/](.+?)/?", remote)
    if m:
        path = m.group(2) if m.group(2).endswith(".git") else m.group(2) + ".git"
        return f"https://{m.group(1)}/{path}"
    m = re.fullmatch(r"https?://(?:[^@/]+@)?([\w.-]+\.[a-z]{2,})(/.+)", remote)
    if m and m.group(1) not in ("localhost",):
        return f"https://{m.group(1)}{m.group(2)}"   # without credentials
    return None


def repo_url(root: Path = ROOT) -> str:
    """COURSE_REPO_URL if set, else the public `origin` URL of `root`, else the placeholder."""
    if COURSE_REPO_URL:
        return COURSE_REPO_URL
    try:
        origin = subprocess.run(["git", "remote", "get-url", "origin"], cwd=root, capture_output=True,
                                text=True, encoding="utf-8", errors="replace", timeout=10)
    except (OSError, subprocess.SubprocessError):
        return PLACEHOLDER_URL
    if origin.returncode == 0:
        return _public_url(origin.stdout) or PLACEHOLDER_URL
    return PLACEHOLDER_URL


# ----------------------------------------------------------------------------- cell
def cell_source(url: str) -> str:
    if '"' in url or "\\" in url or "\n" in url:
        raise ValueError(f"not a repository URL: {url!r}")
    return CELL_TEMPLATE.replace("{url}", url).replace("{colab_dir}", COLAB_DIR)


def url_in_cell(source: str) -> str | None:
    m = re.search(r'^    COURSE_REPO_URL = "([^"]*)"', source, re.M)
    return m.group(1) if m else None


def make_cell(url: str):
    import nbformat   # here, not at the top: `--install` runs before anything is installed

    cell = nbformat.v4.new_code_cell(cell_source(url))
    cell.id = TAG
    cell.metadata["tags"] = [TAG]
    cell.metadata.update(HIDDEN)
    return cell


# Its code folded away: JupyterLab shows a one-line "…" bar (click to unfold), Colab its
# title. A learner on a laptop needs none of its 18 lines.
HIDDEN = {"jupyter": {"source_hidden": True}, "cellView": "form"}


def _hide(cell) -> bool:
    """Fold the cell's code; True if that changed anything."""
    changed = any(cell.metadata.get(k) != v for k, v in HIDDEN.items())
    cell.metadata.update(HIDDEN)
    return changed


def is_setup_cell(cell) -> bool:
    return cell.cell_type == "code" and TAG in cell.get("metadata", {}).get("tags", [])


def apply(nb, url: str) -> str:
    """Put the set-up cell first among `nb`'s code cells. Returns "inserted", "updated",
    "moved" or "unchanged"; edits `nb` in place."""
    import nbformat

    existing = [i for i, c in enumerate(nb.cells) if is_setup_cell(c)]
    want = cell_source(url)
    if existing:
        i = existing[0]
        cell = nb.cells[i]
        others = [c for c in nb.cells if not is_setup_cell(c)]
        first_code = next((j for j, c in enumerate(nb.cells) if c.cell_type == "code"), None)
        status = "unchanged"
        if cell.source != want:
            cell.source, cell.outputs, cell.execution_count = want, [], None
            status = "updated"
        if _hide(cell):
            status = "updated"
        if len(existing) > 1 or first_code != i:
            nb.cells = others
            status = "moved" if status == "unchanged" else status
        else:
            return status
    else:
        cell = make_cell(url)
        status = "inserted"
    # not in place (or new): just before the first other code cell
    pos = next((j for j, c in enumerate(nb.cells) if c.cell_type == "code"), None)
    if pos is None:
        pos = 1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0
    if nb.get("nbformat_minor", 5) < 5:
        cell.pop("id", None)                        # cell ids arrived in nbformat 4.5
    elif any(c.get("id") == cell.get("id") for c in nb.cells):
        cell.id = nbformat.v4.new_code_cell().id   # keep ids unique
    nb.cells.insert(pos, cell)
    return status


def update(paths, check=False, url=None) -> tuple[int, list[str]]:
    """Apply the cell to every notebook; with check=True write nothing. Returns
    (number out of date, report lines)."""
    import nbformat

    url = url or repo_url()
    out_of_date, lines = 0, []
    for path in map(Path, paths):
        if path.suffix != ".ipynb" or not path.is_file():
            raise SystemExit(f"colab_cell: {path}: not a notebook")
        nb = nbformat.read(path, as_version=4)
        status = apply(nb, url)
        if status != "unchanged":
            out_of_date += 1
            if not check:
                nbformat.write(nb, path)
        lines.append(f"{path.name}: {status if not check or status == 'unchanged' else 'out of date (' + status + ')'}")
    return out_of_date, lines


# ----------------------------------------------------------------------------- Colab side
def _pins(text: str) -> list[tuple[str, str]]:
    pins = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, _, version = line.partition("==")
        pins.append((name.strip(), version.strip()))
    return pins


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def plan_install(course_dir: Path, installed: dict[str, str]) -> list[list[str]]:
    """The pip commands that make a Colab runtime run the lessons.

    installed: {normalised distribution name: version} of what the runtime has.
    Missing lesson dependencies are installed at the pinned version; what Colab
    already has is kept (replacing torch or ipywidgets in a running Colab kernel
    breaks it); the data packages go in with --no-deps, then course_lib.
    """
    course_dir = Path(course_dir)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    missing = [f"{name}=={version}" if version else name
               for name, version in _pins((course_dir / "requirements.txt").read_text(encoding="utf-8"))
               if _normalise(name) not in TOOLING and _normalise(name) not in installed]
    commands = []
    if missing:
        commands.append(pip + missing)
    commands.append(pip + ["--no-deps", "-r", str(course_dir / "requirements-nodeps.txt")])
    commands.append(pip + ["--no-deps", str(course_dir)])
    return commands


def install(course_dir: Path) -> int:
    installed = {_normalise(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()
                 if d.metadata["Name"]}
    for command in plan_install(Path(course_dir), installed):
        subprocess.run(command, check=True)
    return 0


# ----------------------------------------------------------------------------- CLI
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook is out of date")
    ap.add_argument("--install", metavar="COURSE_DIR", type=Path,
                    help="(run by the cell on Colab) pip-install the course from its clone")
    args = ap.parse_args(argv)
    if args.install:
        return install(args.install)
    from course_lib.console import utf8_output   # here: --install runs before course_lib is installed
    utf8_output()
    if not args.notebooks:
        ap.error("give the lessons, e.g. notebooks/*.ipynb")
    url = repo_url()
    n, lines = update(args.notebooks, check=args.check, url=url)
    print("\n".join(lines))
    if url == PLACEHOLDER_URL:
        print(f"note: the cells carry the placeholder {PLACEHOLDER_URL}: set COURSE_REPO_URL in "
              "tools/colab_cell.py (there is no public `origin` remote to take it from)")
    if args.check and n:
        print(f"{n} notebook(s) out of date: run python tools/colab_cell.py notebooks/*.ipynb")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
