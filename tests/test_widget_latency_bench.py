"""Smoke test of benchmarks/widget_latency.py: its measuring function runs on one cheap
explorer (lesson 00's temperature explorer) in JupyterLab + headless Chromium and
returns numbers under the keys the report reads. No timing is asserted: the numbers
depend on the machine and its load."""
from __future__ import annotations

import importlib.util
import numbers

import pytest

import browser_support as bs

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LESSON = "00"
NOTEBOOK = "notebooks/00_start_here.ipynb"


def _bench():
    spec = importlib.util.spec_from_file_location("widget_latency", bs.ROOT / "benchmarks" / "widget_latency.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(300)
def test_widget_latency_benchmark_measures_lesson_00():
    bs.require_chromium()
    wl = _bench()
    assert wl.explorer_lessons()[LESSON] == NOTEBOOK
    nb = bs.ROOT / NOTEBOOK
    original = nb.read_bytes()

    result = wl.run({LESSON: NOTEBOOK}, repeats=1, timeout_s=60.0, log=lambda *_: None)

    assert nb.read_bytes() == original, f"{NOTEBOOK} was modified by the benchmark"
    for key in ("machine", "repeats", "burst", "viewport", "lessons", "chromium"):
        assert key in result, key
    assert result["machine"]["cores"] and result["machine"]["cpu"]
    (lesson,) = result["lessons"]
    assert lesson["lesson"] == LESSON and not lesson["errors"], lesson["errors"]
    assert not lesson["page_problems"], lesson["page_problems"]
    for key in ("load_before", "load_after"):
        assert key in lesson
    (ex,) = lesson["explorers"]
    assert ex["label"] == "temperature T"
    assert ex["wiring"] in ("live", "interactive+output")
    assert not ex["errors"], ex["errors"]
    assert len(ex["single"]) == 1 and len(ex["bursts"]) == 1
    assert ex["bursts"][0]["presses_seen"] == wl.BURST
    for key in ("one_press", "first_shown", "filled_in", "burst_settled"):
        summary = ex[key]
        assert set(summary) >= {"median", "worst", "n", "timeouts"}, summary
        assert summary["n"] == 1 and summary["timeouts"] == 0, (key, summary)
        for stat in ("median", "worst"):
            assert isinstance(summary[stat], numbers.Real) and summary[stat] >= 0, (key, summary)

    # In a real kernel the explorer drew the next value while the benchmark waited (1 s of
    # quiet before each press): the press found it drawn; the burst's last value (6 steps
    # away) was drawn after the presses, and the status said how long that took.
    if ex["wiring"] == "live":
        assert ex["drawn_ahead"] == {"n": 1, "of": 1}, ex["single"]
        assert ex["burst_drawing"]["n"] == 1 and ex["burst_beyond_drawing"]["n"] == 1, ex["bursts"]

    table = wl.markdown(result)
    assert table.splitlines()[0].startswith("| lesson | look-ahead | explorer (first slider's label) |")
    assert "| 00 | on | temperature T |" in table and "(1 of 1)" in table
