"""The course in a real browser: JupyterLab started by `python course.py lab`, as the README
says, driven by headless Debian Chromium through playwright.

`course.py lab` makes the learner's workspace (a temporary one here) and serves it: what a
learner opens. For each lesson in LESSONS: open the learner's copy and check, before anything
runs, that the saved widgets render, that no solution code is there and no check shows ✅
(the figures are); then Run > Run All Cells, check every cell ran without an unexpected
error and every exercise's check reported its stub ("not solved yet"), check that every
bertviz view drew its SVG, move every slider of every `interactive` and check its plot
changed (and, where OVERRIDES says so, hover a token of a bertviz head view and check where
its darkest lines go), and check that the page shows no "Loading widget..." text, logged no
error, and requested nothing outside 127.0.0.1 (such requests are also aborted in the
browser: the network is off). Screenshots go to test-artifacts/browser/<stem>-{after-run,
after-slider}.png. test_learner_path goes on from there in lesson 00 as a newcomer would:
types a right solution (✅), then reveals a solution on purpose (shown, and recorded).

test_bertviz_views_survive_save_and_reload runs a copy of a lesson with bertviz views
(in the test's workspace, so neither nbval nor the learner sees it), saves it from the UI,
reloads the page and checks that the views draw again from the saved outputs alone.

Running the learner's copy here is also the suite's one run of the student version (on Linux,
where this test runs; elsewhere tests/test_student.py executes the student versions with
nbclient): the instructor versions are executed by nbval. Each lesson is opened once: the
saved widgets are checked in the same copy that then runs. JupyterLab's autosave is off and
nothing is saved; the committed lesson is checked to be byte-for-byte unchanged.

Every lesson in notebooks/ is included; OVERRIDES raises a lesson's widget minimums.
"""
from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import axe_support
import browser_support as bs

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@dataclass(frozen=True)
class Lesson:
    notebook: str            # path relative to the repository root
    min_interacts: int = 1   # `ipywidgets.interactive` boxes expected after Run All
    min_sliders: int = 1     # sliders expected in them, in total
    presses: int = 3         # arrow-key steps per slider move
    # Check that the widgets saved in the notebook render right after opening, before
    # anything runs. JupyterLab renders saved widget state only in a *trusted*
    # notebook; tools/lab.py trusts the course's lessons before starting.
    saved_widgets: bool = True
    # What the lesson's prose tells the learner to hover in a bertviz head view, checked in
    # the rendered page: (view index, layer the view opens on, left token, right token its
    # darkest lines must go to).
    bertviz_hovers: tuple = ()

    @property
    def stem(self) -> str:
        return Path(self.notebook).stem


# Every lesson has at least one interactive widget (DESIGN.md §2), so every lesson
# is driven here; a lesson with more widgets raises its minimum in OVERRIDES.
OVERRIDES: dict[str, dict] = {
    # Lesson 08, section 14: "hover over zwanzig ... twenty; hover over ein ... one", at layer 1.
    "08_training_a_translator": {"bertviz_hovers": ((0, "1", "zwanzig", "twenty"), (0, "1", "ein", "one"))},
}
LESSONS = [
    Lesson(f"notebooks/{p.name}", **OVERRIDES.get(p.stem, {}))
    for p in sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))
]

RUN_ALL_TIMEOUT_MS = 180_000
WIDGET_UPDATE_TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def lab_server():
    bs.require_chromium()  # fail/skip before paying for a server start
    with bs.LabServer() as server:
        yield server


def _solution_lines(lesson: Path) -> set[str]:
    """The distinctive lines of a lesson's solution regions that it shows nowhere else."""
    import nbformat
    from course_lib.classroom.student import BEGIN, END

    inside_lines, outside_lines = set(), set()
    for cell in nbformat.read(lesson, as_version=4).cells:
        inside = False
        for line in cell.source.splitlines():
            if line.strip() in (BEGIN, END):
                inside = line.strip() == BEGIN
            else:
                (inside_lines if inside else outside_lines).add(line.strip())
    return {line for line in inside_lines - outside_lines
            if len(line) > 12 and not line.startswith("#")}


def _answers_in_sight(page, lesson: Path) -> list[str]:
    """What a learner must not see before they run a check: a solution's line in the page's
    code, or a ✅ in an output."""
    text = page.evaluate("""() => {
      const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
      const code = [...panel.querySelectorAll('.jp-CodeCell .cm-content')].map(e => e.innerText);
      // A concept check's options may quote a verdict ("✅ correct: …"): not a check's output.
      const outs = [...panel.querySelectorAll('.jp-OutputArea-output')]
        .filter(e => !e.querySelector('.course-concept')).map(e => e.innerText);
      return {code: code.join('\\n'), outputs: outs.join('\\n')};
    }""")
    seen = {line.strip() for line in text["code"].splitlines()}
    found = [f"solution line in sight: {line!r}" for line in sorted(_solution_lines(lesson) & seen)]
    if "✅" in text["outputs"]:
        found.append("a ✅ is shown before any check ran")
    return found


def _n_stubs(nb_path: Path) -> int:
    return sum("raise NotImplementedError(" in _source(c) for c in _code_cells(nb_path))


@pytest.fixture(scope="module")
def chromium():
    with bs.chromium_browser() as browser:
        yield browser


def _code_cells(nb_path: Path) -> list[dict]:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _source(cell) -> str:
    s = cell["source"]
    return "".join(s) if isinstance(s, list) else s


def _bertviz_ids(nb_path: Path) -> list[str]:
    """The ids of the bertviz views (course_lib/bertviz_views.py) in the saved outputs."""
    ids = []
    for cell in _code_cells(nb_path):
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html", "")
            html = "".join(html) if isinstance(html, list) else html
            ids += re.findall(r'<div id="(bertviz-[0-9a-f]{32})"', html)
    return ids


def _bertviz_outputs(nb_path: Path) -> int:
    """How many bertviz views the saved notebook shows."""
    return len(_bertviz_ids(nb_path))


def _check_cells_ran(states: list[dict], cells: list[dict]) -> list[str]:
    """Every non-empty code cell ran, in order, without an unexpected traceback."""
    assert len(states) == len(cells), (len(states), len(cells))
    problems, last = [], 0
    for i, (state, cell) in enumerate(zip(states, cells)):
        if not _source(cell).strip():
            continue
        if cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            # The folded Colab cell: a one-line bar, no prompt to read while folded.
            if not state.get("folded"):
                problems.append(f"code cell {i} should be folded (source_hidden) but shows its code")
            elif "Traceback (most recent call last)" in state["output"]:
                problems.append(f"code cell {i} raised:\n{state['output'][-1500:]}")
            continue
        m = re.fullmatch(r"\[(\d+)\]:", state["prompt"].strip())
        if not m:
            problems.append(f"code cell {i} did not run (prompt {state['prompt']!r})")
            continue
        n = int(m.group(1))
        if n <= last:
            problems.append(f"code cell {i} has execution count {n} after {last}")
        last = n
        tagged = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        has_tb = "Traceback (most recent call last)" in state["output"] or \
            re.search(r"^-{20,}\n\w+(Error|Exception)", state["output"], re.M) is not None
        if has_tb and not tagged:
            problems.append(f"code cell {i} raised:\n{state['output'][-1500:]}")
    return problems


@pytest.mark.timeout(300)
@pytest.mark.parametrize("lesson", LESSONS, ids=lambda l: l.stem)
def test_lesson_in_browser(lesson: Lesson, lab_server, chromium):
    nb_path = bs.ROOT / lesson.notebook
    assert nb_path.is_file(), f"{lesson.notebook} does not exist"
    original = nb_path.read_bytes()
    mine = lab_server.workspace / "notebooks" / nb_path.name      # the learner's copy
    for old in bs.ARTIFACTS.glob(f"{lesson.stem}-*.png"):   # no stale screenshots
        old.unlink()

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watcher = bs.PageWatcher().attach(page)
    try:
        # 1. The learner's copy, before anything runs: the saved widgets and figures render,
        # no solution code is in sight and no check says ✅.
        bs.open_notebook(page, lab_server, f"notebooks/{nb_path.name}")
        if lesson.saved_widgets:
            saved = bs.interact_widgets(page)
            saved.first.wait_for(timeout=30_000)
            assert saved.count() >= lesson.min_interacts
            bs.wait_widgets_rendered(page)
        assert page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output img").count() >= 1, \
            "no figure in sight before Run All"
        in_sight = _answers_in_sight(page, nb_path)
        assert not in_sight, "\n".join(in_sight)

        # 2. Run > Run All Cells; every cell runs, no unexpected error, and each exercise's
        # check says its stub is not solved yet.
        bs.run_all_cells(page, timeout_ms=RUN_ALL_TIMEOUT_MS)
        states = bs.code_cell_states(page)
        problems = _check_cells_ran(states, _code_cells(mine))
        assert not problems, "\n".join(problems)
        reported = sum(state["output"].count("not solved yet") for state in states)
        assert reported >= _n_stubs(mine), \
            f"{reported} checks said 'not solved yet' for {_n_stubs(mine)} stubs"

        # The bertviz views (as many as the committed notebook shows) drew their SVG,
        # with the network off.
        n_views = _bertviz_outputs(nb_path)
        if n_views:
            bs.wait_bertviz_drawn(page, n_views)
            bs.screenshot_bertviz(page, f"{lesson.stem}-bertviz-after-run")
        for view_index, layer, token, expected in lesson.bertviz_hovers:
            seen = bs.bertviz_hover(page, view_index, token)
            assert seen["layer"] == layer, f"bertviz view #{view_index} opens on layer {seen['layer']}, not {layer}"
            assert seen["hidden"] and seen["weights"], f"hovering {token!r} left no lines: {seen}"
            strongest = max(seen["weights"], key=seen["weights"].get)
            assert strongest == expected, \
                f"hovering {token!r} (layer {layer}): darkest lines go to {strongest!r}, the lesson says {expected!r}: {seen}"

        interacts = bs.interact_widgets(page)
        n_interacts = interacts.count()
        assert n_interacts >= lesson.min_interacts, \
            f"{n_interacts} interactive widgets after Run All, expected >= {lesson.min_interacts}"
        bs.wait_widgets_rendered(page)
        bs.scroll_cell_to_top(interacts.first)
        bs.screenshot(page, f"{lesson.stem}-after-run")

        # 3. Every slider changes its plot.
        n_sliders = 0
        for k in range(n_interacts):
            box = interacts.nth(k)
            box_sliders = bs.sliders(box)
            for j in range(box_sliders.count()):
                slider = box_sliders.nth(j)
                slider.scroll_into_view_if_needed()
                before = bs.output_snapshot(box)
                assert before["images"], f"interactive #{k}: no image before moving a slider"
                value_before = bs.slider_value(slider)
                bs.move_slider(slider, lesson.presses)
                after = bs.wait_output_changed(page, box, before, WIDGET_UPDATE_TIMEOUT_MS)
                value_after = bs.slider_value(slider)
                assert value_after != value_before, \
                    f"interactive #{k} slider #{j}: value stayed {value_before}"
                assert after["images"] and after["images"] != before["images"], \
                    f"interactive #{k} slider #{j} ({value_before} -> {value_after}): plot unchanged"
                assert "Traceback" not in after["text"], after["text"][-1500:]
                n_sliders += 1
        assert n_sliders >= lesson.min_sliders, \
            f"{n_sliders} sliders found, expected >= {lesson.min_sliders}"
        bs.scroll_cell_to_top(interacts.first)
        bs.screenshot(page, f"{lesson.stem}-after-slider")

        # 3b. Accessibility (issue 28): what the course put on the page passes axe-core's
        # WCAG 2.1 A/AA rules, and one explorer is usable with the keyboard and a screen reader.
        violations = axe_support.audit(page, include=[OUTPUTS])
        bs.ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (bs.ARTIFACTS / f"{lesson.stem}-axe.json").write_text(json.dumps(violations, indent=1), encoding="utf-8")
        assert not violations, f"axe-core in JupyterLab, the lesson's outputs: {axe_support.summary(violations)}"
        box = _keyboard_walk(page, interacts, lesson.stem)
        if lesson.stem == "02_attention":       # what a screen reader's tree holds for it
            tree = box.aria_snapshot()
            (bs.ARTIFACTS / f"{lesson.stem}-explorer-aria.yml").write_text(tree, encoding="utf-8")
            assert re.search(r'slider "d_k"', tree) and re.search(r'img "[^"]*\d', tree) \
                and re.search(r"status", tree), f"lesson 02's explorer in the accessibility tree:\n{tree}"

        # 4. Nothing left half-rendered, nothing logged.
        assert not bs.widget_failure_texts(page), bs.widget_failure_texts(page)
    except BaseException:
        try:
            bs.screenshot(page, f"{lesson.stem}-failure")
        except Exception:
            pass
        print("---- JupyterLab log (tail) ----\n" + lab_server.log_tail(60))
        print("---- page problems ----\n" + "\n".join(watcher.problems()))
        raise
    finally:
        watcher.closing = True
        context.close()
        lab_server.shutdown_kernels()
        assert nb_path.read_bytes() == original, \
            f"{lesson.notebook} was modified while the browser test ran"

    assert not watcher.problems(), "the page reported errors:\n" + "\n".join(watcher.problems())


OUTPUTS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output"


def _numbers(text):
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)]


_FOCUSED = "() => { const e = document.activeElement; return e ? e.tagName + '.' + e.className : null; }"


def _focus_steadily(page, element, tries=10):
    """Focus `element` and wait until it has kept the focus for 0.3 s. A busy JupyterLab may
    take the focus back once, late, for the cell it makes active (seen on a loaded CI
    machine: the Tab that followed then started from the cell, not from the control)."""
    for _ in range(tries):
        element.focus()
        page.wait_for_timeout(300)
        if element.evaluate("h => h === document.activeElement"):
            return
    raise AssertionError(f"the focus does not stay on the control: it is on {page.evaluate(_FOCUSED)}")


def _keyboard_walk(page, interacts, stem):
    """The first explorer with a slider, as a keyboard and screen-reader user meets it: the
    handle is in the Tab order and named after its label, an arrow key moves it, its value
    text is its value (the name said once, from its label: issue 43), and the live caption (and the picture's alt) then describes
    the figure for the new value."""
    for k in range(interacts.count()):
        box = interacts.nth(k)
        if bs.sliders(box).count() and box.locator(".course-caption").count():
            break
    else:
        raise AssertionError(f"{stem}: no explorer with a slider and a caption")
    slider = bs.sliders(box).first
    handle, live = slider.locator(".noUi-handle").first, box.locator(".course-caption").first
    caption = live.locator(".course-sr-only")       # the caption as heard (symbols in words: issue 43)
    label = slider.locator(".widget-label").first.inner_text().strip()
    slider.scroll_into_view_if_needed()
    landed = []
    for _ in range(3):
        _focus_steadily(page, handle)
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")              # back in the Tab order, onto the same handle
        if handle.evaluate("h => h === document.activeElement"):
            break
        landed.append(page.evaluate(_FOCUSED))
    else:
        raise AssertionError(f"{stem}: Tab does not reach {label!r} (3 tries; the focus went to {landed})")
    assert handle.get_attribute("aria-label") == label, \
        f"{stem}: slider {label!r} is named {handle.get_attribute('aria-label')!r}"
    before_caption = caption.inner_text()
    assert before_caption.strip(), f"{stem}: the explorer's live caption is empty"
    assert live.get_attribute("aria-live") == "polite" and live.get_attribute("role") == "status"
    key = "ArrowLeft" if float(handle.get_attribute("aria-valuenow")) >= float(handle.get_attribute("aria-valuemax")) \
        else "ArrowRight"
    page.keyboard.press(key)
    page.wait_for_function("([c, t]) => c.textContent !== t", arg=[caption.element_handle(), before_caption],
                           timeout=WIDGET_UPDATE_TIMEOUT_MS)
    value = bs.slider_value(slider).strip()
    # The caption may first change to the picture of an earlier move that was still being drawn
    # (the sliders above were moved just before; on a busy machine it comes late): wait, within
    # the same bound, for the caption of this value.
    deadline = time.monotonic() + WIDGET_UPDATE_TIMEOUT_MS / 1000
    while not _caption_names(caption.inner_text(), value) and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert handle.get_attribute("aria-valuetext") == value, \
        f"{stem}: value text {handle.get_attribute('aria-valuetext')!r}, readout {value!r}"
    img_alt = box.locator("img.widget-image").first.get_attribute("alt")
    assert img_alt == caption.inner_text(), f"{stem}: the picture's alt {img_alt!r} is not its caption"
    assert _caption_names(caption.inner_text(), value), \
        f"{stem}: after {label} -> {value} the caption says {caption.inner_text()!r}"
    return box


def _caption_names(caption: str, value: str) -> bool:
    """Whether a caption names a control's value: the option's name, or the number (to 0.6 %)."""
    try:
        wanted = float(value)
    except ValueError:                          # a named option: the caption names it
        return value in caption
    return any(abs(x - wanted) <= 0.006 * max(1, abs(wanted)) for x in _numbers(caption))


# A lesson with a bertviz view that runs quickly (lesson 10: about 30 s).
SAVE_RELOAD_LESSON = "notebooks/10_residual_stream_and_induction_heads.ipynb"
SAVE_RELOAD_DIR = "browser-save-reload"   # in the test's own workspace: nbval never collects it


@pytest.mark.timeout(300)
def test_bertviz_views_survive_save_and_reload(lab_server, chromium):
    """Run All, save from the UI, reload: the views draw again from the saved outputs.

    The copy is made *untrusted* (one metadata key differs from the trusted lesson), so
    its views can only come back after the reload if saving from JupyterLab signed the
    notebook itself.
    """
    import nbformat

    src = bs.ROOT / SAVE_RELOAD_LESSON
    n_views = _bertviz_outputs(src)
    assert n_views >= 1, f"{SAVE_RELOAD_LESSON} shows no bertviz view"
    folder = lab_server.workspace / SAVE_RELOAD_DIR
    rel = f"{SAVE_RELOAD_DIR}/{src.name}"
    copy = lab_server.workspace / rel
    stem = "save-reload-" + src.stem
    for old in bs.ARTIFACTS.glob(f"{stem}-*.png"):
        old.unlink()

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    context = page = watcher = None
    try:
        nb = nbformat.read(src, as_version=4)
        nb.metadata["course_browser_test"] = "save-and-reload copy"
        nbformat.write(nb, copy)
        notary = lab_server.notary()
        assert not notary.check_signature(nbformat.read(copy, as_version=4)), \
            "the copy should start untrusted"

        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        watcher = bs.PageWatcher().attach(page)
        bs.open_notebook(page, lab_server, rel)

        bs.run_all_cells(page, timeout_ms=RUN_ALL_TIMEOUT_MS)
        problems = _check_cells_ran(bs.code_cell_states(page), _code_cells(copy))
        assert not problems, "\n".join(problems)
        ran = bs.wait_bertviz_drawn(page, n_views)

        bs.save_notebook(page, copy)
        saved = nbformat.read(copy, as_version=4)
        assert _bertviz_outputs(copy) == n_views
        saved_ids = sorted(_bertviz_ids(copy))
        assert saved_ids == sorted(v["id"] for v in ran), (saved_ids, ran)
        assert notary.check_signature(saved), \
            "JupyterLab did not sign the notebook it saved: its views would not render"

        # Reload the page, as a learner would (the kernel keeps running: with it shut
        # down, the lesson's widget, whose state JupyterLab does not save, could not
        # be found). Nothing re-runs, so only the saved outputs can draw the views.
        watcher.closing = True          # the reload aborts in-flight long polls
        page.reload(wait_until="domcontentloaded")
        bs.wait_notebook_open(page, src.name)
        watcher.closing = False
        # Same ids as saved: nothing re-ran (every run makes new uuids).
        again = bs.wait_bertviz_drawn(page, n_views)
        assert sorted(v["id"] for v in again) == saved_ids, (again, saved_ids)
        bs.screenshot_bertviz(page, f"{stem}-bertviz-after-reload")
    except BaseException:
        if page is not None:
            try:
                bs.screenshot(page, f"{stem}-failure")
            except Exception:
                pass
        print("---- JupyterLab log (tail) ----\n" + lab_server.log_tail(60))
        if watcher is not None:
            print("---- page problems ----\n" + "\n".join(watcher.problems()))
        raise
    finally:
        if watcher is not None:
            watcher.closing = True
        if context is not None:
            context.close()
        lab_server.shutdown_kernels()
        shutil.rmtree(folder, ignore_errors=True)

    assert not watcher.problems(), "the page reported errors:\n" + "\n".join(watcher.problems())


# Every lesson whose committed outputs show a bertviz view.
BERTVIZ_LESSONS = [l for l in LESSONS if _bertviz_outputs(bs.ROOT / l.notebook)]
NARROW = {"width": 1366, "height": 768}   # a common laptop screen


@pytest.mark.timeout(180)
@pytest.mark.parametrize("lesson", BERTVIZ_LESSONS, ids=lambda l: l.stem)
def test_bertviz_views_fit_beside_the_file_browser(lesson: Lesson, lab_server, chromium):
    """At 1366 x 768 with JupyterLab's file browser open, every saved bertviz view is
    reachable: the model view's last head column, the expanded neuron view's right-hand
    tokens (after the softmax column) and the head view's right-hand tokens lie inside
    the visible area, or come into it when the output is scrolled sideways; the head
    view's colour squares carry their head numbers."""
    nb_path = bs.ROOT / lesson.notebook
    original = nb_path.read_bytes()
    n_views = _bertviz_outputs(nb_path)
    context = chromium.new_context(viewport=NARROW)
    page = context.new_page()
    watcher = bs.PageWatcher().attach(page)
    try:
        bs.open_notebook(page, lab_server, lesson.notebook)
        bs.open_file_browser(page)
        bs.wait_bertviz_drawn(page, n_views)
        problems = []
        for i in range(n_views):
            seen = bs.bertviz_reach(page, i)
            view = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) div[id^="bertviz-"]').nth(i)
            bs.ARTIFACTS.mkdir(parents=True, exist_ok=True)
            view.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea-output')][1]").screenshot(
                path=str(bs.ARTIFACTS / f"{lesson.stem}-bertviz-{i}-{seen['kind']}-1366.png"))
            end = seen["scrolled"] or seen["before"]
            if not seen["targets"] or end["right"] > end["visible"] + 1:
                problems.append(f"view #{i} ({seen['kind']}): its right edge at {end['right']:.0f} px "
                                f"lies beyond the visible {end['visible']:.0f} px: {seen}")
            if seen["kind"] == "head" and seen["head_numbers"] != [str(k) for k in range(seen["squares"])]:
                problems.append(f"view #{i} (head): colour squares labelled {seen['head_numbers']}, "
                                f"{seen['squares']} squares")
        assert not problems, "\n".join(problems)
    except BaseException:
        try:
            bs.screenshot(page, f"{lesson.stem}-bertviz-fit-failure")
        except Exception:
            pass
        raise
    finally:
        watcher.closing = True
        context.close()
        lab_server.shutdown_kernels()
        assert nb_path.read_bytes() == original, f"{lesson.notebook} was modified"
    assert not watcher.problems(), "the page reported errors:\n" + "\n".join(watcher.problems())


@pytest.mark.timeout(300)
def test_learner_path(lab_server, chromium):
    """A newcomer's first minutes (issue 36): `course.py lab` opens the workspace at lesson 00;
    the file browser holds the lessons and what they show, nothing else; Run All leaves each
    check at "not solved yet"; typing a right solution gives ✅; a solution shown on purpose
    (show_solution) is shown and recorded, and the progress tells it apart."""
    listing = lab_server.api("/api/contents/")[1]
    assert sorted(item["name"] for item in listing["content"]) == ["assets", "notebooks"], listing
    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    watcher = bs.PageWatcher().attach(page)
    try:
        # Where `course.py lab` points the learner's browser (lab.py passes the lesson to open).
        assert lab_server.command()[:3] == [bs.sys.executable, str(bs.COURSE), "lab"]
        bs.open_notebook(page, lab_server, "notebooks/00_start_here.ipynb")
        bs.run_all_cells(page, timeout_ms=RUN_ALL_TIMEOUT_MS)
        # (a concept check's options may quote a verdict: its cell, `ask(…)`, is left out)
        outputs = "\n".join(state["output"] for state in bs.code_cell_states(page)
                            if "ask(" not in state["source"])
        assert "⏳ not solved yet — center_rows" in outputs and "✅" not in outputs

        # Typing a right solution into the exercise's cell, then running it and its check.
        panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        exercise = panel.locator(".jp-CodeCell").filter(has_text='raise NotImplementedError("center_rows')
        exercise.scroll_into_view_if_needed()
        exercise.locator(".cm-content").click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text('def center_rows(x):\n'
                                  '    "x: (n, d) -> (n, d), every row minus its own mean."\n'
                                  '    return x - x.mean(dim=1, keepdim=True)')
        page.keyboard.press("Shift+Enter")          # runs it, moves to the check
        bs.wait_kernel_idle(page)
        page.keyboard.press("Shift+Enter")          # runs the check
        check = panel.locator(".jp-CodeCell").filter(has_text="check_center_rows(center_rows)").first
        check.locator(".jp-OutputArea-output").filter(has_text="✅").wait_for(timeout=30_000)

        # A solution, on purpose: a new cell below.
        page.keyboard.press("Escape")
        page.keyboard.press("b")
        page.keyboard.press("Enter")
        page.keyboard.insert_text('from course_lib.exercises import show_solution\nshow_solution("0.1")')
        page.keyboard.press("Shift+Enter")
        shown = panel.locator(".jp-OutputArea-output").filter(has_text="Solution to exercise 0.1")
        shown.first.wait_for(timeout=30_000)
        code = panel.locator(".jp-OutputArea-output details").filter(has_text="Show the code").last
        code.locator("summary").click()                # the code on request (issue 43)
        assert "keepdim" in code.inner_text()
        bs.screenshot(page, "00_start_here-learner-path")
    except BaseException:
        try:
            bs.screenshot(page, "learner-path-failure")
        except Exception:
            pass
        print("---- JupyterLab log (tail) ----\n" + lab_server.log_tail(60))
        raise
    finally:
        watcher.closing = True
        context.close()
        lab_server.shutdown_kernels()
    progress = json.loads(lab_server.progress_file.read_text(encoding="utf-8"))
    entry = progress["center_rows"]
    assert entry["solved"] and entry["solution_seen"] >= entry["solved_time"], entry
    assert not watcher.problems(), "the page reported errors:\n" + "\n".join(watcher.problems())


# A 1366 x 768 screen leaves the page less than 768 px: the taskbar (40 px on Windows) and the
# browser's tab strip and toolbar (85 px in Chromium) take the rest (issue 38 §1).
LAPTOP_PAGE = {"width": 1366, "height": 768 - 40 - 85}

_EXPLORER_FIT_JS = """el => {
  const scroller = el.closest('.jp-WindowedPanel-outer') || el.closest('.jp-Notebook');
  const out = el.closest('.jp-OutputArea-output') || el;
  for (let i = 0; i < 3; i++)      // the windowed notebook settles its cells as it scrolls
    scroller.scrollTop += out.getBoundingClientRect().top - scroller.getBoundingClientRect().top;
  const r = out.getBoundingClientRect(), s = scroller.getBoundingClientRect();
  const images = [...out.querySelectorAll('img')].map(i => {
    const b = i.getBoundingClientRect();
    return {right: b.right, natural: i.naturalWidth, shown: b.width};
  });
  return {height: r.height, right: r.right, view_height: scroller.clientHeight, view_right: s.right,
          images: images};
}"""


# Explorers measured too tall on the laptop page (issue 38 §1), each with what it needs: each is an
# expected failure, strict, so the entry must go when the explorer is made to fit. None left: the
# last seven (03 558 px, 06 658, 07 1162, 08 754, 09 658, 10 811, 11 635) fit since their controls
# share lines and their figures were reshaped.
TOO_TALL: dict = {}
FIT_LESSONS = [pytest.param(l, id=l.stem, marks=[pytest.mark.xfail(strict=True, reason=TOO_TALL[l.stem])]
                            if l.stem in TOO_TALL else []) for l in LESSONS]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("lesson", FIT_LESSONS)
def test_explorers_fit_a_laptop_screen_beside_the_file_browser(lesson: Lesson, lab_server, chromium):
    """Issue 38 §1: on a 1366 x 768 screen with JupyterLab's file browser open, each explorer's
    controls, its whole figure and its caption (the output the explorer shows) fit in the
    notebook's visible area at once, so a learner sees a slider and what it does together;
    nothing reaches past the area's right edge. Measured on the saved widgets, as a learner
    first meets them. Also: the notebook column is at least as wide as tests/test_viz_readable.py
    assumes when it judges text sizes."""
    from test_viz_readable import COLUMN_PX

    nb_path = bs.ROOT / lesson.notebook
    original = nb_path.read_bytes()
    context = chromium.new_context(viewport=LAPTOP_PAGE)
    page = context.new_page()
    watcher = bs.PageWatcher().attach(page)
    try:
        bs.open_notebook(page, lab_server, lesson.notebook)
        bs.open_file_browser(page)
        boxes = bs.interact_widgets(page)
        boxes.first.wait_for(timeout=30_000)
        bs.wait_widgets_rendered(page)
        # The width a figure gets: an image wider than the column is shown at the column's width.
        column = page.evaluate("""() => {
            const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
            const shrunk = [...panel.querySelectorAll('.jp-OutputArea-output img')]
                .map(i => [i.naturalWidth, i.getBoundingClientRect().width]).filter(([n, w]) => w > 0 && n > w + 1);
            const outs = [...panel.querySelectorAll('.jp-OutputArea-output')].map(o => o.clientWidth).filter(w => w > 0);
            return Math.floor(Math.min(...(shrunk.length ? shrunk.map(([n, w]) => w) : outs)));
        }""")
        assert column >= COLUMN_PX, (f"the notebook column is {column} px at {LAPTOP_PAGE} with the file browser "
                                     f"open; tests/test_viz_readable.py assumes {COLUMN_PX}")
        problems = []
        for k in range(boxes.count()):
            box = boxes.nth(k)
            seen = box.evaluate(_EXPLORER_FIT_JS)
            page.wait_for_timeout(300)
            seen = box.evaluate(_EXPLORER_FIT_JS)
            bs.screenshot(page, f"{lesson.stem}-explorer-{k}-laptop")
            if seen["height"] > seen["view_height"]:
                problems.append(f"explorer #{k}: {seen['height']:.0f} px tall, the visible area {seen['view_height']} px")
            wide = [i for i in seen["images"] if i["right"] > seen["view_right"] + 1]
            if seen["right"] > seen["view_right"] + 1 or wide:
                problems.append(f"explorer #{k}: reaches {max([seen['right']] + [i['right'] for i in wide]):.0f} px, "
                                f"the visible area ends at {seen['view_right']:.0f} px")
        assert not problems, f"{lesson.stem} at {LAPTOP_PAGE['width']}x{LAPTOP_PAGE['height']}:\n" + "\n".join(problems)
    except BaseException:
        try:
            bs.screenshot(page, f"{lesson.stem}-explorer-fit-failure")
        except Exception:
            pass
        raise
    finally:
        watcher.closing = True
        context.close()
        lab_server.shutdown_kernels()
        assert nb_path.read_bytes() == original, f"{lesson.notebook} was modified"
