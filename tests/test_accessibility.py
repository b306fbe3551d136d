"""WCAG 2.1 A/AA, measured with axe-core in Chromium (issue 28): the exported lesson pages,
their index and the class board. (The lessons' outputs and explorers in JupyterLab are
audited in tests/test_browser.py, after each lesson's Run All, with a keyboard walk.)

Every exported page must have 0 axe-core violations of the rules tagged wcag2a, wcag2aa,
wcag21a, wcag21aa, one `h1` and no skipped heading level, a language, an `alt` on every
picture that is not nbconvert's placeholder, and must reflow at 320 CSS px (WCAG 1.4.10:
nothing but code and wide figures, which scroll in their own box, wider than the page).
What a screen reader is handed is read from Chromium's own accessibility tree: no
mathematical-italic letter (U+1D400–U+1D7FF, which espeak-ng spells "letter 1 D 4 5 1"),
and every heading with a formula named in words.
Planted pages check that the audit fails where it should: an image without `alt`, an
unnamed slider. Results go to test-artifacts/accessibility/.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import axe_support
import browser_support as bs

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "test-artifacts" / "accessibility"
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PLACEHOLDER = "No description has been provided for this image"


@pytest.fixture(scope="module")
def pages():
    sys.path.insert(0, str(ROOT / "tools"))
    import export_html
    out = OUT / "html"
    export_html.export(LESSONS, out)
    return out


@pytest.fixture(scope="module")
def browser():
    with bs.chromium_browser() as browser:
        yield browser


def _record(name, violations):
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}-axe.json").write_text(json.dumps(violations, indent=1), encoding="utf-8")


_STRUCTURE = """() => {
  const headings = [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')];
  const levels = headings.filter(h => !h.closest('.jp-OutputArea, [data-bertviz-view]')).map(h => +h.tagName[1]);
  const imgs = [...document.querySelectorAll('img')].map(i => i.getAttribute('alt'));
  const mathHeadings = headings.filter(h => h.querySelector('.MathJax, .MathJax_Display'))
      .filter(h => !h.getAttribute('aria-label')).map(h => h.textContent.slice(0, 60));
  return {levels, imgs, lang: document.documentElement.lang, mathHeadings};
}"""


def _math_italics(page) -> list[str]:
    """Mathematical-italic letters in Chromium's accessibility tree of `page` (names and values)."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    text = "".join(str(n.get(k, {}).get("value", "")) for n in nodes if not n.get("ignored") for k in ("name", "value"))
    return re.findall("[\U0001D400-\U0001D7FF]", text)

# What may be wider than a 320 px page at WCAG 1.4.10: code and figures, in boxes that scroll.
_TOO_WIDE = """() => {
  const w = document.documentElement.clientWidth;
  return [...document.querySelectorAll('body *')].filter(e => {
    const r = e.getBoundingClientRect();
    if (r.right <= w + 1 || r.width === 0) return false;
    for (let p = e; p; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (p !== e && (s.overflowX === 'auto' || s.overflowX === 'scroll' || s.overflowX === 'hidden')) return false;
    }
    return true;
  }).slice(0, 5).map(e => e.tagName + '.' + e.className);
}"""


@pytest.mark.timeout(900)
def test_exported_pages_and_index_pass_axe(pages, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    problems, counted = [], {}
    for path in sorted(pages.glob("*.html")):
        page.goto(path.as_uri())
        page.wait_for_function("() => !window.MathJax || document.body.dataset.mathjax === 'done'",
                               timeout=60_000)
        violations = axe_support.audit(page)
        _record(path.stem, violations)
        counted[path.stem] = sum(len(t) for _, _, t, _ in violations)
        if violations:
            problems.append(f"{path.name}: {axe_support.summary(violations)}")
        found = page.evaluate(_STRUCTURE)
        levels = found["levels"]
        if levels.count(1) != 1 or any(b > a + 1 for a, b in zip(levels, levels[1:])):
            problems.append(f"{path.name}: headings {levels[:12]}… (one h1, no level skipped)")
        if not found["lang"]:
            problems.append(f"{path.name}: no lang on <html>")
        if found["mathHeadings"]:
            problems.append(f"{path.name}: headings with a formula and no words: {found['mathHeadings']}")
        italics = _math_italics(page)
        if italics:
            problems.append(f"{path.name}: {len(italics)} mathematical-italic letters handed to a screen "
                            f"reader, e.g. {''.join(italics[:8])}")
        bad_alt = [a for a in found["imgs"] if not a or PLACEHOLDER in a]
        if bad_alt:
            problems.append(f"{path.name}: {len(bad_alt)} of {len(found['imgs'])} images without a description")
    (OUT / "pages-axe-summary.json").write_text(json.dumps({"axe": axe_support.axe_version(page),
                                                            "violations": counted}, indent=1), encoding="utf-8")
    page.close()
    assert len(counted) == len(LESSONS) + 1
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(300)
def test_exported_pages_reflow_at_320_px_and_200_percent(pages, browser):
    """WCAG 1.4.10 (320 CSS px wide, the width of a 1280 px window at 400 %) and 1.4.4
    (200 %): no figure or control is lost off the page; wide code and figures scroll in
    their own box."""
    problems = []
    for width in (320, 683):                    # 683: a 1366 px screen at 200 %
        page = browser.new_page(viewport={"width": width, "height": 640})
        for path in sorted(pages.glob("0[0-9]_*.html"))[:3] + [pages / "index.html"]:
            page.goto(path.as_uri())
            wide = page.evaluate(_TOO_WIDE)
            if wide:
                problems.append(f"{path.name} at {width} px: {wide}")
        page.close()
    assert not problems, "\n".join(problems)


def test_class_board_passes_axe_and_shows_the_stuck_student_first(browser):
    """The board as projected, 1366×768, with a planted stuck student (issue 30 §3): carol,
    alphabetically last, is the first row, marked stuck in words; 0 axe-core violations."""
    import time

    sys.path.insert(0, str(ROOT / "deploy" / "board"))
    import board
    now = time.time()
    records = {"alice": {"softmax": {"last": "ok", "attempts": 2, "time": now - 40}},
               "bob": {"attention": {"last": "wrong", "attempts": 1, "hint": "softmax over the last axis?",
                                     "time": now - 90, "wrong_times": [now - 90]}},
               "carol": {"attention": {"last": "wrong", "attempts": 4, "hint": "divide by `sqrt(d_k)`",
                                       "time": now - 20, "wrong_times": [now - 300, now - 200, now - 20]}},
               "dave": {}}
    b = board.build(records, board.exercise_lessons(), lesson="02", numbers=board.exercise_numbers(),
                    unreadable=["erin"])
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_content(board.render(b, ["02", "03"], lesson="02"))
    violations = axe_support.audit(page)
    _record("class-board", violations)
    tree = page.locator("table").aria_snapshot()
    first_row = page.locator("tbody tr").first.inner_text()
    wide = page.evaluate("document.documentElement.scrollWidth")
    page.screenshot(path=str(OUT / "class-board-stuck-1366x768.png"))
    page.close()
    assert not violations, axe_support.summary(violations)
    assert first_row.startswith("carol") and "stuck" in first_row and "2.2 attention: 3 wrong" in first_row, first_row
    assert "solved" in tree and "last check wrong" in tree and "not yet" in tree, tree
    assert wide <= 1366


@pytest.mark.parametrize("planted, rule", [
    ('<img src="data:image/png;base64,iVBORw0KGgo=">', "image-alt"),
    ('<label>d_model</label><div class="noUi-handle" role="slider" tabindex="0" aria-valuenow="64" '
     'aria-valuemin="8" aria-valuemax="256"></div>', "aria-input-field-name"),
    ('<label>lesson</label><select><option>02</option></select>', "select-name"),
])
def test_the_audit_fails_a_planted_mistake(browser, planted, rule):
    page = browser.new_page()
    page.set_content(f'<!doctype html><html lang="en"><head><title>t</title></head>'
                     f'<body><main><h1>t</h1>{planted}</main></body></html>')
    found = {v[0] for v in axe_support.audit(page)}
    page.close()
    assert rule in found, f"axe-core did not report {rule} on {planted!r}: {found}"
