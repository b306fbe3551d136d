"""The notebook-level accessibility rules of jupyterlab-a11y-checker, over every lesson file
(issue 28): images with a text alternative (Markdown images and every figure output),
headings in order (one `#` title, no level skipped) and in words (a formula in a heading is
read flat by a screen reader's heading key: "3. Why divide by d. k. ?", issue 37), tables with header cells, link text
that says where it goes. (The checker's "contrast in images" rule is covered by the figure
tests instead: tests/test_figure_descriptions.py checks every figure's text contrast and
its series under three colour-vision deficiencies.) Each rule is also shown failing on a
planted notebook.
"""
import re
from pathlib import Path

import nbformat
import pytest

LESSONS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))
VAGUE_LINKS = {"here", "click here", "this", "link", "this link", "more", "read more"}
PLACEHOLDER = "no description has been provided"


def _markdown(cell):
    return re.sub(r"```.*?```", "", cell.source, flags=re.S)        # code blocks are not prose


def issues(nb) -> list[str]:
    """Every rule broken in `nb`, one line each (cell number, rule, what)."""
    found, levels = [], []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            text = _markdown(cell)
            levels += [(i, len(m.group(1))) for m in re.finditer(r"^(#{1,6})\s", text, re.M)]
            for heading in re.findall(r"^#{1,6}\s(.*)$", text, re.M):
                if "$" in heading:      # a screen reader's heading key reads a formula flat: "d. k."
                    found.append(f"cell {i}: heading-words: a formula in the heading {heading!r}; say it in words")
            for alt in re.findall(r"!\[([^\]]*)\]\(", text):
                if not alt.strip():
                    found.append(f"cell {i}: image-alt: a Markdown image without alt text")
            for tag in re.findall(r"<img\b[^>]*>", text, re.I):
                if not re.search(r'\balt="[^"]+"', tag):
                    found.append(f"cell {i}: image-alt: {tag[:60]}")
            for table in re.findall(r"<table\b.*?</table>", text, re.I | re.S):
                if "<th" not in table.lower():
                    found.append(f"cell {i}: table-headers: an HTML table without <th>")
            for label, _ in re.findall(r"(?<!!)\[([^\]]*)\]\(([^)]*)\)", text):
                if label.strip().lower() in VAGUE_LINKS or not label.strip():
                    found.append(f"cell {i}: link-text: [{label}] does not say where it goes")
        elif cell.cell_type == "code":
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "image/png" not in data:
                    continue
                alt = out.get("metadata", {}).get("image/png", {}).get("alt", "")
                if not alt or PLACEHOLDER in alt.lower():
                    found.append(f"cell {i}: image-alt: a figure output without a description")
                elif "text/html" in data and 'alt="' not in data["text/html"]:
                    found.append(f"cell {i}: image-alt: the figure's HTML form has no alt (JupyterLab shows that one)")
    if [lvl for _, lvl in levels].count(1) != 1:
        found.append(f"heading-order: {[lvl for _, lvl in levels].count(1)} level-1 headings, expected 1")
    for (_, a), (i, b) in zip(levels, levels[1:]):
        if b > a + 1:
            found.append(f"cell {i}: heading-order: h{a} followed by h{b}")
    return found


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_breaks_no_notebook_accessibility_rule(lesson):
    assert issues(nbformat.read(lesson, as_version=4)) == []


def test_each_rule_fails_a_planted_notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title\n### skipped a level\n![](x.png) see [here](a.html)\n"
                                              "## 3. Why divide by $\\sqrt{d_k}$?\n"
                                              "<table><tr><td>1</td></tr></table>"),
                nbformat.v4.new_markdown_cell("# a second title")]
    code = nbformat.v4.new_code_cell("plt.show()")
    code.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"})]
    nb.cells.append(code)
    found = "\n".join(issues(nb))
    for rule in ("h1 followed by h3", "Markdown image without alt", "[here]", "table without <th>",
                 "2 level-1 headings", "figure output without a description", "formula in the heading"):
        assert rule in found, f"planted {rule!r} not found in:\n{found}"
