"""The package layout holds (issue 14): dependencies point one way, no import cycles, short modules.

    widgets → viz → core (course_lib.nn) → torch

The import graph is built with `ast` from the source (relative imports and imports inside
functions included), so it sees what a learner's `import` would run, without importing.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "course_lib"
MAX_LINES = 400
LENGTH_REASON = "Length:"   # a line of the module docstring's first 10 that says why it is longer

# What each part may not import (prefixes of module names).
NOTEBOOK_TOOLING = ("ipywidgets", "IPython", "tqdm.notebook", "nbformat", "nbclient", "matplotlib",
                    "bertviz")
FORBIDDEN = {
    "course_lib.nn": ("course_lib.viz", "course_lib.widgets", "course_lib.bertviz_views",
                      "course_lib.exercises", "course_lib.experiments", "course_lib.data",
                      "course_lib.classroom") + NOTEBOOK_TOOLING,
    "course_lib.data": ("course_lib.viz", "course_lib.widgets", "course_lib.bertviz_views",
                        "course_lib.exercises", "course_lib.experiments",
                        "course_lib.classroom") + NOTEBOOK_TOOLING,
    "course_lib.experiments": ("course_lib.viz", "course_lib.widgets", "course_lib.bertviz_views",
                               "course_lib.exercises", "course_lib.classroom", "ipywidgets",
                               "IPython", "tqdm.notebook", "nbformat"),
    "course_lib.viz": ("course_lib.widgets", "course_lib.exercises", "course_lib.classroom",
                       "ipywidgets"),
    "course_lib._checks": ("course_lib.",),
    "course_lib.utils": ("course_lib.",),
}


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py")) if "__pycache__" not in p.parts}


def _package(name):
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def imports(name):
    """Every module `name` imports (absolute names), at any depth of its code."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(name).split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            found.add(target)
            for a in node.names:  # `from pkg import submodule`
                if f"{target}.{a.name}" in MODULES:
                    found.add(f"{target}.{a.name}")
    return found


def edges(name):
    """Modules of course_lib that importing `name` runs: each import's target, and the
    packages on the way to it that `name` is not already inside."""
    out = set()
    for target in imports(name):
        parts = target.split(".")
        for i in range(2, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in MODULES and prefix != name and not name.startswith(prefix + "."):
                out.add(prefix)
    return out


GRAPH = {name: edges(name) for name in MODULES}


def _matches(target, prefixes):
    """'a.b' matches a.b and a.b.*; 'a.' matches everything under a."""
    return any(target.startswith(p) if p.endswith(".") else target == p or target.startswith(p + ".")
               for p in prefixes)


def direction_violations(part, imports_of):
    """'module imports target' for each import of a module in `part` that FORBIDDEN rules out.

    imports_of: {module name: set of the modules it imports}.
    """
    return [f"{name} imports {target}"
            for name, targets in sorted(imports_of.items()) if name == part or name.startswith(part + ".")
            for target in sorted(targets) if _matches(target, FORBIDDEN[part])]


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_each_part_imports_only_downwards(part):
    bad = direction_violations(part, {name: imports(name) for name in MODULES})
    assert not bad, ("the dependency direction is widgets → viz → core → torch; these imports "
                     "point the wrong way:\n  " + "\n  ".join(bad))


def test_the_direction_check_catches_planted_imports():
    planted = {"course_lib.nn.layers": {"torch", "course_lib.nn.attention", "course_lib.viz.attention"},
               "course_lib.nn.decoding": {"matplotlib.pyplot"},
               "course_lib.nn.models": {"course_lib.experiments.induction"},
               "course_lib.viz.attention": {"course_lib.nn.attention", "matplotlib.pyplot"}}
    assert direction_violations("course_lib.nn", planted) == [
        "course_lib.nn.decoding imports matplotlib.pyplot",
        "course_lib.nn.layers imports course_lib.viz.attention",
        "course_lib.nn.models imports course_lib.experiments.induction"]
    assert direction_violations("course_lib.viz", planted) == []      # viz → nn is downwards
    assert direction_violations("course_lib.viz", {"course_lib.viz.x": {"course_lib.widgets.y"}}) == [
        "course_lib.viz.x imports course_lib.widgets.y"]


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan), or a self-loop."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_in_course_lib():
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles (each line: modules that import each other):\n  " + \
        "\n  ".join(" ↔ ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_planted_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_relative_and_function_level_imports():
    assert "course_lib.nn.attention" in GRAPH["course_lib.nn.layers"]          # from .attention import
    assert "course_lib.classroom.records" in GRAPH["course_lib.exercises.framework"]   # inside check()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_long_without_a_reason(name):
    path = MODULES[name]
    n = len(path.read_text(encoding="utf-8").splitlines())
    if n <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert any(line.strip().startswith(LENGTH_REASON) for line in doc.splitlines()[:10]), (
        f"{path.relative_to(ROOT)} has {n} lines (> {MAX_LINES}): split it by concern, or say why "
        f"it is one module in a line starting with {LENGTH_REASON!r} among its docstring's first 10")


def test_import_course_lib_stays_light():
    tree = ast.parse((PKG / "__init__.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))], \
        "course_lib/__init__.py imports nothing, so `import course_lib` stays fast"


def test_the_core_reexports_are_unique_and_importable():
    import course_lib.nn as core

    assert len(core.__all__) == len(set(core.__all__))
    assert all(hasattr(core, n) for n in core.__all__)
