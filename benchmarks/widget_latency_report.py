"""The Markdown table of a widget_latency.py result (also `--table JSON` for a saved one)."""
from __future__ import annotations

MODEL_LESSONS = {"06", "11"}  # explorers that run a model: first shown / filled in


def _pair(s: dict) -> str:
    if not s or s["median"] is None:
        return "timeout" if s and s["timeouts"] else "–"
    text = f"{s['median']:.0f} / {s['worst']:.0f}"
    return text + (f" ({s['timeouts']} timed out)" if s["timeouts"] else "")


def _load(x) -> str:
    return "?" if not x else f"{x[0]:.2f}"


def markdown(result: dict) -> str:
    lines = ["| lesson | look-ahead | explorer (first slider's label) | one press: median / worst (drawn ahead) | "
             "burst of 6, settled: median / worst | burst: its last drawing · settled beyond it | "
             "model explorers: first shown / filled in | load avg |",
             "|---|---|---|---|---|---|---|---|"]
    for les in result["lessons"]:
        load = f"{_load(les.get('load_before'))} → {_load(les.get('load_after'))}"
        mode = les.get("look_ahead", "on")
        if not les["explorers"]:
            lines.append(f"| {les['lesson']} | {mode} | (none measured: {'; '.join(les['errors'])[:80]}) | | | | | {load} |")
        rows = sorted([(ex["index"], ex) for ex in les["explorers"]]
                      + [(sk["index"], sk) for sk in les.get("skipped", [])], key=lambda r: r[0])
        for _, ex in rows:
            if "why" in ex:
                controls = ", ".join(c for c in ex.get("controls", []) if c) or "?"
                lines.append(f"| {les['lesson']} | {mode} | ({controls}: {ex['why']}) | – | – | – | – | {load} |")
                continue
            model = "–"
            if les["lesson"] in MODEL_LESSONS:
                model = f"{_pair(ex['first_shown'])} · {_pair(ex['filled_in'])}"
            ahead = ex.get("drawn_ahead")
            ahead = f" ({ahead['n']} of {ahead['of']})" if ahead else ""
            beyond = "–"
            if ex.get("burst_drawing") and ex["burst_drawing"]["median"] is not None:
                beyond = f"{_pair(ex['burst_drawing'])} · {_pair(ex['burst_beyond_drawing'])}"
            lines.append(f"| {les['lesson']} | {mode} | {ex['label']} | {_pair(ex['one_press'])}{ahead} | "
                         f"{_pair(ex['burst_settled'])} | {beyond} | {model} | {load} |")
    m = result["machine"]
    lines += ["", f"Times in ms (median / worst of {result['repeats']}), measured in the page "
              f"(performance.now()); Chromium {result.get('chromium', '?')} at "
              f"{result['viewport']['width']}x{result['viewport']['height']}; {m['cpu']}, {m['cores']} cores, torch {m['torch']}; "
              f"load avg (1 min) before → after measuring each lesson. "
              f"Wiring: {', '.join(sorted({ex['wiring'] for les in result['lessons'] for ex in les['explorers']}))}."]
    return "\n".join(lines)
