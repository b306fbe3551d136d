"""The environments: environment.yml and requirements.txt describe the same learner's
environment, each package is pinned once, and the learner's holds what the lessons import."""
import sys
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
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    pip = [d for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip) == 1, "environment.yml needs exactly one pip: section"
    return _pins(pip[0]["pip"])


# environment.yml's only pin beyond requirements.txt: the Kubernetes image's JupyterHub,
# which must be the chart's hub's (tests/test_hub_kubernetes.py checks the version). The
# learner's environment (requirements.txt) needs no JupyterHub at all.
IMAGE_ONLY = {"jupyterhub"}


def test_environment_yml_pins_equal_requirements_txt():
    req = _pins((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())
    conda = _conda_pip_pins()
    assert IMAGE_ONLY <= conda.keys(), f"environment.yml lacks the image's {IMAGE_ONLY}"
    assert not IMAGE_ONLY & req.keys(), f"{IMAGE_ONLY} belongs to the image, not the learner"
    conda = {k: v for k, v in conda.items() if k not in IMAGE_ONLY}
    missing = {k: v for k, v in req.items() if k not in conda}
    extra = {k: v for k, v in conda.items() if k not in req}
    differ = {k: (req[k], conda[k]) for k in req.keys() & conda.keys() if req[k] != conda[k]}
    assert not (missing or extra or differ), (
        f"environment.yml disagrees with requirements.txt: missing {missing}, "
        f"extra {extra}, different versions (requirements, environment) {differ}")


def test_torch_is_pinned_exactly_to_the_cpu_release():
    # A range would let pip pull a multi-GB CUDA build.
    assert _pins((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())["torch"] == "2.13.0"


def test_installed_versions_match_the_pins():
    req = _pins((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())
    report = environment_report()
    for pkg in ("numpy", "matplotlib", "ipywidgets", "jupyterlab", "bertviz"):
        assert report[pkg] == req[pkg], f"{pkg} {report[pkg]} installed, {req[pkg]} pinned"
    assert report["torch"].split("+")[0] == req["torch"]


# --------------------------------------------------------------------------- split
REQUIREMENT_FILES = ("requirements.txt", "requirements-instructor.txt", "requirements-nodeps.txt")
# Imported only where they exist: Google Colab's own module (the Colab set-up cell).
NOT_FROM_PYPI = {"google"}


def test_each_package_is_pinned_in_one_file_only():
    seen = {}
    for name in REQUIREMENT_FILES:
        for pkg in _pins((ROOT / name).read_text(encoding="utf-8").splitlines()):
            assert pkg not in seen, f"{pkg} is pinned in both {seen[pkg]} and {name}"
            seen[pkg] = name


def _third_party_imports() -> dict[str, str]:
    """{top-level module: where it is imported} for course_lib and the lessons' code."""
    import ast
    import json

    sources = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
               for p in sorted((ROOT / "course_lib").rglob("*.py"))]
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for i, cell in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "code":
                code = "\n".join(line for line in "".join(cell["source"]).splitlines()
                                 if not line.lstrip().startswith(("%", "!")))
                sources.append((f"{nb.name} cell {i}", code))
    found = {}
    for where, code in sources:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "course_lib":
                    found.setdefault(top, where)
    return found


def _closure(requirements: set[str]) -> set[str]:
    """The distributions `requirements` install, with their dependencies (as installed here;
    one not installed here is taken as it is)."""
    import importlib.metadata as md

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    todo, done = [canonicalize_name(r) for r in requirements], set()
    while todo:
        name = todo.pop()
        if name in done:
            continue
        done.add(name)
        try:
            specs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for spec in specs:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return done


def _learner_distributions() -> set[str]:
    from packaging.utils import canonicalize_name

    installed = _closure(set(_pins((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())))
    # The data packages go in with --no-deps: themselves only.
    return installed | {canonicalize_name(n) for n in
                        _pins((ROOT / "requirements-nodeps.txt").read_text(encoding="utf-8").splitlines())}


def _not_provided(imports: dict[str, str], installed: set[str]) -> dict:
    """{module: (where, distributions that provide it)} for imports `installed` lacks."""
    import importlib.metadata as md

    from packaging.utils import canonicalize_name

    providers = md.packages_distributions()
    missing = {}
    for module, where in imports.items():
        if module in NOT_FROM_PYPI:
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists & installed:
            missing[module] = (where, sorted(dists) or "not installed here")
    return missing


def test_the_learner_environment_has_what_the_lessons_import():
    imports = _third_party_imports()
    assert {"torch", "matplotlib", "ipywidgets", "bertviz", "gguf"} <= set(imports)
    missing = _not_provided(imports, _learner_distributions())
    assert not missing, ("imported by the lessons or course_lib but not in the learner's "
                         f"environment (requirements.txt and its dependencies): {missing}")


def test_an_instructor_tool_imported_by_a_lesson_is_caught():
    planted = {"nbgrader": "lesson cell", "pytest": "course_lib/x.py", "psutil": "11 cell 3"}
    missing = _not_provided(planted, _learner_distributions())
    assert set(missing) == {"nbgrader", "pytest"}, missing     # psutil comes with ipykernel
