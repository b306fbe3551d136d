"""The course's code runs on Windows and macOS too: two lints over the sources.

1. Text I/O names its encoding. Windows' Python (before 3.15) reads and writes text in
   the ANSI code page unless told otherwise, and the course is full of √, μ, ✅, → and —.
2. No POSIX-only module or call without a fallback in the lessons and course_lib
   (deploy/hub is Linux-only by design: JupyterHub). A fallback is a `try` that
   catches the failure, or an `if` on os.name / sys.platform / platform.system() / hasattr.
"""
import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
PY_FILES = sorted(p for d in ("course_lib", "tools", "deploy", "benchmarks", "tests")
                  for p in (ROOT / d).rglob("*.py")) + sorted(ROOT.glob("course.py"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NB_IDS = [p.stem for p in NOTEBOOKS]

TEXT_MODE = re.compile(r"^[rwaxt+U]*$")        # a literal mode string without "b"
SUBPROCESS = {"run", "Popen", "check_output", "check_call", "call"}
TEMPFILES = {"NamedTemporaryFile": 0, "TemporaryFile": 0, "SpooledTemporaryFile": 1}  # mode's position


def _arg(call, pos, name):
    """The argument at position `pos` or keyword `name`, else None."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[pos] if pos is not None and len(call.args) > pos else None


def _is_text_mode(mode, default_text):
    if mode is None:
        return default_text
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return bool(TEXT_MODE.match(mode.value))
    return True                                 # a computed mode: say the encoding anyway


def _truthy(node):
    return node is not None and not (isinstance(node, ast.Constant) and not node.value)


def encoding_problems(source):
    """'line N: call' for each text read or write in `source` that does not name its encoding."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        is_io_open = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "io"
        if name == "open" and (isinstance(f, ast.Name) or is_io_open):          # open(file, mode, ...)
            missing = _is_text_mode(_arg(node, 1, "mode"), True) and not _arg(node, 3, "encoding")
        elif name == "open":            # Path.open(mode, ...): other .open()s take no literal mode
            mode = _arg(node, 0, "mode")
            missing = ((mode is None and not node.args and not node.keywords)
                       or (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                           and bool(TEXT_MODE.match(mode.value))))
            missing = missing and not _arg(node, 2, "encoding")
        elif name == "read_text":
            missing = not _arg(node, 0, "encoding")
        elif name == "write_text":
            missing = not _arg(node, 1, "encoding")
        elif name in TEMPFILES:
            missing = (_is_text_mode(_arg(node, TEMPFILES[name], "mode"), False)
                       and not _arg(node, TEMPFILES[name] + 2, "encoding"))
        elif name == "TextIOWrapper":
            missing = not _arg(node, 1, "encoding")
        elif name in SUBPROCESS:
            text = _truthy(_arg(node, None, "text")) or _truthy(_arg(node, None, "universal_newlines"))
            missing = text and not _arg(node, None, "encoding")
        elif name in ("getoutput", "getstatusoutput"):                       # always the locale's
            missing = True
        else:
            continue
        if missing:
            problems.append((node.lineno, f"line {node.lineno}: {ast.unparse(node)[:100]}"))
    return [text for _, text in sorted(problems)]


POSIX_MODULES = {"resource", "fcntl", "pwd", "grp", "termios", "pty", "tty"}
POSIX_ATTRS = {
    "signal": {"SIGALRM", "alarm", "setitimer", "SIGKILL", "SIGHUP", "SIGUSR1", "SIGUSR2", "pause"},
    "os": {"fork", "forkpty", "getuid", "geteuid", "getgid", "getegid", "setuid", "seteuid",
           "setgid", "setegid", "getgroups", "setgroups", "initgroups", "setsid", "killpg",
           "getpgid", "setpgid", "sched_getaffinity", "getloadavg", "uname", "sysconf", "chown"},
}
FALLBACK_ERRORS = {"ImportError", "ModuleNotFoundError", "AttributeError", "OSError", "Exception"}


def _catches_failure(handler):
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(ast.unparse(k).split(".")[-1] in FALLBACK_ERRORS for k in kinds)


def _tests_platform(test):
    text = ast.unparse(test)
    return any(s in text for s in ("os.name", "sys.platform", "platform.system(", "hasattr("))


def _walk_guarded(node, guarded=False):
    """(node, guarded) for every node below `node`."""
    yield node, guarded
    if isinstance(node, ast.Try):
        body_guarded = guarded or any(_catches_failure(h) for h in node.handlers)
        for child in node.body:
            yield from _walk_guarded(child, body_guarded)
        for child in node.handlers + node.orelse + node.finalbody:
            yield from _walk_guarded(child, guarded)
        return
    if isinstance(node, (ast.If, ast.IfExp)) and _tests_platform(node.test):
        guarded = True
    for child in ast.iter_child_nodes(node):
        yield from _walk_guarded(child, guarded)


def posix_problems(source):
    """'line N: what' for each POSIX-only import or call in `source` without a fallback."""
    problems = []
    for node, guarded in _walk_guarded(ast.parse(source)):
        what = None
        if isinstance(node, ast.Import):
            what = next((f"import {a.name}" for a in node.names if a.name.split(".")[0] in POSIX_MODULES), None)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in POSIX_MODULES:
            what = f"from {node.module} import ..."
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.attr in POSIX_ATTRS.get(node.value.id, ())):
            what = f"{node.value.id}.{node.attr}"
        elif isinstance(node, ast.keyword) and node.arg == "shell" and _truthy(node.value):
            what = "shell=True (a POSIX shell command line)"
        if what and not guarded:
            problems.append(f"line {node.lineno}: {what}")
    return problems


SHELL_ESCAPE = re.compile(r"^\s*(!|%%?(system|sx|bash|sh|script)\b|[\w, ]+=\s*!)")


def notebook_cells(path):
    """(cell number, Python source, [shell escapes]) per code cell; magic lines become `pass`."""
    for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()
        escapes = [line.strip() for line in lines if SHELL_ESCAPE.match(line)]
        if lines and lines[0].startswith("%%"):           # a cell magic: not Python at all
            yield i, "", escapes
            continue
        code = [re.sub(r"^(\s*).*", r"\1pass", line) if re.match(r"\s*[%!]", line)
                or SHELL_ESCAPE.match(line) else line for line in lines]
        yield i, "\n".join(code), escapes


# ---- the checkers flag what they should, and only that ---------------------------------

@pytest.mark.parametrize("snippet", [
    'open("f")', 'open("f", "w")', 'open("f", mode="rt")', 'io.open("f", "a")', 'open(f, mode)',
    'Path("x").read_text()', 'p.write_text(s)', 'p.open()', 'p.open("w")',
    'subprocess.run(cmd, text=True)', 'subprocess.check_output(cmd, universal_newlines=True)',
    'Popen(cmd, text=True, errors="replace")', 'tempfile.NamedTemporaryFile("w")',
    'NamedTemporaryFile(mode="w+", suffix=".py")', 'io.TextIOWrapper(buf)', 'subprocess.getoutput(c)'])
def test_encoding_lint_flags(snippet):
    assert len(encoding_problems(snippet)) == 1, snippet


@pytest.mark.parametrize("snippet", [
    'open("f", "rb")', 'open("f", encoding="utf-8")', 'open(f, "w", encoding=enc)',
    'open("f", "w", -1, "utf-8")', 'p.read_text(encoding="utf-8")', 'p.write_text(s, "utf-8")',
    'p.read_bytes()', 'p.open("rb")', 'zf.open(name)', 'tarfile.open(path)', 'webbrowser.open(url)',
    'subprocess.run(cmd, capture_output=True)', 'subprocess.run(cmd, text=False)',
    'subprocess.run(cmd, text=True, encoding="utf-8", errors="replace")',
    'tempfile.NamedTemporaryFile()', 'NamedTemporaryFile("w", encoding="utf-8")',
    'io.TextIOWrapper(buf, encoding="utf-8")', 'os.open(path, os.O_RDONLY)'])
def test_encoding_lint_accepts(snippet):
    assert encoding_problems(snippet) == [], snippet


@pytest.mark.parametrize("snippet", [
    "import resource", "import fcntl, os", "from pwd import getpwnam", "import grp",
    "signal.signal(signal.SIGALRM, h)", "signal.alarm(3)", "pid = os.fork()", "os.getuid()",
    "subprocess.run('ls -l', shell=True)",
    "try:\n    import termios\nexcept ValueError:\n    pass",
    "try:\n    import pty\nexcept ImportError:\n    import tty"])
def test_posix_scan_flags(snippet):
    assert len(posix_problems(snippet)) == 1, snippet


@pytest.mark.parametrize("snippet", [
    "try:\n    import resource\nexcept ImportError:\n    resource = None",
    "try:\n    import fcntl\nexcept (ImportError, OSError):\n    fcntl = None",
    "if os.name == 'posix':\n    import pwd\nelse:\n    pwd = None",
    "if sys.platform != 'win32':\n    signal.alarm(3)",
    "if platform.system() == 'Linux':\n    os.fork()",
    "uid = os.getuid() if hasattr(os, 'getuid') else None",
    "if hasattr(os, 'geteuid') and os.geteuid() == 0:\n    pass",
    "subprocess.run(['ls', '-l'])", "import os, signal\nsignal.signal(signal.SIGINT, h)"])
def test_posix_scan_accepts(snippet):
    assert posix_problems(snippet) == [], snippet


def test_notebook_magics_are_seen_as_shell_escapes(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in (
        "%%bash\nls", "!pip install x\nimport os", "files = !ls", "%timeit f()\nx = 1")])
    nbformat.write(nb, tmp_path / "n.ipynb")
    cells = list(notebook_cells(tmp_path / "n.ipynb"))
    assert [len(escapes) for _, _, escapes in cells] == [1, 1, 1, 0]
    for _, code, _ in cells:
        ast.parse(code)


# ---- the course's sources -----------------------------------------------------------------

def test_every_text_read_and_write_in_the_code_names_its_encoding():
    problems = [f"{p.relative_to(ROOT)}:{problem}"
                for p in PY_FILES for problem in encoding_problems(p.read_text(encoding="utf-8"))]
    assert not problems, "name the encoding (encoding=\"utf-8\"):\n" + "\n".join(problems)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=NB_IDS)
def test_every_text_read_and_write_in_a_lesson_names_its_encoding(notebook):
    problems = [f"cell {i} {problem}" for i, code, _ in notebook_cells(notebook)
                for problem in encoding_problems(code)]
    assert not problems, f"{notebook.name}: name the encoding:\n" + "\n".join(problems)


def test_course_lib_has_no_posix_only_code_without_a_fallback():
    problems = [f"{p.relative_to(ROOT)}:{problem}" for p in PY_FILES
                if p.relative_to(ROOT).parts[0] == "course_lib"
                for problem in posix_problems(p.read_text(encoding="utf-8"))]
    assert not problems, "POSIX-only, no fallback:\n" + "\n".join(problems)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=NB_IDS)
def test_a_lesson_has_no_posix_only_code_or_shell_escape(notebook):
    problems = [f"cell {i} {problem}" for i, code, escapes in notebook_cells(notebook)
                for problem in posix_problems(code) + [f"shell escape: {e}" for e in escapes]]
    assert not problems, f"{notebook.name}: POSIX-only, no fallback:\n" + "\n".join(problems)


def test_the_nbval_sanitizer_is_ascii():
    """nbval 0.11 reads it in the system's encoding (cp1252 on Windows, ASCII under LC_ALL=C)."""
    data = (ROOT / "assets" / "nbval_sanitize.cfg").read_bytes()
    assert data.isascii(), [line for line in data.decode("utf-8").splitlines() if not line.isascii()]
