"""Formulas said as phrases (issue 43 §3): course_lib.mathtext, the course's one reader of its
TeX, and `speakable_markdown`, which labels every formula of a lesson's Markdown with its words
in the learner's copy and in the HTML export. (Orca reading them: tests/test_screen_reader.py.)"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course_lib.classroom.workspace import learner_notebook
from course_lib.mathtext import LABEL, speakable_markdown, tex_html

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("tex, words", [
    # the scaled dot-product formula (lesson 02, section 4): one phrase, a function applied "of"
    (r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V",
     "Attention of Q, K, V, equals softmax of Q K transpose over square root of d sub k, V"),
    (r"\sqrt{d_k}", "square root of d sub k"),
    (r"\sqrt{d/h}", "square root of d over h"),
    (r"W^O", "W O"),                                   # a name, not a power
    (r"x^2", "x squared"),
    (r"10000^{2i/d}", "10000 to the power 2 i over d"),
    (r"-\infty", "minus infinity"),
    (r"10\,000", "10000"),                             # one number ("10. 000." before)
    (r"10{,}000", "10000"),
    (r"\mathrm{PE}(pos+k) = M_k\, \mathrm{PE}(pos)", "PE of pos plus k, equals M sub k PE of pos"),
    (r"d_{\text{model}}", "d sub model"),              # a word, not letters
    (r"\alpha_{ij}", "alpha sub i j"),
    (r"\sum_{j=1}^{n} \alpha_{ij} v_j", "sum over j equals 1 to n of alpha sub i j v sub j"),
    (r"p(y \mid x)", "p of y given x"),
    (r"f_\theta(x)", "f sub theta of x"),
    (r"W^Q \in \mathbb{R}^{d \times d_k}", "W Q in R to the power d times d sub k"),
    (r"x_{pos} \leftarrow x_{pos} + PE_{pos}", "x sub pos becomes x sub pos plus P E sub pos"),
    (r"\begin{pmatrix} a \\ b \end{pmatrix}", "matrix a next row b end matrix"),
])
def test_a_formula_in_words(tex, words):
    assert tex_html(tex)[1] == words


def test_the_export_and_the_concept_checks_read_with_the_same_reader():
    import sys
    sys.path.insert(0, str(ROOT / "tools"))
    from html_export.math_words import tex_words
    assert tex_words(r"\sqrt{d_k}") == tex_html(r"\sqrt{d_k}")[1] == "square root of d sub k"


def test_speakable_markdown_labels_each_formula_and_nothing_else():
    source = ("Divide by $\\sqrt{d_k}$, with $n$ tokens, for \\$5.\n\n$$\nx^2\n$$\n\n"
              "`$a_b$` in code, and\n```python\ns = '$d_k$'\n```\n## 3. A heading $\\sqrt{d}$\n")
    out = speakable_markdown(source)
    assert LABEL.format(words="square root of d sub k", math="$\\sqrt{d_k}$") in out
    assert LABEL.format(words="n", math="$n$") in out                  # a lone letter too
    assert LABEL.format(words="x squared", math="$$\nx^2\n$$") in out
    assert "for \\$5." in out                                         # an escaped $ is no formula
    assert "`$a_b$`" in out and "s = '$d_k$'" in out                  # code as it was
    assert out.endswith("## 3. A heading $\\sqrt{d}$\n")              # a heading keeps its anchor
    assert out.count("<span inert>") == 3
    assert speakable_markdown(out) == out                             # twice: nothing more
    with pytest.raises(TypeError, match="as a string, got list"):
        speakable_markdown(["$x$"])


def test_the_words_escape_html():
    out = speakable_markdown("$a < b$")
    assert '<span style="font-size:0">a less than b </span><span inert>$a < b$</span>' == out


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_formula_of_the_learners_copy_is_said_in_words(path):
    """The learner's copy (`course.py lab`) labels every formula of the lesson's prose outside
    headings and code, with words that hold no TeX left (an unknown command would be said by
    its name: "mathbb R")."""
    nb = learner_notebook(nbformat.read(path, as_version=4), keep_graded=False)
    labelled = 0
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        bare = re.sub(r"<span inert>.*?</span>", "", cell.source, flags=re.S)
        bare = re.sub(r"```.*?```|`[^`]*`", "", bare, flags=re.S)
        bare = "\n".join(line for line in bare.splitlines() if not line.lstrip().startswith("#"))
        assert not re.search(r"(?<!\\)\$", bare), f"{path.name}: a formula left unlabelled in {bare[:300]!r}"
        for words in re.findall(r'<span style="font-size:0">(.*?) </span><span inert>', cell.source, re.S):
            labelled += 1
            assert "\\" not in words and not re.search(r"\b(mathbb|mathcal|begin|end\{|qquad|left|right)\b", words), words
    assert labelled >= 5, f"{path.name}: {labelled} formulas labelled"
