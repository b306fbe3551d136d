"""Code cells for a reader: solutions behind a disclosure, tracebacks without rulers,
code and output as named regions.

Before nbconvert renders the notebook (`prepare_cells`):

- **Solutions.** A `### BEGIN SOLUTION` … `### END SOLUTION` region becomes, by `solutions`:
  "collapsed" (the default) — the cell shows the student's stub where the region was
  (`raise NotImplementedError("softmax: …")`, from course_lib.classroom.student, as the
  learner's copy has it), followed by a closed disclosure "Solution: softmax" that holds
  the region, the code around it visible; "open" — the same disclosure, open (an
  instructor's copy); "hidden" — the stub alone, no solution anywhere in the page (a
  class copy). The page template (page.py) draws the parts kept in the cell's metadata.
- **Tracebacks** lose IPython's rulers of dashes ("-----…-----" and the "---->" arrow,
  which a screen reader reads dash by dash); the arrow becomes "→".

After (`label_regions`): each code cell's input becomes a group named "Code, cell N" and
its output area "Output, cell N", N being the number in its prompt (In [N]), so a
screen reader can tell code from what it printed. Groups, not landmark regions: a lesson has
60 cells, and 60 landmarks ("leaving region. region Output, cell 12" between every two lines,
issue 43) are a maze rather than a map; the headings are the page's map.
"""
from __future__ import annotations

import re

SOLUTION_MODES = ("collapsed", "open", "hidden")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RULER = re.compile(r"^\s*-{3,}\s*$")
_ARROW = re.compile(r"^((?:\x1b\[[0-9;]*m)*)-{2,}> ?")
_STUB_NAME = re.compile(r'NotImplementedError\("([^":]+)')


def split_solutions(source: str, where: str = "cell") -> list[dict]:
    """A cell's source -> parts: {"kind": "code", "source"} with each region replaced by the
    student's stub, and {"kind": "solution", "source", "name"} right after that stub.

    The stubs are course_lib.classroom.student's own (what the learner's copy shows): the
    student version of the source up to the end of each region, less what came before.
    """
    from course_lib.classroom.student import BEGIN, END, strip_solutions

    strip_solutions(source, where)              # checks the markers pair up (raises if not)
    lines = source.splitlines()
    parts, shown, start = [], [], None
    for i, line in enumerate(lines):
        if line.strip() == BEGIN:
            start = i
        elif line.strip() == END and start is not None:
            student = strip_solutions("\n".join(lines[:i + 1]), where).splitlines()
            code = student[len(shown):]
            m = _STUB_NAME.search("\n".join(code))
            parts.append({"kind": "code", "source": "\n".join(code)})
            parts.append({"kind": "solution", "source": "\n".join(lines[start + 1:i]),
                          "name": m.group(1) if m else "exercise"})
            shown, start = student, None
    rest = strip_solutions(source, where).splitlines()[len(shown):]
    if rest:
        parts.append({"kind": "code", "source": "\n".join(rest)})
    return parts


def clean_traceback(lines: list[str]) -> list[str]:
    """IPython's traceback without its rulers; "---->" (the failing line) becomes "→"."""
    out = []
    for entry in lines:
        kept = [_ARROW.sub(lambda m: m.group(1) + "→ ", line) for line in entry.split("\n")
                if not _RULER.match(_ANSI.sub("", line))]
        if any(_ANSI.sub("", line).strip() for line in kept):
            out.append("\n".join(kept))
    return out


def prepare_cells(nb, path, solutions: str = "collapsed") -> int:
    """Prepare `nb`'s code cells in place (see the module's docstring); returns the number
    of solution regions found."""
    if solutions not in SOLUTION_MODES:
        raise ValueError(f"solutions must be one of {SOLUTION_MODES}, got {solutions!r}")
    from course_lib.classroom.student import BEGIN, strip_solutions

    found = 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                out["traceback"] = clean_traceback(out.get("traceback", []))
        if BEGIN not in cell.source:
            continue
        where = f"{path}, cell {i}"
        if solutions == "hidden":
            found += cell.source.count(BEGIN)
            cell.source = strip_solutions(cell.source, where)
            continue
        parts = split_solutions(cell.source, where)
        regions = [p for p in parts if p["kind"] == "solution"]
        found += len(regions)
        for k, part in enumerate(regions, 1):
            part["summary"] = f"Solution: {part['name']}" + (f" ({k} of {len(regions)})" if len(regions) > 1 else "")
            part["open"] = solutions == "open"
        cell.metadata["course_export"] = {"parts": parts}
    return found


_PROMPT = re.compile(r"\[\s*(\d+)\s*\]")


def label_regions(body: str) -> str:
    """Name each code cell's input "Code, cell N" and its output "Output, cell N" (groups).

    N is the cell's prompt number (In [N]) — what a sighted reader sees beside it — or,
    for a cell never run or a number already used, its place among the page's code cells.
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, features="html.parser")
    used = set()
    for k, cell in enumerate(soup.select(".jp-Notebook div.jp-CodeCell"), 1):
        prompt = cell.select_one(".jp-InputPrompt")
        m = _PROMPT.search(prompt.get_text()) if prompt else None
        n = m.group(1) if m and m.group(1) not in used else f"{k}"
        used.add(n)
        for child in cell.find_all("div", recursive=False):
            classes = child.get("class", [])
            if "jp-Cell-inputWrapper" in classes:
                child["role"], child["aria-label"] = "group", f"Code, cell {n}"
            elif "jp-Cell-outputWrapper" in classes:
                child["role"], child["aria-label"] = "group", f"Output, cell {n}"
    return str(soup)
