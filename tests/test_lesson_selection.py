"""`pytest --lesson NN` (what `course.py test --lesson NN` runs) keeps exactly the tests that
prove lesson NN, and every test belongs to one lesson or to the shared rest (tests/conftest.py
says whose a test is). Listed here with --collect-only for lessons 02 and 05 together, every
test's owner written beside it (--lesson-map)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow          # it collects the whole suite: 20 s here, more on a busy machine


def _collect(*args):
    """The node ids pytest would run with `args` (collected only, in a process of its own)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          *args], cwd=ROOT, capture_output=True, timeout=900)
    text = out.stdout.decode("utf-8", "replace")
    assert out.returncode == 0, text[-3000:] + out.stderr.decode("utf-8", "replace")[-2000:]
    return [line.strip() for line in text.splitlines() if "::" in line]


@pytest.fixture(scope="module")
def chosen(tmp_path_factory):
    """(node ids selected by --lesson 2,05, {node id: its lesson, "" for the shared rest},
    the node ids marked browser)."""
    owners = tmp_path_factory.mktemp("lessons") / "owners.tsv"
    selected = _collect("tests", "notebooks", "--lesson", "2,05", "--lesson-map", str(owners))
    rows = [line.split("\t") for line in owners.read_text(encoding="utf-8").splitlines()]
    owner = {node: lesson for node, lesson, _ in rows}
    assert len(owner) == len(rows), "a test listed twice"
    return selected, owner, {node for node, _, mark in rows if mark == "browser"}


def _of(owner, lesson):
    return {node for node, whose in owner.items() if whose == lesson}


def test_two_lessons_select_their_tests_and_nothing_else(chosen):
    selected, owner, _ = chosen
    assert sorted(selected) == sorted(_of(owner, "02") | _of(owner, "05"))
    # The longest first (the two workers steal work; a long test started last runs alone).
    assert selected[:2] == ["tests/test_screen_reader_exercises.py::test_lesson_02_exercises_and_export_with_orca",
                            "tests/test_screen_reader.py::test_lesson_02_with_orca"], selected[:4]
    assert selected[2:4] == ["tests/test_browser.py::test_lesson_in_browser[02_attention]",
                             "tests/test_browser.py::test_lesson_in_browser[05_transformer_block]"], selected[:4]
    lesson02, lesson05 = _of(owner, "02"), _of(owner, "05")
    # nbval of each lesson's notebook, and of no other.
    notebooks = {node.split("::")[0] for node in selected if node.startswith("notebooks/")}
    assert notebooks == {"notebooks/02_attention.ipynb", "notebooks/05_transformer_block.ipynb"}
    assert all(n.startswith("notebooks/02_") for n in lesson02 if n.startswith("notebooks/"))
    # The student version in the browser, the keyboard route, the screen reader (lesson 02's).
    for node in ("tests/test_browser.py::test_lesson_in_browser[02_attention]",
                 "tests/test_keyboard_reach.py::test_first_explorer_is_reached_from_page_load[02_attention]",
                 "tests/test_screen_reader.py::test_lesson_02_with_orca",
                 "tests/test_screen_reader_exercises.py::test_lesson_02_exercises_and_export_with_orca"):
        assert owner[node] == "02", node
    assert owner["tests/test_browser.py::test_lesson_in_browser[05_transformer_block]"] == "05"
    assert owner["tests/test_browser.py::test_lesson_in_browser[11_a_real_llm]"] == "11"
    # Checkers: the lesson's own file, and the shared checker tests of its exercises.
    assert {n for n in owner if n.startswith("tests/test_lesson02_exercises.py")} <= lesson02
    assert {n for n in owner if n.startswith("tests/test_lesson05_exercises.py")} <= lesson05
    assert "tests/test_exercises.py::test_reference_is_accepted[softmax]" in lesson02
    assert "tests/test_exercises.py::test_reference_is_accepted[layer_norm]" in lesson05
    assert "tests/test_exercises.py::test_reference_is_accepted[causal_mask]" not in selected
    # Figures and explorers: the lesson's widget tests, and the shared figure tests of its figures.
    assert {n for n in owner if n.startswith("tests/test_widgets_attention.py")} <= lesson02
    assert {n for n in owner if n.startswith("tests/test_widgets_blocks.py")} <= lesson05
    assert "tests/test_figure_descriptions.py::test_every_figure_is_described_from_its_data[scaling_figure]" in lesson02
    assert "tests/test_figure_descriptions.py::test_every_figure_is_described_from_its_data[fit_plot]" in lesson05
    # The library, the set-up program and the hub are the shared rest.
    for file in ("test_attention.py", "test_layers.py", "test_setup.py", "test_hub.py", "test_lesson_selection.py"):
        nodes = [n for n in owner if n.startswith(f"tests/{file}::")]
        assert nodes and not any(owner[n] for n in nodes), file


def test_every_test_that_names_a_lesson_belongs_to_that_lesson(chosen):
    """A test about one lesson (its notebook's cells, a parameter naming its notebook, a file of
    its checkers or explorers) never falls into the shared rest, nor into another lesson."""
    _, owner, _ = chosen
    lessons = sorted({p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")})
    wrong = []
    for node, whose in owner.items():
        named = (re.match(r"notebooks/(\d\d)_", node) or re.search(r"\[(\d\d)_[a-z]", node)
                 or re.match(r"tests/test_lesson(\d\d)_", node))
        if named and named.group(1) != whose:
            wrong.append(f"{node}: {whose or 'shared'}, not {named.group(1)}")
        # Explorers' files of one lesson each (not the wiring's, nor induction's: 09 and 10).
        if re.match(r"tests/test_widgets_(?!live|look_ahead|spoken|induction)", node) and whose not in lessons:
            wrong.append(f"{node}: an explorer's test in the shared rest")
    assert not wrong, "\n".join(wrong[:30])


def test_a_lessons_browser_pass_misses_no_browser_test(chosen):
    """`course.py test --lesson` collects its browser pass from course.browser_test_files()
    only (the files whose text names the browser marker): every browser test is in them."""
    sys.path.insert(0, str(ROOT))
    import course
    _, _, browser = chosen
    assert len(browser) > 40 and "tests/test_screen_reader.py::test_lesson_02_with_orca" in browser
    assert {node.split("::")[0] for node in browser} == set(course.browser_test_files())


def test_one_lesson_alone_and_an_unknown_lesson():
    files = ["tests/test_widgets_attention.py", "tests/test_widgets_blocks.py", "tests/test_lesson05_exercises.py"]
    selected = _collect(*files, "--lesson", "05")
    assert selected and all(not n.startswith("tests/test_widgets_attention.py") for n in selected)
    assert {n.split("::")[0] for n in selected} == set(files[1:])
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          files[0], "--lesson", "13"], cwd=ROOT, capture_output=True, timeout=300)
    text = out.stderr.decode("utf-8", "replace") + out.stdout.decode("utf-8", "replace")
    assert out.returncode == 4 and "--lesson 13: no such lesson 13" in text, text[-2000:]
