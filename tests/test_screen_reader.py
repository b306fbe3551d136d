"""Lesson 02 in the course's JupyterLab and as its HTML export, read by a real screen reader
(issue 37.6).

Orca 43 reads Debian's Chromium on a virtual display (tests/screen_reader_support.py);
keys go through X (xdotool) as a learner's do, and the assertions are on Orca's transcript
(what it sends to speech-dispatcher), with the page looked at over CDP only to know where
the focus is. One pass, in order, as a learner would:

1. page load: no explorer caption is read aloud while the lesson opens;
2. Tab x REACH (tests/test_keyboard_reach.py) reaches the first explorer's slider, spoken
   with its name and value, and "Not live — run this cell" (the saved explorer);
3. Ctrl+Enter runs the cell, Tab x RUN_THEN_TAB reaches the live slider;
4. an arrow: the slider's new value is spoken ("d_k 128"), then one short caption for the
   settled value that leads with it;
5. browse mode, previous heading (Shift+H): the explorer's heading, then "3. Why divide by
   the square root of the key length?" in words (a formula in a heading was read flat by the
   heading key: "d. k."); Down reads the lines after it with their formulas' structure
   ("square root of d, subscript k, root end"; "q dot operator k equals ∑ underscript j …"),
   Up goes back to the heading;
6. the same lesson as its HTML export (`course.py html`), browse mode: the heading key (H)
   reaches the section by its words, Down reads its formulas with their structure;
and nowhere a mathematical italic letter (U+1D400-U+1D7FF, which espeak-ng spells "letter 1
D 4 5 1").

Install (Debian, as root): see screen_reader_support.INSTALL; missing, the test is skipped
with that line. Rerun: `.venv-instructor/bin/python -m pytest tests/test_screen_reader.py -s`
(the transcript is printed and saved to test-artifacts/browser/02_attention-orca.txt).
"""
from __future__ import annotations

import importlib.util
import shutil
import tempfile
import time
from pathlib import Path

import pytest

import browser_support as bs
import screen_reader_support as srs
from test_keyboard_reach import _WHERE, REACH, RUN_THEN_TAB

pytestmark = [pytest.mark.browser, pytest.mark.slow]

_spec = importlib.util.spec_from_file_location("export_html", bs.ROOT / "tools" / "export_html.py")
export_html = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(export_html)

LESSON = "02_attention"
HEADING = "3. Why divide by the square root of the key length?"     # in words: no formula in a heading
# The whole pass, a bound on the suite's time: 112-125 s alone, 191 s beside the rest of
# `course.py test` on a 2-core machine (measured); speech runs in real time, so load shows.
BUDGET_S = 240
READ_S = 20.0      # a key that reads a line: how long Orca may take to start saying it (no wait once said)


def _where(page) -> dict:
    return page.evaluate(_WHERE)


@pytest.mark.timeout(300)
def test_lesson_02_with_orca():
    srs.require()
    bs.require_chromium()
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    log: list[str] = []

    def note(step, words):
        log.append(f"[{step}] " + " | ".join(words))
        return words

    export_dir = Path(tempfile.mkdtemp(prefix="course-orca-export-"))
    with bs.LabServer() as lab, srs.ScreenReader() as sr, sync_playwright() as pw:
        port = bs.free_port()
        sr.chromium_app(lab.notebook_url(f"notebooks/{LESSON}.ipynb"), str(bs.CHROMIUM),
                        [a for a in bs.CHROMIUM_ARGS if a != "--headless"], port)
        browser = None
        for _ in range(120):
            try:
                browser = pw.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
                break
            except Exception:
                time.sleep(0.25)
        assert browser is not None, "Chromium's debugging port never answered"
        page = browser.contexts[0].pages[0]
        try:
            bs.wait_notebook_open(page, f"{LESSON}.ipynb")
            bs.wait_widgets_rendered(page)
            page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .course-live").first.wait_for(timeout=30_000)
            loading = note("page load", sr.settle(quiet=2.0, timeout=25))
            assert not any("One random query" in w or "attends most" in w for w in loading), \
                "a caption was read aloud while the lesson opened"

            # 2. From page load to the explorer's first control.
            heard, where = [], {}
            for i in range(REACH[LESSON]):
                heard += note(f"Tab {i + 1}", sr.press("Tab"))
                where = _where(page)
                if where.get("explorer") == 0 and where.get("first"):
                    break
            assert where.get("explorer") == 0 and where.get("first"), \
                f"{REACH[LESSON]} Tabs from page load end at {where}"
            text = " ".join(heard)
            assert "d_k" in text and "slider" in text, text
            heard += note("wait", sr.settle(quiet=1.5, timeout=10, first=8))
            assert "Not live" in " ".join(heard) or where.get("disabled") == "true", heard

            # 3. Run the cell; back to the live slider.
            note("Ctrl+Enter", sr.press("ctrl+Return", timeout=15))
            bs.wait_kernel_idle(page)
            page.wait_for_function("() => !!document.querySelector('.course-live img.widget-image[alt]')",
                                   timeout=30_000)
            for i in range(RUN_THEN_TAB):
                note(f"Tab {i + 1} (live)", sr.press("Tab"))
                where = _where(page)
                if where.get("explorer") == 0 and where.get("first"):
                    break
            assert where.get("explorer") == 0 and where.get("first"), \
                f"after Ctrl+Enter, {RUN_THEN_TAB} Tabs end at {where}"
            page.wait_for_function("() => document.activeElement.getAttribute('aria-disabled') === null",
                                   timeout=10_000)
            note("live", sr.settle(quiet=1.0, timeout=5, first=2))

            # 4. One step: the new value, then one short caption leading with it.
            after = note("Right", sr.press("Right", quiet=2.5, timeout=20))
            # The caption comes once the new figure is drawn: on a busy machine (the whole suite
            # beside) after the window above. Wait for it in the page, then listen (beside the
            # suite Orca once took more than 4 s to start reading it).
            page.wait_for_function("() => [...document.querySelectorAll('.course-caption')]"
                                   ".some(c => c.textContent.startsWith('d sub k 128'))", timeout=60_000)
            after += note("settled", sr.settle(quiet=2.5, timeout=READ_S + 5, first=READ_S))
            assert any("d_k 128" in w for w in after), f"the slider's new value was not spoken: {after}"
            captions = [w for w in after if w.startswith("d sub k 128")]
            assert len(captions) == 1, f"expected one caption for d_k 128, Orca said: {after}"
            assert len(captions[0].split()) <= 30, captions[0]

            # 5. A formula: browse mode, back to the section's heading.
            mode = note("Insert+a", sr.press("Insert+a"))
            if any("Focus mode" in w for w in mode):
                note("Insert+a", sr.press("Insert+a"))
            heading = []
            for i in range(4):
                heading = note(f"Shift+H {i + 1}", sr.press("shift+h"))
                if any("Why divide by" in w for w in heading):
                    break
            spoken = " | ".join(heading)
            assert HEADING in spoken, f"the heading key should read the heading's words: {spoken}"
            # Each of these keys reads a line: wait up to READ_S for its first word (beside the
            # whole suite Orca once said nothing within 6 s after the second Up).
            lines = []
            for i in range(2):
                lines += note(f"Down {i + 1}", sr.press("Down", first=READ_S))
            again = []
            for i in range(2):
                again += note(f"Up {i + 1}", sr.press("Up", first=READ_S))
            heading_line = " | ".join(again)
            assert any(w.startswith(("subscript", "underscript", "superscript", "fraction", "square root"))
                       for w in lines), lines
            assert HEADING in heading_line, heading_line

            # 6. The same lesson as its HTML export (`course.py html`), in browse mode: the heading
            # key finds the section by its words, and the lines after it read their formulas
            # with structure (MathJax's assistive MathML).
            exported = export_html.export([bs.ROOT / "notebooks" / f"{LESSON}.ipynb"], export_dir)[0]
            page.once("dialog", lambda dialog: dialog.accept())      # leaving the edited notebook
            page.goto(exported.as_uri())
            page.wait_for_function("() => document.querySelectorAll('.MJX_Assistive_MathML').length > 10",
                                   timeout=60_000)
            note("export load", sr.settle(quiet=2.0, timeout=15))
            found = []
            for i in range(12):
                found = note(f"export h {i + 1}", sr.press("h", first=READ_S))
                if any(HEADING in w for w in found):
                    break
            assert any(HEADING in w for w in found), f"the export's heading key never read {HEADING!r}: {found}"
            lines = []
            for i in range(3):
                lines += note(f"export Down {i + 1}", sr.press("Down", first=READ_S))
            assert any(w.startswith(("subscript", "underscript", "superscript", "fraction", "square root"))
                       for w in lines), f"the export's formulas were not read with their structure: {lines}"
        finally:
            transcript = sr.transcript()
            bs.ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (bs.ARTIFACTS / f"{LESSON}-orca.txt").write_text("\n".join(log) + "\n", encoding="utf-8")
            print("\n".join(log))
            browser and browser.close()
            shutil.rmtree(export_dir, ignore_errors=True)
    italic = sorted({c for w in transcript for c in srs.MATH_ITALIC.findall(w)})
    assert not italic, f"mathematical italic letters reached the speech: {italic}"
    assert not any("letter 1" in w for w in transcript)
    elapsed = time.monotonic() - started
    assert elapsed <= BUDGET_S, f"the screen-reader pass took {elapsed:.0f} s (budget {BUDGET_S} s)"
