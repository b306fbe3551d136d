"""environment.yml and requirements.txt describe the same environment."""
from pathlib import Path

import yaml

from course_lib.classroom.environment import environment_report

ROOT = Path(__file__).resolve().parent.parent


def _pins(lines) -> dict:
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if line and not line.startswith("--"):     # pip options, e.g. an index URL
            name, _, version = line.partition("==")
            assert version, f"unpinned requirement {line!r}: pin it with =="
            pins[name.lower()] = version
    return pins


def _conda_pip_pins() -> dict:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = [d for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip) == 1, "environment.yml needs exactly one pip: section"
    return _pins(pip[0]["pip"])


def test_environment_yml_pins_equal_requirements_txt():
    req = _pins((ROOT / "requirements.txt").read_text().splitlines())
    conda = _conda_pip_pins()
    missing = {k: v for k, v in req.items() if k not in conda}
    extra = {k: v for k, v in conda.items() if k not in req}
    differ = {k: (req[k], conda[k]) for k in req.keys() & conda.keys() if req[k] != conda[k]}
    assert not (missing or extra or differ), (
        f"environment.yml disagrees with requirements.txt: missing {missing}, "
        f"extra {extra}, different versions (requirements, environment) {differ}")


def test_torch_is_pinned_exactly_to_the_cpu_release():
    # A range would let pip pull a multi-GB CUDA build.
    assert _pins((ROOT / "requirements.txt").read_text().splitlines())["torch"] == "2.13.0"


def test_installed_versions_match_the_pins():
    req = _pins((ROOT / "requirements.txt").read_text().splitlines())
    report = environment_report()
    for pkg in ("numpy", "matplotlib", "ipywidgets", "jupyterlab", "bertviz"):
        assert report[pkg] == req[pkg], f"{pkg} {report[pkg]} installed, {req[pkg]} pinned"
    assert report["torch"].split("+")[0] == req["torch"]
