"""Concept checks in a real browser (issue 42): in the learner's JupyterLab with a kernel (the
answer reaches Python, is judged, recorded, and its feedback shown and put in a polite live
region), in JupyterLab without one (a saved question judged in the page, "Not recorded"), and
in an exported HTML page with no kernel at all. Keyboard only where it matters: the options are
one radio group — arrows move without choosing, Space or Enter chooses. axe-core: 0 WCAG 2.1
A/AA violations in the question.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

import axe_support
import browser_support as bs
from course_lib.exercises.concepts import get
from course_lib.exercises.concepts.questions import LETTERS, NUMBER
from course_lib.exercises.concepts.widget import ConceptCheck

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
CHOICE_ID = "2.q1"


def _first_number_question():
    from course_lib.exercises.concepts import all_questions
    return next(q for q in all_questions() if q.kind == NUMBER)


def _wrong_and_right(q):
    wrong = next(i for i, o in enumerate(q.options) if not o.right)
    right = next(i for i, o in enumerate(q.options) if o.right)
    return wrong, right


def _feedback(page, root):
    """The text of `root`'s feedback region once it has some."""
    region = root.locator(".course-concept-feedback")
    region.locator("p").first.wait_for(timeout=30_000)
    return region.inner_text()


def _choose_by_keyboard(page, root, index):
    """Focus the group's tab stop, walk to option `index` with the arrows, check that walking
    chose nothing new, then press Space."""
    radios = root.locator("[role=radio]")
    start = radios.evaluate_all("rs => rs.findIndex(r => r.tabIndex === 0)")
    checked = radios.evaluate_all("rs => rs.map(r => r.getAttribute('aria-checked'))")
    radios.nth(start).focus()
    step = "ArrowDown" if index >= start else "ArrowUp"
    for _ in range(abs(index - start)):
        page.keyboard.press(step)
    focused = page.evaluate("() => document.activeElement.getAttribute('data-key')")
    assert focused == LETTERS[index], f"the arrows should reach option {LETTERS[index]}, focus is on {focused}"
    assert radios.evaluate_all("rs => rs.map(r => r.getAttribute('aria-checked'))") == checked, \
        "moving with the arrows must not choose"
    page.keyboard.press("Space")


# ----------------------------------------------------------------------------- the HTML export
def test_a_question_in_the_exported_page_works_without_a_kernel(tmp_path):
    import export_html

    choice, number = get(CHOICE_ID), _first_number_question()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Concept checks, offline")]
    for q in (choice, number):
        cell = nbformat.v4.new_code_cell(f'from course_lib.exercises.concepts import ask\nask("{q.id}")')
        bundle = ConceptCheck(q)._repr_mimebundle_()[0]
        cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
        nb.cells.append(cell)
    source = tmp_path / "99_concepts.ipynb"
    nbformat.write(nb, source)
    page_path = export_html.export([source], tmp_path / "html")[0]
    wrong, right = _wrong_and_right(choice)

    with bs.chromium_browser() as browser:
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:")) else r.abort())
        page.goto(page_path.as_uri())
        page.wait_for_function("document.body.getAttribute('data-mathjax') === 'done'", timeout=90_000)
        first = page.locator(".course-concept").nth(0)
        status = first.locator(".course-concept-feedback")
        assert status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"

        _choose_by_keyboard(page, first, wrong)
        said = _feedback(page, first)
        assert said.startswith("Not quite —"), said
        assert "Not recorded" in said
        assert first.locator("[role=radio]").nth(wrong).get_attribute("aria-checked") == "true"

        _choose_by_keyboard(page, first, right)
        page.wait_for_function("el => el.innerText.startsWith('Right —')", arg=status.element_handle(),
                               timeout=10_000)

        second = page.locator(".course-concept").nth(1)
        field = second.get_by_label("Your answer (a number)")
        field.fill(f"{number.answer - 3 * number.tolerance:g}")
        field.press("Enter")
        said = _feedback(page, second)
        assert said.startswith("Not quite —") and "Not recorded" in said, said

        violations = axe_support.audit(page, include=[".course-concept-out"])
        assert not violations, axe_support.summary(violations)
        assert not errors, errors
        bs.ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(bs.ARTIFACTS / "concept-check-export.png"), full_page=True)
        page.close()


# ----------------------------------------------------------------------------- JupyterLab
def _lesson(path: Path, question_ids, notary=None) -> Path:
    """A small notebook of ask cells in the learner's workspace; given the server's `notary`,
    saved executed (its widget state and outputs as the executed lessons have them) and signed."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(f'from course_lib.exercises.concepts import ask\nask("{qid}")')
                for qid in question_ids]
    nbformat.write(nb, path)
    if notary is not None:
        from nbclient import NotebookClient
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
        nbformat.write(nb, path)
        notary.sign(nb)                   # trusted: JupyterLab draws saved widgets only then
    return path


def _widget(page, server):
    """The question drawn by the widget (its page form, `.course-concept-out`, is not shown)."""
    # In the notebook shown (a hidden tab's question would never be visible). In two full runs
    # the saved question did not show within 150 s, for a reason not proven (alone, and after
    # its module's first test beside three busy loops, it shows within a minute). The suspect:
    # the notary's signature database, then shared by every server and tool of the suite (a
    # server that waits 5 s for SQLite's lock fails to open the notebook; an untrusted one
    # draws no saved widget); each test server now has its own (browser_support.LabServer).
    # On a timeout, what the page showed instead and the server's log are kept and said.
    shown = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    root = shown.locator(".jp-OutputArea-output .course-concept").first
    try:
        root.wait_for(timeout=150_000)
    except Exception:
        bs.ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(bs.ARTIFACTS / "concept-check-not-shown.png"), full_page=True)
        outputs = page.evaluate("() => [...document.querySelectorAll('.jp-NotebookPanel')].map(p => "
                                "(p.classList.contains('lm-mod-hidden') ? 'hidden: ' : 'shown: ') + "
                                "[...p.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText.slice(0, 80)).join(' | '))")
        raise AssertionError(f"the saved question was not drawn in 150 s; the notebooks' outputs: {outputs}; "
                             f"JupyterLab's log ends:\n{server.log_tail(25)}")
    assert shown.locator(".jp-OutputArea-output .course-concept-out").count() == 0, \
        "JupyterLab showed the page form, not the widget"
    return root


@pytest.fixture(scope="module")
def lab():
    bs.require_chromium()
    with bs.LabServer() as server, bs.chromium_browser() as browser:
        yield server, browser


def test_in_jupyterlab_an_answer_is_judged_recorded_and_spoken(lab):
    server, browser = lab
    q = get(CHOICE_ID)
    wrong, right = _wrong_and_right(q)
    number = _first_number_question()
    _lesson(server.workspace / "notebooks" / "99_concepts.ipynb", [CHOICE_ID, number.id])
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    watcher = bs.PageWatcher().attach(page)
    bs.open_notebook(page, server, "notebooks/99_concepts.ipynb")
    bs.run_all_cells(page)
    root = _widget(page, server)

    root.locator("[role=radio]").nth(wrong).click()
    said = _feedback(page, root)
    assert said.startswith("Not quite —") and "Not recorded" not in said, said
    entry = json.loads(server.progress_file.read_text(encoding="utf-8"))["concept_checks"][CHOICE_ID]
    assert (entry["first"], entry["first_right"], entry["attempts"]) == (LETTERS[wrong], False, 1)

    _choose_by_keyboard(page, root, right)
    status = root.locator(".course-concept-feedback")
    page.wait_for_function("el => el.innerText.startsWith('Right —')", arg=status.element_handle(),
                           timeout=30_000)
    entry = json.loads(server.progress_file.read_text(encoding="utf-8"))["concept_checks"][CHOICE_ID]
    assert (entry["first"], entry["first_right"], entry["latest"], entry["right"], entry["attempts"]) == \
        (LETTERS[wrong], False, LETTERS[right], True, 2)
    assert page.evaluate("() => document.activeElement.getAttribute('data-key')") == LETTERS[right], \
        "the keys stayed with the question (the notebook did not take the focus)"

    second = page.locator(".jp-OutputArea-output .course-concept").nth(1)
    field = second.get_by_label("Your answer (a number)")
    typed = f"{number.answer + 3 * number.tolerance:g}"
    field.fill(typed)
    field.press("Enter")
    said = _feedback(page, second)
    assert said.startswith("Not quite —") and "Not recorded" not in said, said
    entry = json.loads(server.progress_file.read_text(encoding="utf-8"))["concept_checks"][number.id]
    assert (entry["first"], entry["first_right"]) == (typed, False)

    violations = axe_support.audit(page, include=[".jp-OutputArea-output .course-concept"])
    assert not violations, axe_support.summary(violations)
    assert not watcher.problems(), watcher.problems()
    page.screenshot(path=str(bs.ARTIFACTS / "concept-check-lab.png"))
    page.close()
    server.shutdown_kernels()


def test_in_jupyterlab_a_saved_question_not_run_is_judged_in_the_page(lab):
    server, browser = lab
    q = get(CHOICE_ID)
    wrong, _ = _wrong_and_right(q)
    _lesson(server.workspace / "notebooks" / "98_saved.ipynb", [CHOICE_ID], notary=server.notary())
    before = server.progress_file.read_text(encoding="utf-8") if server.progress_file.exists() else ""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    bs.open_notebook(page, server, "notebooks/98_saved.ipynb")
    root = _widget(page, server)
    root.locator("[role=radio]").nth(wrong).click()
    said = _feedback(page, root)
    assert said.startswith("Not quite —") and "Not recorded — run this cell" in said, said
    after = server.progress_file.read_text(encoding="utf-8") if server.progress_file.exists() else ""
    assert after == before, "an answer to a question whose cell was not run is not recorded"
    page.close()
    server.shutdown_kernels()
