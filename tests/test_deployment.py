"""Binder / Zero-to-JupyterHub: what repo2docker would build from this repository.

No Docker engine runs here, so we check repo2docker's own reading of the
repository (`--no-build --debug` prints the Dockerfile it would build) and
that the pieces agree: the conda environment, postBuild installing the
no-deps data packages, course_lib and the course kernel the notebooks name.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNEL = "transformers-course"


def _repo_copy(tmp_path) -> Path:
    """The files a clone would have (tracked + new, not ignored): no .venv."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, encoding="utf-8", errors="replace",
                           check=True).stdout.split()
    dest = tmp_path / "repo"
    for f in files:
        if (ROOT / f).is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, dest / f)
    return dest


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory):
    repo = _repo_copy(tmp_path_factory.mktemp("r2d"))
    exe = Path(sys.executable).parent / "repo2docker"
    # repo2docker is Python: PYTHONUTF8=1 so it reads the repository's files as UTF-8, too.
    out = subprocess.run([str(exe), "--no-build", "--debug", str(repo)], env={**os.environ, "PYTHONUTF8": "1"},
                         capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout + out.stderr


def test_repo2docker_uses_the_conda_environment_with_python_311(dockerfile):
    assert "Building conda environment for python=3.11" in dockerfile
    assert 'env update -p ${NB_PYTHON_PREFIX} --file "environment.yml"' in dockerfile


def test_repo2docker_runs_postbuild(dockerfile):
    assert "RUN ./postBuild" in dockerfile


def test_postbuild_installs_data_packages_course_lib_and_the_kernel():
    script = (ROOT / "postBuild").read_text(encoding="utf-8")
    assert "pip install --no-deps -r requirements-nodeps.txt" in script
    assert "pip install --no-deps -e ." in script
    assert f"--name {KERNEL}" in script
    assert subprocess.run(["bash", "-n", str(ROOT / "postBuild")]).returncode == 0
    assert (ROOT / "postBuild").stat().st_mode & 0o111, "postBuild must be executable"


def test_every_lesson_names_the_kernel_that_setup_registers():
    sys.path.insert(0, str(ROOT))
    import course

    assert course.KERNEL == KERNEL, "course.py registers another kernel than the lessons name"
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        spec = json.loads(nb.read_text(encoding="utf-8"))["metadata"]["kernelspec"]
        assert spec["name"] == KERNEL, f"{nb.name} uses kernel {spec['name']!r}"
