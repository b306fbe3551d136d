"""Lesson 10's induction-score checker names an off-by-one range (issue 29 §2), and its
exercise cells import nothing a rewritten cell would lose (issue 38 §3)."""
import re
from pathlib import Path

import nbformat
import pytest
import torch

from course_lib.exercises.lesson10 import INDUCTION_SCORE

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _score(start, stop, divide_by_period=False):
    def induction_score(weights, period):
        i = torch.arange(start(period), stop(period))
        total = weights[:, i, i - period + 1].sum(dim=-1)
        return total / (period if divide_by_period else len(i))
    return induction_score


@pytest.mark.parametrize("fn, words", [
    (_score(lambda p: p, lambda p: 2 * p), "one position early"),          # BOS forgotten
    (_score(lambda p: p + 2, lambda p: 2 * p + 1), "starts one late"),
    (_score(lambda p: p + 2, lambda p: 2 * p + 1, divide_by_period=True), "starts one late"),
    (_score(lambda p: p + 1, lambda p: 2 * p, divide_by_period=True), "stops one short"),
    (_score(lambda p: p + 1, lambda p: 2 * p), "stops one short"),
])
def test_off_by_one_ranges_are_named(fn, words):
    v = INDUCTION_SCORE.verdict(fn)
    assert v.status == "wrong" and words in v.message, v.message


# ---- issue 38 §3: an import in an exercise cell is lost when a learner rewrites the cell

def _imports_outside_the_solution(source):
    outside = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "", source, flags=re.S)
    return [line.strip() for line in outside.splitlines() if re.match(r"\s*(import|from)\s", line)]


# Exceptions: none left (lesson 11's exercise 11.4 imported in its cell until issue 38 moved it up).
KNOWN: set = set()


def test_exercise_cells_import_nothing_a_rewritten_cell_would_lose():
    """Lesson 10's exercise cell carried `import torch.nn.functional as F`: a learner who replaced
    the cell with their own function lost it, and F.cross_entropy raised NameError."""
    found = set()
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source:
                found |= {(path.name, line) for line in _imports_outside_the_solution(cell.source)}
    assert found <= KNOWN, sorted(found - KNOWN)
    lesson10 = nbformat.read(NOTEBOOKS / "10_residual_stream_and_induction_heads.ipynb", as_version=4)
    first_code = next(c for c in lesson10.cells if c.cell_type == "code" and "colab-setup" not in c.metadata.get("tags", []))
    assert "import torch.nn.functional as F" in first_code.source
