"""tools/export_html.py: lessons as HTML pages that render offline.

Fast tests check the exported page's text (no http(s) resource, widgets replaced
by their saved view, links between lessons, bad input, solutions collapsed / open /
absent, code and output as named regions, tracebacks without rulers, a heading's
formula in words). The browser tests open the pages from file:// in headless Chromium
with every non-file request aborted and fail if one was even attempted; MathJax must
have typeset the formulas, the figures must be decoded, bertviz views must have drawn,
and the page must raise no error. Lesson 02's page is then read as a keyboard and a
screen reader meet it: each solution hidden until Enter on its "Solution" summary, and
Chromium's own accessibility tree holding each formula as its words (the typeset MathML
inert) and no mathematical-italic letters (which espeak-ng spells "letter 1 D 4 5 1").
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSON00 = ROOT / "notebooks" / "00_start_here.ipynb"
LESSON02 = ROOT / "notebooks" / "02_attention.ipynb"
TOOL = ROOT / "tools" / "export_html.py"
ARTIFACTS = ROOT / "test-artifacts" / "export_html"

_spec = importlib.util.spec_from_file_location("export_html", TOOL)
export_html = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(export_html)


def _outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def _count_png(nb):
    """PNG figures a page should show: cell outputs plus those inside saved widget views."""
    n = sum("image/png" in o.get("data", {}) for o in _outputs(nb))
    state = nb.metadata.get("widgets", {}).get(export_html.WIDGET_STATE, {}).get("state", {})
    views = {o["data"][export_html.WIDGET_VIEW]["model_id"] for o in _outputs(nb)
             if export_html.WIDGET_VIEW in o.get("data", {})}

    def walk(mid, seen):
        if mid in seen or mid not in state:
            return 0
        seen.add(mid)
        st = state[mid]["state"]
        k = sum("image/png" in o.get("data", {}) for o in st.get("outputs", []))
        if state[mid].get("model_name") == "ImageModel" and state[mid].get("buffers"):
            k += 1                                      # an explorer's figure, saved as bytes
        return k + sum(walk(c[len("IPY_MODEL_"):], seen) for c in st.get("children", [])
                       if isinstance(c, str) and c.startswith("IPY_MODEL_"))
    return n + sum(walk(v, set()) for v in views)


def _special_lessons():
    """Lessons with a bertviz view in their outputs, or an image file in their prose."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        bertviz = any("bertviz-" in o.get("data", {}).get("text/html", "") for o in _outputs(nb))
        image = any(re.search(r"!\[[^\]]*\]\((?!https?:|data:)|<img\b", c.source)
                    for c in nb.cells if c.cell_type == "markdown")
        if bertviz or image:
            found.append(path)
    return found


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    pages = export_html.export([LESSON00], out)
    return out, pages[0]


# ----------------------------------------------------------------------------- page text
def test_lesson00_page_loads_nothing_from_the_network(exported):
    out, page = exported
    text = page.read_text(encoding="utf-8")
    assert export_html.external_references(text) == []
    assert "unpkg.com" not in text and "cdnjs" not in text and "cdn.jsdelivr" not in text
    assert '<script src="mathjax/MathJax.js?config=' in text
    assert (out / "mathjax" / "MathJax.js").is_file()
    assert (out / "mathjax" / "fonts" / "HTML-CSS" / "STIX-Web" / "woff").is_dir()
    assert (out / "index.html").is_file() and page.name in (out / "index.html").read_text(encoding="utf-8")


def test_figures_are_embedded_and_widgets_become_their_saved_view(exported):
    _, page = exported
    text = page.read_text(encoding="utf-8")
    nb = nbformat.read(LESSON00, as_version=4)
    assert text.count('src="data:image/png;base64,') == _count_png(nb) >= 2
    assert "application/vnd.jupyter.widget-state+json" not in text
    assert "application/vnd.jupyter.widget-view+json" not in text
    assert export_html.STATIC_NOTE in text
    assert "<b>temperature T</b> = 1" in text     # the slider's saved value


def test_links_between_lessons_point_at_the_exported_pages(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# T\n[next](01_b.ipynb), [part](01_b.ipynb#sec), [elsewhere](99_z.ipynb), "
        "[web](https://example.org/x.ipynb)")])
    a, b = tmp_path / "00_a.ipynb", tmp_path / "01_b.ipynb"
    nbformat.write(nb, a)
    nbformat.write(nbformat.v4.new_notebook(), b)
    export_html.export([a, b], tmp_path / "out")
    text = (tmp_path / "out" / "00_a.html").read_text(encoding="utf-8")
    assert 'href="01_b.html"' in text and 'href="01_b.html#sec"' in text
    assert 'href="99_z.ipynb"' in text          # not exported: left alone
    assert 'href="https://example.org/x.ipynb"' in text


def test_images_beside_the_lessons_are_embedded_and_a_missing_one_is_an_error(tmp_path):
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "d.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>',
                                               encoding="utf-8")
    (tmp_path / "nb").mkdir()
    good = tmp_path / "nb" / "00_a.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# A\n![diagram](../assets/d.svg)\n<img src=\"../assets/d.svg\" width=\"50\">")]), good)
    export_html.export([good], tmp_path / "out")
    text = (tmp_path / "out" / "00_a.html").read_text(encoding="utf-8")
    assert text.count('src="data:image/svg+xml;base64,') == 2 and "../assets" not in text
    bad = tmp_path / "nb" / "01_b.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# B\n![gone](../assets/missing.png)")]), bad)
    with pytest.raises(export_html.ExportError, match="missing.png"):
        export_html.export([bad], tmp_path / "out2")


def test_the_colab_setup_cell_is_left_out(tmp_path):
    nb = nbformat.read(LESSON00, as_version=4)
    cell = nbformat.v4.new_code_cell("print('COLAB-ONLY-MARKER')", metadata={"tags": ["colab-setup"]})
    nb.cells.insert(1, cell)
    path = tmp_path / LESSON00.name
    nbformat.write(nb, path)
    export_html.export([path], tmp_path / "out")
    page = tmp_path / "out" / LESSON00.with_suffix(".html").name
    assert "COLAB-ONLY-MARKER" not in page.read_text(encoding="utf-8")


def test_the_index_lists_every_page_in_the_folder(tmp_path):
    for name in ("00_a", "01_b"):
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# Lesson {name}")]),
                       tmp_path / f"{name}.ipynb")
    export_html.export([tmp_path / "00_a.ipynb"], tmp_path / "out")
    export_html.export([tmp_path / "01_b.ipynb"], tmp_path / "out")    # one at a time
    index = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert '<a href="00_a.html">Lesson 00_a</a>' in index and '<a href="01_b.html">Lesson 01_b</a>' in index


def test_hide_solutions_keeps_outputs_but_not_the_solution(tmp_path):
    export_html.export([LESSON00], tmp_path, hide_solutions=True)
    text = (tmp_path / LESSON00.with_suffix(".html").name).read_text(encoding="utf-8")
    nb = nbformat.read(LESSON00, as_version=4)
    in_prose = sum(c.source.count("BEGIN SOLUTION") for c in nb.cells if c.cell_type == "markdown")
    assert any("BEGIN SOLUTION" in c.source for c in nb.cells if c.cell_type == "code")
    assert text.count("BEGIN SOLUTION") == in_prose          # only where the prose mentions it
    assert "# YOUR CODE HERE" in text and "write your solution here" in text
    assert 'src="data:image/png;base64,' in text


# ----------------------------------------------------------------------------- exercises
SOLUTION_LINE = "shifted = scores - scores.max(dim=-1, keepdim=True).values"   # lesson 02, exercise 2.1


def _code_text(page_html):
    """The page's code as a reader sees it: highlighted spans joined, entities decoded."""
    import html as html_lib
    return html_lib.unescape(re.sub(r"<[^>]+>", "", page_html))


def _regions(nb):
    from course_lib.classroom.student import BEGIN
    return sum(c.source.count(BEGIN) for c in nb.cells if c.cell_type == "code")


@pytest.fixture(scope="module")
def lesson02(tmp_path_factory):
    out = tmp_path_factory.mktemp("html02")
    return export_html.export([LESSON02], out)[0].read_text(encoding="utf-8")


def test_each_solution_is_a_closed_disclosure_after_the_learners_stub(lesson02):
    nb = nbformat.read(LESSON02, as_version=4)
    details = re.findall(r'<details class="course-solution"( open(?:="")?)?><summary>(.*?)</summary>(.*?)</details>',
                         lesson02, re.S)
    assert len(details) == _regions(nb) >= 3
    assert not any(is_open for is_open, _, _ in details)
    assert [name for _, name, _ in details][0] == "Solution: softmax"
    assert SOLUTION_LINE in _code_text(details[0][2])
    outside = re.sub(r'<details class="course-solution">.*?</details>', "", lesson02, flags=re.S)
    assert SOLUTION_LINE not in _code_text(outside)
    # the stub sits where the solution was, right before its disclosure; the code around it stays
    before = _code_text(lesson02[:lesson02.index('<details class="course-solution">')])
    assert before.rstrip().endswith('raise NotImplementedError("softmax: write your solution here")')
    assert "def softmax(scores):" in before
    assert "BEGIN SOLUTION" not in _code_text(lesson02.split("jp-CodeCell", 1)[1])


def test_an_instructor_can_show_the_solutions_open_or_leave_them_out(tmp_path):
    shown = export_html.export([LESSON02], tmp_path / "open", show_solutions=True)[0].read_text(encoding="utf-8")
    n_open = len(re.findall(r'<details class="course-solution" open(?:="")?>', shown))
    assert n_open == _regions(nbformat.read(LESSON02, as_version=4))
    hidden = export_html.export([LESSON02], tmp_path / "class", hide_solutions=True)[0].read_text(encoding="utf-8")
    assert SOLUTION_LINE not in _code_text(hidden) and "<details class=\"course-solution\"" not in hidden
    with pytest.raises(ValueError):
        export_html.export([LESSON02], tmp_path / "both", hide_solutions=True, show_solutions=True)
    r = subprocess.run([sys.executable, str(TOOL), str(LESSON02), "--out", str(tmp_path / "x"),
                        "--show-solutions", "--hide-solutions"], capture_output=True, text=True,
                       encoding="utf-8", timeout=120)
    assert r.returncode == 2 and "not allowed with" in r.stderr


def test_code_and_output_are_named_groups_numbered_as_their_prompts(lesson02):
    # Groups, not landmark regions: 60 landmarks on a page are a maze (issue 43).
    assert 'role="region"' not in lesson02
    names = re.findall(r'<div aria-label="((?:Code|Output), cell \d+)" class="jp-Cell-(?:in|out)putWrapper" '
                       r'role="group"', lesson02)
    nb = nbformat.read(LESSON02, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and "colab-setup" not in c.metadata.get("tags", [])]
    assert len(names) == len(set(names)) == len(code) + sum(bool(c.outputs) for c in code)
    first = code[0]
    assert f"Code, cell {first.execution_count}" == names[0]
    assert re.search(rf"In(?:&nbsp;|\xa0| )\[{first.execution_count}\]:", lesson02)   # the prompt beside it


def test_tracebacks_lose_their_rulers():
    from html_export.cells import clean_traceback
    tb = ["\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
          "\x1b[0;31mKeyError\x1b[0m                                  Traceback (most recent call last)",
          "Cell \x1b[0;32mIn[4]\x1b[0m, line 1\n\x1b[0;32m----> \x1b[39m\x1b[32m1\x1b[39m legs[\"kitten\"]\n",
          "\x1b[0;31mKeyError\x1b[0m: 'kitten'"]
    out = clean_traceback(tb)
    assert len(out) == 3 and "---" not in "".join(out)
    assert "\x1b[0;32m→ \x1b[39m\x1b[32m1" in out[1]


def test_the_lesson_page_has_no_ruler_and_says_where_the_error_is(lesson02):
    text = _code_text(lesson02)
    # Lesson 02's error on purpose shows its one-line message (issue 45: `error_in_one_line`);
    # the traceback arrows of other errors are tested above.
    assert "KeyError: 'kitten'" in text and "Traceback" not in text
    assert not re.search(r"^-{10,}$", text, re.M) and "---->" not in text


def test_a_heading_with_a_formula_says_it_in_words(lesson02, tmp_path):
    """The lessons' headings are words (tests/test_notebook_a11y.py); a notebook whose heading
    holds a formula still gets its words as the heading's name."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## 3. Why divide by $\\sqrt{d_k}$?\n\nText.")])
    nb.metadata["kernelspec"] = nbformat.read(LESSON02, as_version=4).metadata["kernelspec"]
    source = tmp_path / "99_formula_heading.ipynb"
    nbformat.write(nb, source)
    page = export_html.export([source], tmp_path / "out")[0].read_text(encoding="utf-8")
    h = re.search(r'<h2 id="3\.-Why[^"]*" aria-label="([^"]*)">(.*?)</h2>', page, re.S)
    assert h and h.group(1) == "3. Why divide by square root of d sub k?"
    assert h.group(2).startswith("3. Why divide by $\\sqrt{d_k}$?")    # typeset by MathJax as before
    assert 'href="#3.-Why-divide-by-$%5Csqrt%7Bd_k%7D$?"' in h.group(2)     # the anchor untouched
    assert "assistiveMML: true" in lesson02 and ".MJX_Assistive_MathML mi { text-transform: none" in lesson02
    assert re.search(r'<h2 id="3\.-Why-divide-by-the-square-root-of-the-key-length\?">', lesson02)


def test_static_rendering_of_controls_progress_bars_and_missing_state():
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_dd", "IPY_MODEL_cb",
                                                                  "IPY_MODEL_out"]}},
        "dd": {"model_name": "DropdownModel", "state": {"description": "sentence", "index": 1,
                                                          "_options_labels": ["a", "b <c>"]}},
        "cb": {"model_name": "CheckboxModel", "state": {"description": "scaled", "value": False}},
        "out": {"model_name": "OutputModel", "state": {"outputs": [
            {"output_type": "stream", "name": "stdout", "text": "hello\n"}]}},
        "bar": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_h", "IPY_MODEL_p"]}},
        "h": {"model_name": "HTMLModel", "state": {"value": "training: 100%"}},
        "p": {"model_name": "FloatProgressModel", "state": {"min": 0, "max": 40, "value": 40}},
    }
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("w", outputs=[
        nbformat.v4.new_output("display_data", data={export_html.WIDGET_VIEW: {"model_id": m},
                                                     "text/plain": "x"})
        for m in ("box", "bar", "gone")])])
    nb.metadata["widgets"] = {export_html.WIDGET_STATE: {"state": state}}
    assert export_html.replace_widgets(nb) == 3
    outs = nb.cells[0].outputs
    html = [o["data"]["text/html"] for o in outs if "data" in o]
    assert "<b>sentence</b> = b &lt;c&gt;" in html[0] and "<b>scaled</b> = off" in html[0]
    assert outs[1]["output_type"] == "stream" and outs[1]["text"] == "hello\n"
    assert '<progress value="40" max="40">' in html[1] and "training: 100%" in html[1]
    assert "run the notebook to see this widget" in html[2]
    assert "widgets" not in nb.metadata


@pytest.mark.parametrize("snippet", [
    '<script src="https://cdn.example/x.js"></script>',
    "<script type='text/javascript' src='//cdn.example/x.js'></script>",
    '<link rel="stylesheet" href="https://fonts.example/css">',
    '<img src="http://example.org/a.png">',
    "<style>@font-face { src: url('https://example.org/f.woff') }</style>",
    '<script type="module">const m = await import("https://cdn.example/m.mjs")</script>',
])
def test_external_resources_are_detected(snippet):
    assert export_html.external_references(f"<html>{snippet}</html>")


def test_plain_links_and_css_comments_are_not_resources():
    page = ('<a href="https://arxiv.org/abs/1706.03762">paper</a>'
            "<style>/* see https://github.com/x url(https://x) */ .a{color:red}</style>"
            '<script src="mathjax/MathJax.js"></script>')
    assert export_html.external_references(page) == []


@pytest.mark.parametrize("name", ["notes.txt", "missing.ipynb", "broken.ipynb"])
def test_bad_input_one_line_and_nothing_written(tmp_path, name):
    (tmp_path / "notes.txt").write_text("not a notebook", encoding="utf-8")
    (tmp_path / "broken.ipynb").write_text("{ this is not json", encoding="utf-8")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(TOOL), str(LESSON00), str(tmp_path / name), "--out", str(out)],
                       capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and name in r.stderr, r.stderr
    assert not out.exists()


# ----------------------------------------------------------------------------- browser
def _open_offline(browser, page_path: Path, shot: Path):
    """Open `page_path` from file:// with every other request aborted; returns facts."""
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    attempted, page_errors, console_errors = [], [], []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            attempted.append(r.request.url)
            r.abort()
    page.route("**/*", route)
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
    page.goto(page_path.as_uri())
    page.wait_for_function("document.body.getAttribute('data-mathjax') === 'done'", timeout=90_000)
    page.wait_for_timeout(1000)         # bertviz's scripts draw after load
    facts = page.evaluate(r"""() => ({
        math: document.querySelectorAll('.MathJax, .MathJax_Display, mjx-container').length,
        mathErrors: document.querySelectorAll('.MathJax_Error, merror').length
                    + (document.body.innerText.includes('Math Processing Error') ? 1 : 0),
        rawTex: Array.from(document.querySelectorAll('.jp-MarkdownCell'))
                     .some(c => /\$[^$\n]*\\[a-zA-Z]+[^$\n]*\$/.test(c.innerText)),
        images: Array.from(document.images).map(i => i.complete && i.naturalWidth > 0),
        bertviz: Array.from(document.querySelectorAll('[id^="bertviz-"]'))
                      .map(d => d.querySelectorAll('svg *').length),
        widgetFailure: document.body.innerText.includes('Loading widget'),
    })""")
    page.screenshot(path=str(shot), full_page=True)
    page.close()
    return facts, attempted, page_errors, console_errors


@pytest.mark.slow
@pytest.mark.browser
def test_pages_render_in_chromium_with_the_network_cut_off(tmp_path):
    import browser_support as bs
    from playwright.sync_api import sync_playwright

    lessons = [LESSON00] + [p for p in _special_lessons() if p != LESSON00]
    out = tmp_path / "html"
    pages = export_html.export(lessons, out)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(bs.require_chromium()), headless=True,
                                     args=["--headless", "--no-sandbox", "--disable-gpu",
                                           "--disable-background-networking",
                                           "--disable-component-update", "--disable-sync",
                                           "--no-first-run"])
        try:
            for lesson, page_path in zip(lessons, pages):
                text = page_path.read_text(encoding="utf-8")
                assert export_html.external_references(text) == [], page_path.name
                facts, attempted, page_errors, console_errors = _open_offline(
                    browser, page_path, ARTIFACTS / f"{page_path.stem}.png")
                where = f"{page_path.name} (screenshot in {ARTIFACTS})"
                assert attempted == [], f"{where} tried to fetch: {attempted}"
                assert page_errors == [], f"{where}: {page_errors}"
                assert console_errors == [], f"{where}: {console_errors}"
                assert facts["math"] > 0 and facts["mathErrors"] == 0, (where, facts)
                assert not facts["rawTex"], f"{where}: LaTeX left untypeset"
                nb = nbformat.read(lesson, as_version=4)
                assert len(facts["images"]) >= _count_png(nb) and all(facts["images"]), (where, facts)
                assert not facts["widgetFailure"], where
                n_bertviz = text.count('<div id="bertviz-')
                assert len(facts["bertviz"]) >= n_bertviz
                assert all(n > 0 for n in facts["bertviz"]), f"{where}: a bertviz view drew nothing: {facts}"
        finally:
            browser.close()


def _accessibility_tree(page):
    """Chromium's own accessibility tree (what a screen reader is handed) as (role, name)
    pairs. Playwright's aria_snapshot is computed from the DOM by Playwright and does not
    see what Chromium's layout does to the text (math-auto italics), so it is not used."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    return [(n.get("role", {}).get("value"), str(n.get("name", {}).get("value", "")))
            for n in nodes if not n.get("ignored")]


MATH_ITALIC = re.compile("[\U0001D400-\U0001D7FF]")


@pytest.mark.slow
@pytest.mark.browser
def test_lesson02_page_for_the_keyboard_and_a_screen_reader(tmp_path):
    """Each solution is hidden at load and shown by Enter on its summary; the formulas reach
    the accessibility tree as their words in their sentence (course_lib.mathtext), the typeset
    MathML kept out (inert), and no mathematical-italic code point; the heading with √d_k says
    it in words; code and output are named regions."""
    import browser_support as bs

    page_path = export_html.export([LESSON02], tmp_path / "html")[0]
    n_solutions = _regions(nbformat.read(LESSON02, as_version=4))
    with bs.chromium_browser() as browser:
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:")) else r.abort())
        page.goto(page_path.as_uri())
        page.wait_for_function("document.body.getAttribute('data-mathjax') === 'done'", timeout=90_000)
        summaries = page.locator("details.course-solution > summary")
        assert summaries.count() == n_solutions
        first_line = page.locator("details.course-solution").first.get_by_text("shifted", exact=False).first
        assert not first_line.is_visible()
        for i in range(n_solutions):
            details = page.locator("details.course-solution").nth(i)
            body = details.locator(".highlight")
            assert not body.is_visible(), f"solution {i} shown at load"
            summaries.nth(i).focus()
            page.keyboard.press("Enter")
            assert body.is_visible(), f"solution {i}: Enter on its summary did not show it"
        assert first_line.is_visible()

        tree = _accessibility_tree(page)
        roles = [r for r, _ in tree]
        text = "\n".join(name for _, name in tree)
        formulas = page.evaluate("() => document.querySelectorAll('span[inert] .MathJax, span[inert] .MathJax_Display').length")
        assert formulas >= 50, f"{formulas} formulas typeset inside their labels"
        assert "MathMLMath" not in roles, "a formula's MathML reached the accessibility tree beside its words"
        assert any("Attention of Q, K, V, equals softmax of Q K transpose over square root of d sub k, V" in name
                   for name in text.splitlines()), "the scaled dot-product formula is not in words"
        assert not MATH_ITALIC.search(text), MATH_ITALIC.findall(text)[:10]
        assert ("heading", "3. Why divide by the square root of the key length?") in tree
        # Cells are named groups, each name once (other groups, e.g. in a concept check, aside).
        regions = [name for role, name in tree if role == "group" and re.fullmatch(r"(Code|Output), cell \d+", name)]
        doubled = sorted({name for name in regions if regions.count(name) > 1})
        assert "Code, cell 2" in regions and "Output, cell 3" in regions and not doubled, doubled
        assert ("DisclosureTriangle", "Solution: softmax") in tree or ("button", "Solution: softmax") in tree

        # The checks can fail: formulas no longer inert, with Chromium's own math-auto italics
        # put back, reach the tree as MathML with italic letters.
        page.evaluate("() => document.querySelectorAll('span[inert]').forEach(s => s.removeAttribute('inert'))")
        page.add_style_tag(content=".MJX_Assistive_MathML mi { text-transform: math-auto !important; }")
        page.wait_for_timeout(200)
        planted = _accessibility_tree(page)
        assert "MathMLMath" in [r for r, _ in planted]
        assert MATH_ITALIC.search("\n".join(name for _, name in planted))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "02_attention-solutions-opened.png"))
        page.close()
