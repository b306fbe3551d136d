"""Latency of every explorer in every lesson, in a real browser.

Starts JupyterLab as a learner does (`python course.py lab`, through
tests/browser_support.py), opens each lesson in headless Chromium at 1366 x 768 with
the network off, runs it (Run > Run All Cells), then, for each explorer (each
`.widget-interact` box) presses the arrow keys on its first slider's handle:

* one press  -> the time until the figure changed (and, for an explorer wired with a
  `.course-live-status`, until the figure of the new value is on screen);
* a burst of 6 quick presses -> the time from the LAST press until the figure shows
  the last value and the kernel is idle.

Timing is taken inside the page: a capturing keydown listener on the explorer stamps
each press with performance.now(), and a MutationObserver on the box stamps every
change of an <img> in it (a new <img>, or a new src) and of the `data-wanted` /
`data-shown` / `data-final` attributes of its `.course-live-status` element.

Two wirings are measured:

* plain `ipywidgets.interactive` + Output widget + matplotlib inline (no
  `.course-live-status`): "updated" = the first <img> change after the press;
  "settled" = the last <img> change after the burst, once the kernel is idle and no
  <img> has changed for 1.0 s;
* the live wiring (`.widget-interact.course-live`: an Image widget and an HTML status
  holding `<span class="course-live-status" data-wanted="N" data-shown="M"
  data-final="0|1">`): "updated" = the figure changed and data-shown reached the
  wanted version of the press; "settled" = data-shown == data-wanted == the final
  wanted version and data-final == "1". Model-driven explorers (lessons 06 and 11)
  also report the first <img> change (something shown) and data-final="1" (filled in).

Live explorers draw ahead while the learner pauses (course_lib/widgets/_look_ahead.py):
their status also carries `data-drawn-ms`, the kernel's time to draw the picture shown
(0: it was drawn ahead). The table says how many single presses found their picture
drawn ahead, and for bursts how long the last picture took to draw and how long the
burst took to settle beyond that drawing. `--look-ahead both` measures every lesson
twice in one run, with drawing ahead off (COURSE_LOOK_AHEAD=0 in the kernel's
environment) and on, so the two can be compared on the same machine at the same time.

Each press and burst is repeated --repeats times (alternating direction, so the
slider stays inside its range); median and worst are reported, with the machine's
load average before and after each lesson (`--quiet-load 1` first waits, after each
lesson's run, until the 1-minute load average is below 1). Every wait is bounded (--timeout); a
timeout is reported as such. No timing is asserted anywhere.

    .venv-instructor/bin/python benchmarks/widget_latency.py [--lessons 02,03] [--repeats 3] \\
        [--look-ahead on|off|both] [--out benchmarks/results/widget_latency.json]

Writes the JSON file and prints a Markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import browser_support as bs  # noqa: E402

VIEWPORT = {"width": 1366, "height": 768}
BURST = 6
QUIET_S = 1.0                 # "settled": nothing changed for this long, kernel idle
QUIET_LOAD_MAX_S = 180.0      # --quiet-load: the longest wait for the load to fall
MODEL_LESSONS = {"06", "11"}  # explorers that run a model: first shown / filled in
RUN_ALL_TIMEOUT_MS = 600_000
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "widget_latency.json"
EXPLORER_CODE = re.compile(r"from course_lib\.widgets import \w+")


# --------------------------------------------------------------------------- the machine
def load_avg() -> list[float] | None:
    """1, 5 and 15-minute load averages (None where the system has none)."""
    if hasattr(os, "getloadavg"):
        try:
            return [round(x, 2) for x in os.getloadavg()]
        except OSError:
            return None
    return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_version(name: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


def git_state() -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  encoding="utf-8", timeout=30).stdout.rstrip("\n")
        except (OSError, subprocess.SubprocessError):
            return ""
    return {"commit": git("rev-parse", "HEAD"),
            "dirty": git("status", "--porcelain", "--", "course_lib", "notebooks").splitlines()}


def machine() -> dict:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "torch": package_version("torch"),
            "ipywidgets": package_version("ipywidgets"), "jupyterlab": package_version("jupyterlab"),
            "playwright": package_version("playwright"), **git_state()}


# --------------------------------------------------------------------------- lessons
def explorer_lessons() -> dict[str, str]:
    """{"00": "notebooks/00_start_here.ipynb", ...}: lessons whose code makes an explorer."""
    out = {}
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                         for c in nb["cells"] if c["cell_type"] == "code")
        if EXPLORER_CODE.search(code):
            out[path.name[:2]] = f"notebooks/{path.name}"
    return out


# --------------------------------------------------------------------------- in the page
# window.__wl[id] = {events: [{t, kind: 'img'|'status', changed, imgs, status}], presses: [{t, key}]}
_INSTALL_JS = """(box, id) => {
  window.__wl = window.__wl || {};
  if (window.__wl[id]) window.__wl[id].observer.disconnect();
  const status = () => {
    const s = box.querySelector('.course-live-status');
    return s ? {wanted: s.getAttribute('data-wanted'), shown: s.getAttribute('data-shown'),
                final: s.getAttribute('data-final'), drawn: s.getAttribute('data-drawn-ms')} : null;
  };
  const srcs = () => [...box.querySelectorAll('img')].map(i => i.getAttribute('src') || '');
  const st = {events: [], presses: [], imgs: srcs(), status: JSON.stringify(status())};
  const hasImg = n => n.nodeType === 1 && (n.tagName === 'IMG' || !!n.querySelector('img'));
  st.observer = new MutationObserver(muts => {
    const t = performance.now();
    let touched = false;
    for (const m of muts) {
      if (m.type === 'attributes' && m.target.tagName === 'IMG') touched = true;
      if (m.type === 'childList' && [...m.addedNodes].some(hasImg)) touched = true;
    }
    const now = srcs();
    const changed = now.length > 0 &&
      (now.length !== st.imgs.length || now.some((s, i) => s !== st.imgs[i]));
    const s = status(), sj = JSON.stringify(s);
    if (touched || changed) {
      st.events.push({t, kind: 'img', changed, imgs: now.length, status: s});
      if (now.length) st.imgs = now;
    }
    if (sj !== st.status) { st.events.push({t, kind: 'status', status: s}); st.status = sj; }
  });
  st.observer.observe(box, {attributes: true, childList: true, subtree: true,
                            attributeFilter: ['src', 'data-wanted', 'data-shown', 'data-final',
                                              'data-drawn-ms']});
  st.onkey = e => { if (e.key === 'ArrowLeft' || e.key === 'ArrowRight')
                      st.presses.push({t: performance.now(), key: e.key}); };
  box.addEventListener('keydown', st.onkey, true);
  window.__wl[id] = st;
  return {live: !!box.querySelector('.course-live-status'), status: status(), imgs: st.imgs.length};
}"""

_STATE_JS = """([id, from]) => {
  const st = window.__wl[id];
  const s = st.events.length ? st.events[st.events.length - 1] : null;
  return {now: performance.now(), n_events: st.events.length, n_presses: st.presses.length,
          last_event: s ? s.t : null, events: st.events.slice(from), presses: st.presses.slice(),
          status: JSON.parse(st.status)};
}"""

_UNINSTALL_JS = """(box, id) => {
  const st = (window.__wl || {})[id];
  if (!st) return;
  st.observer.disconnect();
  box.removeEventListener('keydown', st.onkey, true);
  delete window.__wl[id];
}"""


def _int(x):
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def _ms(x):
    return None if x is None else round(x, 1)


class Explorer:
    """One `.widget-interact` box: its first slider, and the in-page recorder."""

    def __init__(self, page, box, key: str, timeout_s: float):
        self.page, self.box, self.id, self.timeout_s = page, box, key, timeout_s
        self.slider = bs.sliders(box).first
        self.handle = self.slider.locator(".noUi-handle").first
        label = self.slider.locator(".widget-label").first
        self.label = label.evaluate("l => l.textContent.trim()") if label.count() else "(no label)"
        info = box.evaluate(_INSTALL_JS, self.id)
        self.live = info["live"]

    def state(self, since: int = 0) -> dict:
        return self.page.evaluate(_STATE_JS, [self.id, since])

    def aria(self) -> dict:
        get = self.handle.get_attribute
        return {k: float(get(f"aria-value{k}")) for k in ("now", "min", "max")}

    def readout(self) -> str:
        return bs.slider_value(self.slider)

    def close(self) -> None:
        try:
            self.box.evaluate(_UNINSTALL_JS, self.id)
        except Exception:
            pass

    # -- waiting, always bounded
    def wait_quiet(self, quiet_s: float = QUIET_S) -> bool:
        """Kernel idle and nothing changed in the box for ``quiet_s``."""
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            st = self.state(10**9)
            last = st["last_event"]
            if (last is None or st["now"] - last >= quiet_s * 1000) and bs.kernel_status(self.page) == "Idle":
                if self._live_settled(st["status"]):
                    return True
            self.page.wait_for_timeout(100)
        return False

    def _live_settled(self, status) -> bool:
        if not self.live:
            return True
        return bool(status) and status["shown"] == status["wanted"] and status["final"] == "1"

    def press(self, key: str, n: int = 1) -> tuple[int, list[float]]:
        """Press ``key`` ``n`` times on the handle; (event index before, in-page press times)."""
        mark = self.state(10**9)
        self.handle.focus()
        for _ in range(n):
            self.page.keyboard.press(key)
        st = self.state(mark["n_events"])
        times = [p["t"] for p in st["presses"][mark["n_presses"]:]]
        return mark["n_events"], times

    # -- one press
    def one_press(self, key: str) -> dict:
        before = self.state(10**9)["status"]
        wanted0 = _int(before["wanted"]) if before else None
        readout0 = self.readout()
        mark, times = self.press(key)
        res = {"key": key, "from": readout0, "presses_seen": len(times)}
        if not times:
            return {**res, "error": "the key press did not reach the slider"}
        t0 = times[-1]
        deadline = time.monotonic() + self.timeout_s
        first_img = updated = filled = None
        target = None
        while True:
            st = self.state(mark)
            evs = [e for e in st["events"] if e["t"] >= t0]
            status = st["status"]
            if self.live and status and _int(status["wanted"]) is not None and wanted0 is not None \
                    and _int(status["wanted"]) > wanted0:
                target = _int(status["wanted"])
            seen_img = None
            for e in evs:
                if e["kind"] == "img" and seen_img is None:
                    seen_img = e["t"]
                    first_img = first_img or e["t"]
                if not self.live:
                    if seen_img is not None:
                        updated = filled = seen_img
                        break
                    continue
                s = e.get("status")
                if seen_img is None or not s or target is None:
                    continue
                if updated is None and (_int(s["shown"]) or 0) >= target:
                    updated = e["t"]
                if filled is None and (_int(s["shown"]) or 0) >= target and s["final"] == "1":
                    filled = e["t"]
                    res["drawn_ms"] = _int(s.get("drawn"))
            done = updated is not None and filled is not None
            if done or time.monotonic() > deadline:
                break
            self.page.wait_for_timeout(50)
        res.update(to=self.readout(),
                   updated_ms=_ms(updated - t0 if updated else None),
                   first_shown_ms=_ms(first_img - t0 if first_img else None),
                   filled_in_ms=_ms(filled - t0 if filled else None),
                   timeout=not (updated is not None and filled is not None))
        if res["timeout"]:
            res["error"] = f"no updated figure within {self.timeout_s:.0f} s"
        return res

    # -- a burst
    def burst(self, key: str, n: int = BURST) -> dict:
        before = self.state(10**9)["status"]
        wanted0 = _int(before["wanted"]) if before else None
        readout0 = self.readout()
        mark, times = self.press(key, n)
        res = {"key": key, "presses": n, "presses_seen": len(times), "from": readout0}
        if not times:
            return {**res, "error": "the key presses did not reach the slider"}
        t_last = times[-1]
        deadline = time.monotonic() + self.timeout_s
        settled = None
        while time.monotonic() < deadline:
            st = self.state(mark)
            evs = [e for e in st["events"] if e["t"] >= times[0]]
            imgs = [e for e in evs if e["kind"] == "img"]
            quiet = st["last_event"] is not None and st["now"] - st["last_event"] >= QUIET_S * 1000
            if imgs and quiet and bs.kernel_status(self.page) == "Idle":
                status = st["status"]
                if not self.live:
                    settled = imgs[-1]["t"]
                    break
                if self._live_settled(status) and wanted0 is not None and _int(status["wanted"]) > wanted0:
                    final = status["wanted"]
                    for e in evs:       # the first moment the final version was on screen, filled in
                        s = e.get("status")
                        if s and s["wanted"] == final and s["shown"] == final and s["final"] == "1":
                            settled = e["t"]
                            res["drawn_ms"] = _int(s.get("drawn"))
                            break
                    break
            self.page.wait_for_timeout(100)
        st = self.state(mark)
        evs = [e for e in st["events"] if e["t"] >= times[0]]
        res.update(to=self.readout(), status=st["status"],
                   figures_drawn=sum(1 for e in evs if e["kind"] == "img"),
                   press_span_ms=_ms(t_last - times[0]),
                   settled_ms=_ms(settled - t_last if settled is not None else None),
                   timeout=settled is None)
        if settled is None:
            res["error"] = f"not settled within {self.timeout_s:.0f} s"
        return res


def summarise(values: list) -> dict:
    xs = [v for v in values if v is not None]
    return {"median": _ms(statistics.median(xs)) if xs else None, "worst": _ms(max(xs)) if xs else None,
            "n": len(xs), "timeouts": len(values) - len(xs)}


def measure_explorer(page, box, key: str, repeats: int = 3, timeout_s: float = 60.0) -> dict:
    """Press the first slider of ``box`` (a `.widget-interact` locator): ``repeats`` single
    presses (alternating direction) and ``repeats`` bursts of 6. Returns a dict with the
    raw runs and their summaries (times in ms, None where a wait timed out)."""
    box.scroll_into_view_if_needed()
    bs.scroll_cell_to_top(box)
    ex = Explorer(page, box, key, timeout_s)
    out = {"label": ex.label, "wiring": "live" if ex.live else "interactive+output",
           "slider": ex.aria(), "readout": ex.readout(), "single": [], "bursts": [], "errors": []}
    try:
        if not ex.wait_quiet():
            out["errors"].append(f"not quiet within {timeout_s:.0f} s before pressing")
        a = ex.aria()
        away = "ArrowLeft" if a["now"] >= a["max"] else "ArrowRight"
        back = "ArrowRight" if away == "ArrowLeft" else "ArrowLeft"
        for i in range(repeats):
            r = ex.one_press(away if i % 2 == 0 else back)
            out["single"].append(r)
            if not ex.wait_quiet():
                out["errors"].append(f"single #{i}: not quiet within {timeout_s:.0f} s after it")
        for i in range(repeats):
            a = ex.aria()
            # away from the nearer end, so that all 6 presses move the slider
            key_ = "ArrowLeft" if a["max"] - a["now"] < a["now"] - a["min"] else "ArrowRight"
            r = ex.burst(key_)
            out["bursts"].append(r)
            if not ex.wait_quiet():
                out["errors"].append(f"burst #{i}: not quiet within {timeout_s:.0f} s after it")
        for r in out["single"] + out["bursts"]:
            if "error" in r:
                out["errors"].append(r["error"])
        text = box.inner_text()
        for bad in ("Traceback", "Error") + bs.WIDGET_FAILURE_TEXTS:
            if bad in text:
                out["errors"].append(f"the explorer shows {bad!r}: {text[-500:]}")
                break
    finally:
        ex.close()
    out["one_press"] = summarise([r.get("updated_ms") for r in out["single"]])
    out["first_shown"] = summarise([r.get("first_shown_ms") for r in out["single"]])
    out["filled_in"] = summarise([r.get("filled_in_ms") for r in out["single"]])
    out["burst_settled"] = summarise([r.get("settled_ms") for r in out["bursts"]])
    # Live explorers say how long the kernel drew the picture shown (0: drawn ahead while
    # the learner paused): how many presses found theirs drawn, and how long a burst took
    # beyond drawing its last picture (the target: within 150 ms).
    drawn = [r.get("drawn_ms") for r in out["single"] if r.get("drawn_ms") is not None]
    out["drawn_ahead"] = {"n": sum(d == 0 for d in drawn), "of": len(drawn)} if drawn else None
    out["burst_drawing"] = summarise([r.get("drawn_ms") for r in out["bursts"]])
    out["burst_beyond_drawing"] = summarise(
        [r["settled_ms"] - r["drawn_ms"] if r.get("settled_ms") is not None and r.get("drawn_ms") is not None
         else None for r in out["bursts"]])
    return out


def wait_for_load(below: float, at_most_s: float = QUIET_LOAD_MAX_S) -> float:
    """Sleep until the 1-minute load average is below `below` (at most `at_most_s`);
    returns the seconds waited. Where there is no load average (Windows), returns 0."""
    start = time.monotonic()
    while (load_avg() or [0.0])[0] >= below and time.monotonic() - start < at_most_s:
        time.sleep(2)
    return round(time.monotonic() - start, 1)


def measure_lesson(browser, server, lesson: str, notebook: str, repeats: int, timeout_s: float,
                   log=print, quiet_load: float | None = None) -> dict:
    res = {"lesson": lesson, "notebook": notebook, "load_start": load_avg(), "explorers": [],
           "skipped": [], "errors": []}
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    watcher = bs.PageWatcher().attach(page)
    try:
        t = time.monotonic()
        bs.open_notebook(page, server, notebook)
        bs.run_all_cells(page, timeout_ms=RUN_ALL_TIMEOUT_MS)
        res["run_all_s"] = round(time.monotonic() - t, 1)
        bs.wait_widgets_rendered(page, timeout_ms=int(timeout_s * 1000))
        if quiet_load is not None:      # the lesson's own run is load too: let it pass
            res["waited_for_load_s"] = wait_for_load(quiet_load)
        res["load_before"] = load_avg()
        boxes = bs.interact_widgets(page)
        log(f"  {notebook}: ran in {res['run_all_s']} s, {boxes.count()} explorer(s), load {res['load_before']}")
        for k in range(boxes.count()):
            box = boxes.nth(k)
            if not bs.sliders(box).count():     # e.g. lesson 08's translator: a text box only
                res["skipped"].append({"index": k, "why": "no slider (not measured)",
                                       "controls": box.locator(".widget-label").evaluate_all(
                                           "ls => ls.map(l => l.textContent.trim())")})
                log(f"    #{k}: no slider, not measured")
                continue
            r = measure_explorer(page, box, f"{lesson}-{k}", repeats, timeout_s)
            r["index"] = k
            res["explorers"].append(r)
            log(f"    #{k} {r['label']!r} ({r['wiring']}): one press {r['one_press']}, "
                f"burst {r['burst_settled']}" + (f", errors {r['errors']}" if r["errors"] else ""))
    except Exception as e:   # report, go on with the next lesson
        res["errors"].append(f"{type(e).__name__}: {str(e)[:1000]}")
        log(f"  {notebook}: {res['errors'][-1]}")
    finally:
        watcher.closing = True
        res["load_after"] = load_avg()
        res["page_problems"] = watcher.problems()
        context.close()
        server.shutdown_kernels()
    return res


# --------------------------------------------------------------------------- report
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
              f"{VIEWPORT['width']}x{VIEWPORT['height']}; {m['cpu']}, {m['cores']} cores, torch {m['torch']}; "
              f"load avg (1 min) before → after measuring each lesson. "
              f"Wiring: {', '.join(sorted({ex['wiring'] for les in result['lessons'] for ex in les['explorers']}))}."]
    return "\n".join(lines)


def run(lessons: dict[str, str], repeats: int = 3, timeout_s: float = 60.0, log=print,
        look_ahead: str = "on", quiet_load: float | None = None) -> dict:
    """Measure the explorers of ``lessons`` ({"00": "notebooks/00_....ipynb"}), with drawing
    ahead on, off, or both (each lesson measured off, then on). Returns the result."""
    from playwright.sync_api import sync_playwright

    if not (bs.CHROMIUM.is_file() and os.access(bs.CHROMIUM, os.X_OK)):
        raise SystemExit(f"{bs.CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    result = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": machine(), "repeats": repeats, "burst": BURST, "timeout_s": timeout_s,
              "viewport": VIEWPORT, "load_start": load_avg(), "lessons": []}
    modes = ["off", "on"] if look_ahead == "both" else [look_ahead]
    saved = os.environ.get("COURSE_LOOK_AHEAD")
    with sync_playwright() as pw:
        browser = bs.launch_chromium(pw)
        result["chromium"] = browser.version
        try:
            for lesson, notebook in lessons.items():
                for mode in modes:          # the kernels inherit the server's environment
                    os.environ["COURSE_LOOK_AHEAD"] = "1" if mode == "on" else "0"
                    with bs.LabServer() as server:
                        log(f"  look-ahead {mode}:")
                        r = measure_lesson(browser, server, lesson, notebook, repeats, timeout_s, log,
                                           quiet_load)
                    result["lessons"].append(dict(r, look_ahead=mode))
        finally:
            browser.close()
            if saved is None:
                os.environ.pop("COURSE_LOOK_AHEAD", None)
            else:
                os.environ["COURSE_LOOK_AHEAD"] = saved
    result["load_end"] = load_avg()
    result["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return result


def main(argv=None) -> int:
    try:
        from course_lib.console import utf8_output
        utf8_output()
    except ImportError:
        pass
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lessons", help="comma-separated lesson numbers (default: every lesson with an explorer)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds any one wait may take")
    p.add_argument("--look-ahead", choices=["on", "off", "both"], default="on",
                   help="drawing ahead in the explorers (both: each lesson off, then on)")
    p.add_argument("--quiet-load", type=float, metavar="L",
                   help="after running each lesson, wait (at most %.0f s) until the 1-minute load "
                        "average is below L before pressing" % QUIET_LOAD_MAX_S)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--table", type=Path, metavar="JSON", help="only print the table of a saved result")
    args = p.parse_args(argv)
    if args.table:
        print(markdown(json.loads(args.table.read_text(encoding="utf-8"))))
        return 0
    available = explorer_lessons()
    if args.lessons:
        wanted = [x.strip().zfill(2) for x in args.lessons.split(",") if x.strip()]
        unknown = [x for x in wanted if x not in available]
        if unknown:
            p.error(f"no explorer in lesson(s) {', '.join(unknown)}; known: {', '.join(available)}")
        lessons = {x: available[x] for x in wanted}
    else:
        lessons = available
    print(f"measuring {len(lessons)} lesson(s): {', '.join(lessons)}; load {load_avg()}", flush=True)
    result = run(lessons, args.repeats, args.timeout, log=lambda s: print(s, flush=True),
                 look_ahead=args.look_ahead, quiet_load=args.quiet_load)
    table = markdown(result)
    result["table"] = table
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print()
    print(table)
    print(f"\nwritten to {args.out}")
    failed = any(les["errors"] or any(ex["errors"] for ex in les["explorers"]) for les in result["lessons"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
