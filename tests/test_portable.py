"""The lessons' compared outputs are facts about the course, true on every machine.

nbval compares a lesson's fresh outputs with the committed ones; the committed ones come
from one CPU. So (see README, Tests):

- a compared output never prints float rounding noise (lint over the committed lessons);
- one lesson executed on two simulated machines gives identical compared outputs;
- results that legitimately vary (training, sampling, timings, pretrained floats) are
  excluded from the comparison, and the lesson's claim about them sits in a cell tagged
  `claim` — silent when the claim holds, failing when it breaks (shown here on purpose).
"""
import ast
import configparser
import re
from pathlib import Path

import nbformat
import pytest

from portability import OTHER_MACHINE_ENV

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SANITIZE = ROOT / "assets" / "nbval_sanitize.cfg"
# What nbval leaves out of the comparison (its skip_compare list, images included).
NOT_COMPARED = {"image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json"}

# A float in e-notation with an exponent from -4 to -9: the range where float32
# rounding noise lives. A lesson prints such noise as a fact (course_lib.utils.equal_up_to).
NOISE = re.compile(r"\b\d\.\d+e-0?[4-9]\b")


def _is_compared(cell):
    tags = cell.metadata.get("tags", [])
    return cell.cell_type == "code" and "nbval-ignore-output" not in tags and "nbval-skip" not in tags


def _texts(cell):
    # Consecutive stream messages are one text (how a print is split into messages varies).
    streams = {}
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            streams[out.name] = streams.get(out.name, "") + out.text
    yield from streams.values()
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            continue
        elif out.output_type in ("execute_result", "display_data"):
            for mime, value in out.data.items():
                if mime not in NOT_COMPARED:
                    yield value if isinstance(value, str) else str(value)
        elif out.output_type == "error":
            yield f"{out.ename}: {out.evalue}"


def _sanitizers():
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(SANITIZE, encoding="utf-8")
    return [(re.compile(parser[s]["regex"]), parser[s].get("replace", "")) for s in parser.sections()]


def compared_outputs(nb):
    """{code cell number: sanitized text} for every cell nbval compares."""
    subs = _sanitizers()
    result, n = {}, -1
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        n += 1
        if _is_compared(cell):
            text = "\n".join(_texts(cell))
            for pattern, replacement in subs:
                text = pattern.sub(replacement, text)
            result[n] = text
    return result


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_no_compared_output_prints_rounding_noise(lesson):
    nb = nbformat.read(lesson, as_version=4)
    for i, cell in enumerate(nb.cells):
        if not _is_compared(cell):
            continue
        text = "\n".join(_texts(cell))
        noise = NOISE.findall(text)
        assert not noise, (f"{lesson.name} cell {i} prints {noise[:3]} in a compared output: "
                           "print a fact instead (course_lib.utils.equal_up_to) or tag the cell "
                           "nbval-ignore-output and check its claim in a `claim` cell")


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_claim_cells_are_silent_and_compared(lesson):
    """A claim cell runs in every nbval pass and prints nothing while its claim holds."""
    nb = nbformat.read(lesson, as_version=4)
    for i, cell in enumerate(nb.cells):
        if "claim" in cell.metadata.get("tags", []):
            assert _is_compared(cell), f"{lesson.name} cell {i}: a claim cell must not be ignored by nbval"
            assert not cell.get("outputs"), f"{lesson.name} cell {i}: a claim cell printed {cell.outputs}"
            assert "assert " in cell.source, f"{lesson.name} cell {i}: a claim cell checks nothing"


def asserts_without_message(source: str) -> list[int]:
    """Line numbers of `assert`s in `source` that carry no message."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Assert) and node.msg is None]


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_claim_assert_says_what_was_measured(lesson):
    """A claim that fails on someone's machine must say what did not hold, with the numbers."""
    nb = nbformat.read(lesson, as_version=4)
    for i, cell in enumerate(nb.cells):
        if "claim" in cell.metadata.get("tags", []):
            bare = asserts_without_message(cell.source)
            assert not bare, (f"{lesson.name} cell {i}: assert on line(s) {bare} has no message; "
                              "write `assert claim, f\"what should hold: measured ...\"`")


def test_a_bare_claim_assert_is_found():
    assert asserts_without_message("assert a > 3 * b\nassert c, 'msg'\nassert (d and\n  e)\n") == [1, 3]
    assert asserts_without_message("assert x < 1, (f'x was {x}')") == []


def _claim_cell(stem, marker):
    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    cells = [c for c in nb.cells if "claim" in c.metadata.get("tags", []) and marker in c.source]
    assert len(cells) == 1, f"{stem}: expected one claim cell containing {marker!r}, found {len(cells)}"
    return cells[0].source


def test_a_claim_cell_fails_when_its_claim_breaks():
    """Lesson 01's claim, run on planted results: true ones pass, a broken one fails."""
    source = _claim_cell("01_why_not_rnns", 'results["RNN"]')
    ns = [2, 4, 8, 16, 32]
    good = {"ns": ns, "steps_used": {"one attention layer": [30, 35, 40, 45, 52]},
            "results": {"RNN": [1.0, 1.0, 0.98, 0.2, 0.12], "one attention layer": [1.0] * 5}}
    exec(source, dict(good))                      # the claim holds: silent
    # Slightly different numbers, as on another CPU: still holds.
    exec(source, {**good, "results": {"RNN": [0.97, 0.9, 0.6, 0.15, 0.14],
                                      "one attention layer": [1.0, 0.99, 1.0, 0.98, 1.0]}})
    broken = {**good, "results": {"RNN": [1.0, 1.0, 1.0, 1.0, 0.95], "one attention layer": [1.0] * 5}}
    with pytest.raises(AssertionError, match="RNN should be near chance, got 95%"):
        exec(source, broken)


def test_the_extrapolation_claim_fails_when_a_model_extrapolates():
    """Lesson 03: if sinusoidal positions carried over to 2L, the lesson's claim must fail."""
    import torch
    source = _claim_cell("03_positional_encodings", "no model extrapolates")
    L, VOCAB = 16, 16
    kinds = ["none", "sinusoidal", "learned", "rotary"]
    by_length = {"none": torch.tensor([0.9] + [0.2] * 15), "sinusoidal": torch.tensor([1.0] * 8 + [0.7] * 8),
                 "learned": torch.tensor([1.0] * 8 + [0.5] * 8), "rotary": torch.tensor([1.0] * 8 + [0.7] * 8)}
    by_position = {k: torch.full((2 * L,), 0.5) for k in kinds}
    by_position["learned"][:L] = 1.0
    by_position["learned"][L:] = 0.06
    by_position["sinusoidal"][L:] = 0.3
    by_position["rotary"][L - 3:L + 4] = 0.95
    env = {"L": L, "VOCAB": VOCAB, "by_length": by_length, "by_position": by_position,
           "seen": slice(1, L), "new": slice(L, 2 * L), "mid": slice(L - 3, L + 4),
           "inside": {k: float(by_length[k][:L // 2].min()) for k in kinds},
           "summary": {"sinusoidal": (0.7, 0.4, 0.1), "learned": (0.9, 0.4, 0.2), "rotary": (0.9, 0.6, 0.4)}}
    env["at_new"] = {k: float(by_position[k][L:].mean()) for k in kinds}
    env["at_seen"] = {k: float(by_position[k][1:L].mean()) for k in kinds}
    exec(source, dict(env))                        # the pattern of the lesson: silent
    by_length["sinusoidal"] = torch.ones(16)       # sinusoids extrapolate: the claim breaks
    with pytest.raises(AssertionError, match="sinusoidal: the lesson says no model extrapolates"):
        exec(source, dict(env))


@pytest.mark.slow
@pytest.mark.lessons
def test_one_lesson_twice_on_two_machines_gives_the_same_compared_outputs(tmp_path, monkeypatch):
    """Lesson 03 (many numeric facts, training included) executed plainly and on a simulated
    other machine: every output nbval compares must be identical."""
    from lesson_client import LessonClient

    lesson = ROOT / "notebooks" / "03_positional_encodings.ipynb"
    runs = []
    for env in ({"COURSE_THREADS": "1"}, OTHER_MACHINE_ENV):
        for name in OTHER_MACHINE_ENV:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        nb = nbformat.read(lesson, as_version=4)
        LessonClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(lesson.parent)}}).execute()
        runs.append(compared_outputs(nb))
    plain, other = runs
    assert plain.keys() == other.keys()
    differing = {n: (plain[n], other[n]) for n in plain if plain[n] != other[n]}
    assert not differing, f"compared outputs differ between the two machines: {differing}"
