"""From page load to each lesson's first explorer by keyboard alone (issue 37.3, 37.4).

A learner opens a lesson in the course's JupyterLab (`course.py lab`: every cell in the page,
tools/lab.py's windowing override). JupyterLab puts the focus on the lesson's first cell;
from there Tab goes through the first cell's two toolbar buttons, then every disclosure
("The data of this figure") of the figures above, to the first explorer's first control.
REACH states, per lesson, how many Tab presses that takes (lesson 00, section 3 and the
README say it); the test presses Tab from page load and fails when the control is not
reached within that many.

Before anything runs, the explorer is the one saved in the lesson: no kernel is behind it.
It says so — in text, and on the control (`aria-disabled`, described by "Not live — run
this cell (Shift+Enter) …") — and an arrow key does not move it. Ctrl+Enter then runs the
cell (the focus stays on it) and Tab reaches the live control again: that is checked on
lesson 02 here and, with Orca, in tests/test_screen_reader.py.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import browser_support as bs
from course_lib.widgets._caption import NOT_LIVE

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Tab presses from page load to the first explorer's first control, per lesson (measured:
# 2 toolbar buttons of the first cell, each figure disclosure above it, then the control;
# lesson 09's bertviz views above its explorer bring their own controls and text
# alternatives; 09 and 11 measured with the bertviz text alternatives of issue 37.5).
REACH = {
    "00_start_here": 3,
    "01_why_not_rnns": 6,
    "02_attention": 11,
    "03_positional_encodings": 6,
    "04_multi_head_attention": 11,
    "05_transformer_block": 8,
    "06_masking_and_decoders": 16,
    "07_cross_attention_encoder_decoder": 7,
    "08_training_a_translator": 5,
    "09_transformer_families": 24,
    "10_residual_stream_and_induction_heads": 7,
    "11_a_real_llm": 14,
}
LESSONS = sorted(p.stem for p in (bs.ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

# Where the focus is: inside which explorer (its index on the page), and whether it is that
# explorer's first control.
_WHERE = """() => {
  const e = document.activeElement;
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const boxes = [...panel.querySelectorAll('.course-live')];
  const box = e && e.closest('.course-live');
  if (!box) return {explorer: -1, tag: e ? e.tagName : '', cls: e ? String(e.className).slice(0, 80) : ''};
  const controls = [...box.querySelectorAll('[role=slider], select, input, textarea, button')]
    .filter(c => !c.closest('.course-caption-box, .course-live-head'));
  return {explorer: boxes.indexOf(box), first: controls[0] === e, tag: e.tagName,
          label: e.getAttribute('aria-label') || (e.labels && e.labels[0] ? e.labels[0].textContent : ''),
          disabled: e.getAttribute('aria-disabled'), describedby: e.getAttribute('aria-describedby'),
          valuetext: e.getAttribute('aria-valuetext'), value: 'value' in e ? e.value : null,
          note: (box.querySelector('.course-live-note') || {}).textContent || '',
          heading: (box.querySelector('.course-live-head h4') || {}).textContent || ''};
}"""


_FIRST_IS_LIVE = """(n) => {
  const boxes = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .course-live');
  return boxes.length === n && !((boxes[0].querySelector('.course-live-note') || {}).textContent);
}"""


def tab_to_first_explorer(page, limit: int) -> tuple[int | None, dict]:
    """Press Tab up to `limit` times; (presses, where) once the focus is on the first
    explorer's first control, else (None, where the focus ended)."""
    where = {}
    for n in range(1, limit + 1):
        page.keyboard.press("Tab")
        where = page.evaluate(_WHERE)
        if where.get("explorer") == 0 and where.get("first"):
            return n, where
    return None, where


def saved_esm_is_current(nb_path: Path) -> bool:
    """Whether the lesson's saved widgets carry the caption code of this checkout."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    return any(json.dumps(NOT_LIVE) in str(m.get("state", {}).get("_esm", "")) for m in state.get("state", {}).values())


@pytest.fixture(scope="module")
def lab_server():
    bs.require_chromium()
    with bs.LabServer() as server:
        yield server


@pytest.fixture(scope="module")
def chromium():
    with bs.chromium_browser() as browser:
        yield browser


def test_every_lesson_has_a_stated_route():
    assert sorted(REACH) == LESSONS, "a lesson without a stated number of Tab presses (or one too many)"
    # Concept checks above an explorer are stops on the way (a radio group: one; a number: two).
    assert max(REACH.values()) <= 24


@pytest.mark.timeout(120)
@pytest.mark.parametrize("stem", LESSONS)
def test_first_explorer_is_reached_from_page_load(stem, lab_server, chromium):
    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    try:
        bs.open_notebook(page, lab_server, f"notebooks/{stem}.ipynb")
        bs.wait_widgets_rendered(page)
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .course-live").first.wait_for(timeout=30_000)
        page.wait_for_timeout(500)
        presses, where = tab_to_first_explorer(page, REACH[stem])
        assert presses is not None, \
            f"{stem}: {REACH[stem]} Tab presses from page load end at {where}, not the first explorer's first control"
        if not saved_esm_is_current(bs.ROOT / "notebooks" / f"{stem}.ipynb"):
            pytest.xfail(f"{stem}'s saved widgets predate the 'not live' notice: re-execute the lesson "
                         f"(python3 course.py execute notebooks/{stem}.ipynb)")
        # Saved, not live: it says so, and an arrow does not move it.
        page.wait_for_function("() => document.activeElement.getAttribute('aria-disabled') === 'true'",
                               timeout=10_000)
        where = page.evaluate(_WHERE)
        assert where["note"] == NOT_LIVE and where["describedby"], where
        assert where["heading"].startswith("Explorer"), where
        before = where["valuetext"] or where["value"]
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowDown")
        page.wait_for_timeout(300)
        after = page.evaluate(_WHERE)
        assert (after["valuetext"] or after["value"]) == before and after["explorer"] == 0, (before, after)
    finally:
        context.close()
        lab_server.shutdown_kernels()


@pytest.mark.timeout(180)
def test_run_the_cell_and_the_control_is_live(lab_server, chromium):
    """Lesson 02: reached not live, Ctrl+Enter runs its cell (focus on the cell), Tab
    reaches the control again — live now: an arrow moves it and its value text follows,
    the readout is out of the Tab order and hidden, and Down in the explorer's drop-down
    changes the token, not the notebook's cell."""
    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    try:
        bs.open_notebook(page, lab_server, "notebooks/02_attention.ipynb")
        bs.wait_widgets_rendered(page)
        presses, where = tab_to_first_explorer(page, REACH["02_attention"])
        assert presses is not None, where
        n_boxes = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .course-live").count()
        page.keyboard.press("Control+Enter")
        bs.wait_kernel_idle(page)
        # The cell's new output is in place and live (until then the first explorer on the page
        # is the next, saved one: seen on a busy machine).
        page.wait_for_function(_FIRST_IS_LIVE, arg=n_boxes, timeout=60_000)
        page.wait_for_timeout(1000)
        presses, where = tab_to_first_explorer(page, RUN_THEN_TAB)
        assert presses is not None, f"after Ctrl+Enter, {RUN_THEN_TAB} Tabs end at {where}"
        page.wait_for_timeout(3500)                 # the kernel answered: live
        where = page.evaluate(_WHERE)
        assert where["disabled"] is None and where["note"] == "", where
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => document.activeElement.getAttribute('aria-valuetext') === '128'",
                               timeout=10_000)
        box = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .course-live").first
        readout = box.locator(".widget-readout").first
        assert readout.get_attribute("tabindex") == "-1" and readout.get_attribute("aria-hidden") == "true"
        assert readout.get_attribute("contenteditable") == "false"
        caption = box.locator(".course-caption")
        heard = caption.locator(".course-sr-only")      # as heard: symbols in words (issue 43)
        heard.filter(has_text="d sub k 128").wait_for(timeout=20_000)
        said = heard.inner_text()
        assert said.startswith("d sub k 128: ") and len(said.split()) <= 30, said
        assert caption.get_attribute("role") == "status"
    finally:
        context.close()
        lab_server.shutdown_kernels()


# After Ctrl+Enter on the explorer's cell (focus on the cell): Tab presses to its first
# control, at most (the cell's toolbar button, then the control: 2 with keys through X and
# Orca, 3 with playwright's keys, measured).
RUN_THEN_TAB = 3


# Run All, as the kernel sees it: the explorer's cell, then a cell that keeps the kernel busy.
_BUSY_CELLS = ["from course_lib.widgets import scaling_explorer\n\nscaling_explorer(d_k=64, scaled=False)",
               "import time\n\ntime.sleep(15)"]
_STATE = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const box = panel.querySelector('.course-live');
  const prompts = [...panel.querySelectorAll('.jp-InputPrompt')].map(p => p.textContent.trim());
  return {box: !!box, notLive: !!box && box.classList.contains('course-not-live'),
          note: box ? (box.querySelector('.course-live-note') || {}).textContent || '' : '', prompts};
}"""


@pytest.mark.timeout(180)
def test_an_explorer_is_not_called_dead_while_run_all_keeps_the_kernel_busy(lab_server, chromium):
    """Issue 37 §4: during Run All the kernel answers an explorer's "are you live?" only after
    the cells queued behind it. The explorer it just drew must not say "Not live — run this
    cell" meanwhile (a learner who obeys queues the cell again); once the kernel is idle the
    answer comes and it is live."""
    import nbformat
    from course_lib.widgets._caption import PING_MS

    folder = lab_server.workspace / "busy-check"
    folder.mkdir(exist_ok=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in _BUSY_CELLS])
    nb.metadata["kernelspec"] = nbformat.read(bs.ROOT / "notebooks" / "02_attention.ipynb", as_version=4).metadata["kernelspec"]
    nbformat.write(nb, folder / "busy.ipynb")
    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    try:
        bs.open_notebook(page, lab_server, "busy-check/busy.ipynb")
        page.locator('.lm-MenuBar-itemLabel:text-is("Run")').click()
        page.locator('.lm-Menu-item:has(.lm-Menu-itemLabel:text-is("Run All Cells"))').click()
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .course-live").first.wait_for(timeout=90_000)
        page.wait_for_timeout(PING_MS + 2000)       # past the time a ping may take
        state = page.evaluate(_STATE)
        assert "*" in state["prompts"][1], f"the test needs the second cell still running: {state}"
        assert not state["notLive"] and state["note"] == "", \
            f"the explorer says it is not live while Run All keeps its kernel busy: {state}"
        bs.wait_kernel_idle(page, timeout_ms=60_000)
        page.wait_for_timeout(1000)
        state = page.evaluate(_STATE)
        assert state["box"] and not state["notLive"] and state["note"] == "", state
    finally:
        context.close()
        lab_server.shutdown_kernels()
        shutil.rmtree(folder, ignore_errors=True)


# Every saved widget's output made to say what jupyterlab_widgets' restore race leaves
# (browser_support.MODEL_RACE), or another widget failure.
_PLANT = """text => {
  const outs = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')]
    .filter(o => o.dataset.planted || o.classList.contains('jupyter-widgets') || o.querySelector('.jupyter-widgets'));
  outs.forEach(o => { o.textContent = text; o.dataset.planted = '1'; });
  return outs.length;
}"""


@pytest.mark.timeout(240)
def test_the_widget_managers_restore_race_is_met_by_one_reload(lab_server, chromium, tmp_path, monkeypatch):
    """wait_widgets_rendered, where every widget left says "Error displaying widget: model not
    found" (jupyterlab_widgets 3.0.17's restore race, seen in full runs): the page is reloaded
    once, the event noted and warned, and the lesson's saved widgets render. Planted: the
    outputs of lesson 00's rendered widgets replaced by those words. Any other widget failure
    still fails, and a second race after the reload is not hidden."""
    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    watcher = bs.PageWatcher().attach(page)
    stem = "00_start_here"
    monkeypatch.setattr(bs, "MODEL_RACE_LOG", tmp_path / "race.log")    # the suite's log keeps real ones only
    try:
        bs.open_notebook(page, lab_server, f"notebooks/{stem}.ipynb")
        bs.wait_widgets_rendered(page)
        n = page.evaluate(_PLANT, bs.MODEL_RACE)
        assert n >= 1, "lesson 00 shows no saved widget to plant the race in"
        with pytest.warns(UserWarning, match="restore race"):
            bs.wait_widgets_rendered(page, timeout_ms=3_000)
        assert not bs.widget_failure_texts(page)
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .course-live").first.wait_for(timeout=30_000)
        noted = bs.MODEL_RACE_LOG.read_text(encoding="utf-8")
        assert f"{stem}.ipynb: {n} outputs; reloaded" in noted, noted
        assert not watcher.problems() and not watcher.closing, watcher.problems()
        page.evaluate(_PLANT, "Error displaying widget")
        with pytest.raises(AssertionError, match="widgets still show"):
            bs.wait_widgets_rendered(page, timeout_ms=2_000)
        page.evaluate(_PLANT, bs.MODEL_RACE)
        with pytest.raises(AssertionError, match="model not found"):
            bs.wait_widgets_rendered(page, timeout_ms=2_000, reload_on_race=False)
    finally:
        context.close()
        lab_server.shutdown_kernels()
