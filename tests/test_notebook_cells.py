"""Cells that raise on purpose (tag raises-exception) are safe to skip, and speak in one line.

Issue 45: lesson 03's demonstration that a learned table has no row past max_len also defined
`L, VOCAB, STEPS, SEED` and the section's imports; a learner who skipped it "as the demo" got
NameErrors in four later cells. So: no name that a raising cell assigns or imports is used by a
later cell (unless a cell in between binds it again). Read with `ast`, without running anything:
IPython's own transformer turns magics into Python first.

And such a cell shows the error's last line, not thirty lines through torch: its error is raised
inside `with error_in_one_line():` (course_lib.utils), which shows it as IPython's "Minimal" mode
does for that one cell.
"""
import ast
import json
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))
RAISES = "raises-exception"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _code_cells(path):
    """[(index in the notebook, cell id, raises on purpose?, parsed module)] of the code cells."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        cells.append((i, cell.get("id"), RAISES in cell["metadata"].get("tags", []),
                      _parse("".join(cell["source"]))))
    return cells


def _parse(source):
    """A cell's source as a module; IPython's transformer first turns %magics into calls."""
    return ast.parse(TransformerManager().transform_cell(source))


def _targets(node):
    """Names a target (of =, for, with … as, a comprehension) binds."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def bound(node):
    """Names `node` binds in its own scope: assignments, imports, def/class, `as` names
    (not what a function, class or comprehension inside it binds for itself)."""
    names = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.split(".")[0] for a in n.names if a.name != "*"}
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            todo.extend(n.decorator_list)
            if not isinstance(n, ast.ClassDef):
                todo.extend(n.args.defaults + [d for d in n.args.kw_defaults if d])
            continue                                  # its body is another scope
        if isinstance(n, _SCOPES) and n is not node:
            continue
        todo.extend(ast.iter_child_nodes(n))
    return names


def free(node, local=frozenset()):
    """Names `node` reads that it has not bound itself (scopes respected: a function's
    parameters and locals, a comprehension's targets)."""
    if isinstance(node, ast.Name):
        return {node.id} - local if isinstance(node.ctx, ast.Load) else set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        params |= {x.arg for x in (a.vararg, a.kwarg) if x}
        outer = set()
        for d in a.defaults + [d for d in a.kw_defaults if d] + getattr(node, "decorator_list", []):
            outer |= free(d, local)
        body = node.body if isinstance(node.body, list) else [node.body]
        inner = local | params | set().union(*(bound(s) for s in body))
        return outer | set().union(*(free(s, inner) for s in body))
    if isinstance(node, ast.ClassDef):
        inner = local | set().union(*(bound(s) for s in node.body))
        return (set().union(*(free(d, local) for d in node.bases + node.decorator_list))
                | set().union(*(free(s, inner) for s in node.body)))
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        inner = local | set().union(*(_targets(g.target) for g in node.generators))
        return set().union(*(free(child, inner) for child in ast.iter_child_nodes(node)))
    return set().union(set(), *(free(child, local) for child in ast.iter_child_nodes(node)))


def names_from_raising_cells(cells):
    """[(raising cell, later cell, sorted names)]: a later cell reads names that, at that point,
    only a cell raising on purpose has bound."""
    last_binder = {}                # name -> (index, id, raises?) of the last cell that bound it
    found = []
    for index, cell_id, raises, module in cells:
        local, used = set(), {}
        for statement in module.body:            # top to bottom: a name bound above in the cell is its own
            for name in free(statement, frozenset(local)):
                binder = last_binder.get(name)
                if binder and binder[2]:
                    used.setdefault(binder[:2], set()).add(name)
            local |= bound(statement)
        for binder, names in used.items():
            found.append((binder, (index, cell_id), sorted(names)))
        for name in bound(module):
            last_binder[name] = (index, cell_id, raises)
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_later_cell_needs_what_a_raising_cell_defines(path):
    problems = [f"cell {r[0]} (id {r[1]}, tagged {RAISES}) defines {', '.join(names)}, which cell {c[0]} "
                f"(id {c[1]}) uses: a learner who skips the demonstration gets a NameError there — "
                f"define them in a cell before it"
                for r, c, names in names_from_raising_cells(_code_cells(path))]
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_deliberate_error_shows_its_last_line(path):
    """Every cell that raises on purpose raises inside `with error_in_one_line():`."""
    loose = []
    for index, cell_id, raises, module in _code_cells(path):
        if raises:
            withs = [w for w in ast.walk(module) if isinstance(w, ast.With)
                     and any(isinstance(item.context_expr, ast.Call)
                             and getattr(item.context_expr.func, "id", "") == "error_in_one_line"
                             for item in w.items)]
            if not withs:
                loose.append(f"cell {index} (id {cell_id})")
    assert not loose, (f"{path.name}: {', '.join(loose)} raise on purpose outside `with error_in_one_line():` "
                       "(from course_lib.utils): the learner would read the whole traceback")


# ------------------------------------------------------------------ the reader itself

def _find(source_cells):
    cells = [(i, f"c{i}", raises, _parse(src)) for i, (src, raises) in enumerate(source_cells)]
    return [(r[0], c[0], names) for r, c, names in names_from_raising_cells(cells)]


def test_the_reader_finds_a_later_use_and_only_that():
    # lesson 03's old cell: a demonstration that also defined what the section needs
    assert _find([("import torch", False),
                  ("from m import Probe\nL, VOCAB = 16, 16\nProbe(VOCAB)(torch.zeros(L + 1))", True),
                  ("model = Probe(VOCAB, max_len=2 * L)", False)]) == [(1, 2, ["L", "Probe", "VOCAB"])]
    # bound again in between, or bound by the later cell itself before it reads it: fine
    assert _find([("x = 1\nraise ValueError", True), ("x = 2", False), ("print(x)", False)]) == []
    assert _find([("x = 1\nraise ValueError", True), ("x = 2\nprint(x)", False)]) == []
    # a function's parameter or local, a comprehension's target: not the raising cell's name
    assert _find([("x = y = 1\nraise ValueError", True),
                  ("def f(x):\n    y = 2\n    return x + y\n[x for x in range(3)]", False)]) == []
    # but a global read inside a function body is a use
    assert _find([("k = 3\nraise ValueError", True), ("def f():\n    return k", False)]) == [(0, 1, ["k"])]
    # magics are read as calls, not as syntax errors
    assert _find([("%xmode Minimal\nt = 1\nraise ValueError", True), ("%matplotlib inline\nprint(t)", False)]) == [(0, 1, ["t"])]


# ------------------------------------------------------------------ error_in_one_line itself

def test_error_in_one_line_shows_the_last_line_for_one_cell_and_keeps_the_traceback(capsys):
    import re

    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        before = shell.InteractiveTB.mode
        shell.run_cell("from course_lib.utils import error_in_one_line\n"
                       "def deep():\n    raise ValueError('the course says what went wrong')")
        capsys.readouterr()
        result = shell.run_cell("with error_in_one_line():\n    deep()")
        shown = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out).strip()
        assert isinstance(result.error_in_exec, ValueError), "the error must still propagate (raises-exception)"
        assert shown == "ValueError: the course says what went wrong", shown
        assert shell.InteractiveTB.mode == before, "the mode is the learner's again after that cell"
        assert not shell.events.callbacks["post_run_cell"] or all(
            getattr(f, "__name__", "") != "_restore" for f in shell.events.callbacks["post_run_cell"])
        shell.run_cell("%tb")                                  # asked for: the whole traceback
        full = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
        assert "Traceback" in full and "deep()" in full and len(full.splitlines()) > 5, full
        shell.run_cell("with error_in_one_line():\n    x = 1")    # no error: nothing changes
        assert shell.InteractiveTB.mode == before
    finally:
        InteractiveShell.clear_instance()


def test_error_in_one_line_outside_ipython_only_lets_the_error_through():
    from course_lib.utils import error_in_one_line
    with pytest.raises(KeyError):
        with error_in_one_line():
            {}["kitten"]
