"""Lesson 02's exercise 2.1, a concept check, Run All and the lesson's HTML export, read by a
real screen reader (issues 37.6, 42 and 43), beside tests/test_screen_reader.py (its first
explorer and its formulas) on a second Orca: the session, its record and what is asserted on
every word are that file's (`orca_reads_lesson`). In order, as a learner would:

6. exercise 2.1 (issue 43): a wrong softmax typed into the exercise cell, Shift+Enter on it and
   on its check: Orca speaks the ❌ line with its hint, whole words, without a key pressed to
   find it; fixed, the ✅ line is spoken;
7. a concept check (issue 42, `ask("2.q1")`): Tab reaches its radio group, read with the
   question's words; Down reads the next option's words, Space chooses it, and the feedback
   is spoken;
8. Run All: afterwards neither the page's focus nor Orca's position (Where Am I) is in an
   explorer (a drop-down entering the page used to pull Orca's position into it);
9. the same lesson as its HTML export (`course.py html`; the page holds the lesson's title and
   section 3, the part read), browse mode: the heading key (H) reaches the section by its words,
   Down reads its formulas as phrases (≤ 10 % single symbols), and Say All from there speaks
   no formula letter by letter.

Rerun: `.venv-instructor/bin/python -m pytest tests/test_screen_reader_exercises.py -s` (the
transcript: test-artifacts/browser/02_attention-orca-exercises.txt).
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import re
import shutil
import tempfile
from pathlib import Path

import pytest

import browser_support as bs
import screen_reader_support as srs
from test_screen_reader import HEADING, LESSON, READ_S, ROOT_D_K, _formula_reading, _until, _where, orca_reads_lesson

pytestmark = [pytest.mark.browser, pytest.mark.screen_reader, pytest.mark.slow]

_spec = importlib.util.spec_from_file_location("export_html", bs.ROOT / "tools" / "export_html.py")
export_html = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(export_html)


def _export_section_3(out: Path) -> Path:
    """Lesson 02's page as `course.py html` makes it, with the lesson's title and section 3
    only: what step 9 reads. Orca takes in a whole page before its keys work (the whole lesson:
    about 55 s on a busy machine); the whole page's markup is audited by
    tests/test_accessibility.py and its accessibility tree read by tests/test_export_html.py."""
    path = bs.ROOT / "notebooks" / f"{LESSON}.ipynb"
    nb = export_html._check_notebook(path)
    heads = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## ")]
    start = next(i for i in heads if nb.cells[i].source.startswith("## 3."))
    nb.cells = nb.cells[:1] + nb.cells[start:heads[heads.index(start) + 1]]
    export_html.copy_mathjax(out)
    return export_html.export_notebook(nb, path, out)


WRONG_SOFTMAX = ("import torch\n\ndef softmax(scores):\n"
                 "    e = torch.exp(scores - scores.max(dim=0, keepdim=True).values)\n"
                 "    return e / e.sum(dim=0, keepdim=True)")       # each column sums to 1: dim=0
RIGHT_SOFTMAX = WRONG_SOFTMAX.replace("dim=0", "dim=-1")
_PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
# The check's output once say() has put its words back into its live region (speak.py).
_SAID_JS = """() => { const c = [...document.querySelectorAll('%s .jp-CodeCell')]
  .find(c => c.textContent.includes('check_softmax(softmax)') && !c.textContent.includes('HIDDEN'));
  const p = c && c.querySelector('.course-said[role=status] > span');
  return p ? p.textContent : ''; }""" % _PANEL


def _verdict_line(page) -> str:
    return " ".join(page.evaluate(_SAID_JS).split())


def _spoken_whole(line: str, heard: list[str]) -> bool:
    """Whether Orca said `line`'s first sentence (up to 100 characters, ending on a word)."""
    said = " ".join(" ".join(heard).split())
    first = line[:100].rsplit(" ", 1)[0] if len(line) > 100 else line
    return first in said


def _run_exercise(page, sr, code, note) -> list[str]:
    """Type `code` into exercise 2.1's cell (the page's editor, as pasted), then Shift+Enter on
    it and on its check (keys through X); returns what Orca said once the verdict was in."""
    cell = page.locator(f"{_PANEL} .jp-CodeCell").filter(has_text="def softmax(scores)").first
    cell.scroll_into_view_if_needed()
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)
    note("typed", sr.settle(quiet=1.0, timeout=8, first=3))
    before = _verdict_line(page)
    note("Shift+Enter (exercise)", sr.press("shift+Return", timeout=15))
    bs.wait_kernel_idle(page)
    heard = note("Shift+Enter (check)", sr.press("shift+Return", quiet=2.0, timeout=READ_S, first=5))
    page.wait_for_function(f"() => ({_SAID_JS})() && ({_SAID_JS})() !== {before!r}", timeout=60_000)
    line = _verdict_line(page)                          # then Orca's words, within a bounded wait
    return _until(sr, note, "verdict", heard, lambda text: _spoken_whole(line, [text]))


def _concept_cell(page):
    return page.locator(f"{_PANEL} .jp-CodeCell").filter(has_text='ask("2.q1")')


def _concept_check(page, sr, note) -> None:
    """Run `ask("2.q1")`, Tab to its radio group (read with the question), Down and Space: the
    feedback is spoken."""
    cell = _concept_cell(page).first
    cell.scroll_into_view_if_needed()
    cell.locator(".cm-content").click()
    note("Ctrl+Enter (question)", sr.press("ctrl+Return", timeout=15))
    bs.wait_kernel_idle(page)
    cell.locator("[role=radiogroup] [role=radio]").first.wait_for(timeout=30_000)
    note("Escape", sr.press("Escape", first=3))
    heard, on_radio = [], False
    for i in range(8):
        heard += note(f"Tab {i + 1} (question)", sr.press("Tab"))
        on_radio = page.evaluate("() => document.activeElement.getAttribute('role') === 'radio'")
        if on_radio:
            break
    assert on_radio, f"8 Tabs from the question's cell did not reach its options: {heard}"
    heard = _until(sr, note, "read", heard, lambda t: "radio button" in t)
    assert "radio button" in " ".join(heard), heard
    question = " ".join(cell.locator(".course-concept-text").inner_text().split())[:40].rsplit(" ", 1)[0]
    assert question in " ".join(" ".join(heard).split()), f"the question {question!r} was not read: {heard}"
    option = " ".join(cell.locator("[role=radio]").nth(1).inner_text().split())[:30].rsplit(" ", 1)[0]
    moved = _until(sr, note, "Down", note("Down", sr.press("Down")), lambda t: option in " ".join(t.split()))
    assert option in " ".join(" ".join(moved).split()), f"the option {option!r} was not read: {moved}"
    # What Orca says on Space may already hold the feedback (a quiet machine): keep it.
    chosen = note("space", sr.press("space", first=3))
    feedback = cell.locator(".course-concept-feedback")
    page.wait_for_function("el => el.textContent.trim().length > 0", arg=feedback.element_handle(), timeout=30_000)
    words = " ".join(feedback.inner_text().split())
    lead = words.split(" — ")[0][:12]
    told = _until(sr, note, "feedback", chosen, lambda t: lead in t)
    assert any(w.startswith(lead) or words[:40] in w for w in told), \
        f"the feedback {words!r} was not spoken: {told}"



@pytest.mark.timeout(480)
def test_lesson_02_exercises_and_export_with_orca():
    srs.require()
    bs.require_chromium()
    export_dir = Path(tempfile.mkdtemp(prefix="course-orca-export-"))
    # Step 9's page is made while the lab starts (about 14 s, off the test's time).
    exporting = concurrent.futures.ThreadPoolExecutor(1)
    exported_page = exporting.submit(_export_section_3, export_dir)
    try:
        with orca_reads_lesson("exercises") as (page, sr, note):
            # The lesson's first words (asserted on in tests/test_screen_reader.py), before any key;
            # on a busy machine Orca goes on about the page for 25 s (20 utterances): what comes
            # after 10 s is noted with the next step (whose assertions wait for words of their own).
            note("page load", sr.settle(quiet=2.0, timeout=10))

            # 6. Exercise 2.1: the verdict is spoken when it appears, whole, verdict first.
            for code, verdict in ((WRONG_SOFTMAX, "not right yet"), (RIGHT_SOFTMAX, "correct")):
                heard = _run_exercise(page, sr, code, note)
                line = _verdict_line(page)
                assert line.split(" — ")[0].endswith(verdict), line
                assert _spoken_whole(line, heard), f"the verdict {line!r} was not spoken whole: {heard}"

            # 7. A concept check: its question read on reaching it, an answer by keyboard, the
            # feedback spoken.
            assert _concept_cell(page).count(), 'lesson 02 has no ask("2.q1") cell any more'
            _concept_check(page, sr, note)

            # 8. Run All: the page's focus and Orca's position stay out of the explorers.
            bs.run_all_cells(page, timeout_ms=240_000)
            note("Run All", sr.settle(quiet=2.5, timeout=30, first=5))
            where = _where(page)
            assert where.get("explorer") == -1, f"after Run All the focus is in an explorer: {where}"
            here = note("Where Am I", sr.press("KP_Enter", quiet=2.0, timeout=READ_S, first=READ_S))
            # (JupyterLab's own "Cell type" drop-down is not an explorer's.)
            assert here and not any(w in " ".join(here) for w in ("query token", "slider", "temperature")), \
                f"after Run All Orca's position is in an explorer: {here}"

            # 9. The same lesson as its HTML export (`course.py html`), in browse mode: the heading
            # key finds the section by its words, and the lines after it read their formulas as
            # phrases (the export's Markdown goes through the same speakable_markdown).
            exported = exported_page.result(timeout=300)
            page.once("dialog", lambda dialog: dialog.accept())      # leaving the edited notebook
            page.goto(exported.as_uri())
            page.wait_for_function("() => document.querySelectorAll('.MJX_Assistive_MathML').length > 10",
                                   timeout=60_000)
            # Orca says the page has loaded (and its first line: its reading of a page on load is
            # off here, screen_reader_support says why); Control stops any speech, as a learner would.
            _until(sr, note, "export load", [], lambda t: "Finished loading" in t)
            note("stop reading", sr.press("Control_L", quiet=1.0, timeout=5, first=2))
            found = []
            for i in range(12):
                found = note(f"export h {i + 1}", sr.press("h", first=READ_S))
                if any(HEADING in w for w in found):
                    break
            assert any(HEADING in w for w in found), f"the export's heading key never read {HEADING!r}: {found}"
            lines = []
            for i in range(3):
                lines += note(f"export Down {i + 1}", sr.press("Down", first=READ_S))
                if i and any(ROOT_D_K in w for w in lines):
                    break
            _formula_reading(lines, ROOT_D_K)
            # Say All (Orca's KP_Add) from there: the section's formulas, never a letter alone.
            said_all = note("export Say All", sr.press("KP_Add", quiet=3.0, timeout=15, first=READ_S))
            note("stop", sr.press("Control_L", quiet=1.0, timeout=5, first=2))
            letters = [w for w in said_all if re.fullmatch(r"[A-Za-z][.,]?", w.strip())]
            assert len(said_all) >= 3 and not letters, f"Say All spelled {letters}: {said_all}"
    finally:
        exporting.shutdown(wait=True)
        shutil.rmtree(export_dir, ignore_errors=True)
