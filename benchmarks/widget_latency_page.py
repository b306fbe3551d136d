"""How one explorer is timed, inside the page (used by widget_latency.py).

For an explorer (a `.widget-interact` box), the arrow keys are pressed on its first
slider's handle:

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
(0: it was drawn ahead), so a burst's settling can be split into drawing its last
picture and what came beyond it.

Each press and burst is repeated `repeats` times (alternating direction, so the slider
stays inside its range); median and worst are reported. Every wait is bounded
(`timeout_s`); a timeout is reported as such. No timing is asserted anywhere.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import browser_support as bs  # noqa: E402

BURST = 6
QUIET_S = 1.0                 # "settled": nothing changed for this long, kernel idle


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
