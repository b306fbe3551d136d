"""An explorer's words: a heading, a short live caption, its controls' names and values.

JupyterLab shows an `ipywidgets.Image` as an `<img>` with no `alt`, and an ipywidgets
slider's handle (a noUiSlider `div role="slider"`) with no accessible name: its
`description` is a `<label>` tied to nothing (axe-core: `image-alt`,
`aria-input-field-name`). ipywidgets has no trait for either. Read with a real screen
reader (Orca 43 in Chromium, issue 37) an explorer also: spoke its slider's new value only
now and then (the editable readout beside it took Orca's focus when it changed, and was a
tab stop of its own), read a 45-word caption at every settled value, let JupyterLab take a
drop-down's arrow keys (Down moved to the next cell), and moved on when no kernel was
behind it — the picture stayed at the old value and nothing said so.

`FigureCaption` is a small widget of our own (`anywidget`: markup and a few lines of
JavaScript shipped in the Python file, nothing fetched; ipywidgets offers no option for any
of this, and an anywidget is the one piece of our own markup an explorer already has) that
sits under the figure and, on its explorer (the `.course-live` box it sits in):
- puts a heading in front: "Explorer: …" (`title`, an `h4`: every explorer, and only
  explorers, at that level, so a screen reader's next-heading-of-level-4 key goes straight
  to the next one);
- shows a short caption (`said`: what changed, its new value, then the figure's result, at
  most 30 words, `_spoken.py`) with the lesson's symbols (d_ff, √d_k), and has a screen
  reader hear it in words (`spoken`, "d sub ff") from a `role="status"` paragraph, written once
  the value has rested for `SETTLE_MS` — one announcement per settled value; live only
  after the first `QUIET_MS`, so opening a lesson does not read every caption aloud;
- gives the picture the spoken caption as its `alt`, at once; the whole description (`text`)
  sits under it in a disclosure;
- names every control after its label (`aria-label`) and gives each slider handle its
  readout's value as value text (the name said once: "d_k slider 64", not "d_k slider d_k
  64"); the readout itself leaves the Tab order and the
  accessibility tree (the value is spoken from the handle);
- keeps a control's keys with the control: arrows, Home/End, Page Up/Down (and a
  drop-down's letters) do not reach JupyterLab's notebook shortcuts;
- leaves the learner where they were: it never moves the keyboard focus, and it puts each
  drop-down in a `role="application"` box — a `<select>` entering the page (its cell run,
  Run All, a notebook opened) fires "selection changed" on its hidden pop-up menu, and Orca 43
  moved its position there ("query token combo box collapsed, 7: it", measured with lesson 02
  after Run All), a move it ignores in browse mode inside an application (tried, issue 43);
- asks the kernel, when it renders and when a control is focused, whether the explorer is
  live (a message the kernel answers); without an answer within `PING_MS` — not counting
  the time JupyterLab shows the notebook busy, e.g. in Run All, when a kernel answers only
  after its cells — it says so in text and on every control (`aria-describedby`,
  `aria-disabled`): "Not live — run this cell (Shift+Enter) to use this explorer.", and its
  controls do not move (keys and pointer are held) until an answer comes.
A global style (added once) also keeps MathJax's assistive MathML letters plain: Chromium's
`text-transform: math-auto` on a one-letter `<mi>` otherwise puts mathematical italic code
points (U+1D451 …) in the accessibility tree, which espeak-ng spells out as "letter 1 D 4 5
1". The saved notebook keeps the caption's text, so a lesson opened without a kernel, or
exported to HTML, still says what its figure shows.
"""
from __future__ import annotations

import json

import anywidget
import traitlets

from ._spoken import caption as _short_caption
from ._spoken import in_words as _in_words

__all__: list = []

SETTLE_MS = 400
QUIET_MS = 1500
PING_MS = 3000
NOT_LIVE = "Not live — run this cell (Shift+Enter) to use this explorer."

_ESM = r"""
const SETTLE_MS = %(settle)d, QUIET_MS = %(quiet)d, PING_MS = %(ping)d;
const NOT_LIVE = %(not_live)s;
const STYLE = `
mjx-assistive-mml math, mjx-assistive-mml math * { text-transform: none !important; }
.course-live.course-not-live > :not(.course-live-head):not(.widget-image):not(.course-caption-box) { opacity: 0.55; }
.course-live-head h4 { margin: 0.2em 0 0.3em; font-size: 95%%; }
.course-live.widget-vbox { flex-flow: row wrap; align-items: flex-start; column-gap: 1em; }
.course-live.widget-vbox::before { content: ""; order: 1; flex: 0 0 100%%; height: 0; }
.course-live.widget-vbox > .course-live-head { flex: 0 0 100%%; }
.course-live.widget-vbox > .widget-image, .course-live.widget-vbox > .widget-image ~ * { order: 2; }
.course-live.widget-vbox > .widget-image ~ * { flex: 0 0 100%%; }
.course-live-note { margin: 0 0 0.4em; color: #8a1c00; font-size: 90%%; }
.course-live-note:empty { display: none; }
.course-sr-only { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
`;
const MOVES = new Set(["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End", "PageUp", "PageDown"]);
const CONTROL = "[role=slider], select, input, textarea, button";
let serial = 0;

function ensureStyle() {
  if (document.getElementById("course-a11y-style")) return;
  const style = document.createElement("style");
  style.id = "course-a11y-style";
  style.textContent = STYLE;
  document.head.appendChild(style);
}

function labelOf(widget) {
  const label = widget.querySelector(":scope > .widget-label, :scope > label");
  return label ? (label.textContent.trim() || label.title || "").trim() : "";
}

function nameControls(box, live, noteId) {
  // Each control's widget element (not every one carries the "jupyter-widgets" class:
  // a SelectionSlider's does not) holds its <label class="widget-label">.
  const set = (el, name, value) => { if (el.getAttribute(name) !== value) el.setAttribute(name, value); };
  const drop = (el, name) => { if (el.hasAttribute(name)) el.removeAttribute(name); };
  for (const handle of box.querySelectorAll("[role=slider]")) {
    const widget = handle.closest(".widget-slider, .widget-inline-hbox");
    const name = widget ? labelOf(widget) : "";
    if (!name) continue;
    set(handle, "aria-label", name);
    const readout = widget.querySelector(".widget-readout");
    const value = readout ? readout.textContent.trim() : handle.getAttribute("aria-valuenow");
    set(handle, "aria-valuetext", value);     // the name is said once, from aria-label
    if (readout) {               // seen, not a tab stop, not read: the handle says the value
      set(readout, "contenteditable", "false");
      set(readout, "tabindex", "-1");
      set(readout, "aria-hidden", "true");
    }
  }
  // A <select> fires "selection changed" on its hidden pop-up menu each time it enters the
  // page (its cell run, Run All, a notebook opened): Orca 43 then moved its position to the
  // selected option ("query token combo box collapsed, 7: it"), out of the cell the learner
  // was on. Orca ignores that event, in browse mode, inside role="application" (tried: issue 43).
  for (const select of box.querySelectorAll("select")) {
    const wrap = select.closest(".widget-dropdown, .widget-inline-hbox");
    if (wrap && wrap !== box) set(wrap, "role", "application");
  }
  for (const field of box.querySelectorAll("select, input, textarea")) {
    if (field.type === "checkbox" || field.labels?.length || field.getAttribute("aria-label")) continue;
    const widget = field.closest(".widget-inline-hbox");
    const name = widget ? labelOf(widget) : "";
    if (name) field.setAttribute("aria-label", name);
  }
  for (const control of box.querySelectorAll(CONTROL)) {
    if (control.closest(".course-caption-box")) continue;
    if (live === false) { set(control, "aria-disabled", "true"); set(control, "aria-describedby", noteId); }
    else { drop(control, "aria-disabled"); if (control.getAttribute("aria-describedby") === noteId) drop(control, "aria-describedby"); }
  }
}

function render({ model, el }) {
  ensureStyle();
  const id = "course-live-" + (++serial) + "-" + Math.random().toString(36).slice(2, 8);
  const wrap = document.createElement("div");
  wrap.className = "course-caption-box";
  const p = document.createElement("p");
  p.className = "course-caption";
  p.style.cssText = "margin:0.25em 0; font-size:90%%; color:#333; max-width:60em";
  // Shown: the caption with the lesson's symbols (d_ff, √d_k); heard: the same in words
  // (`spoken`). One text change in the heard span per settled value: one announcement.
  const shown = document.createElement("span"), heard = document.createElement("span");
  shown.setAttribute("aria-hidden", "true");
  heard.className = "course-sr-only";
  const words = () => [model.get("said") || model.get("text"), model.get("spoken") || model.get("said") || model.get("text")];
  [shown.textContent, heard.textContent] = words();
  p.append(shown, heard);
  const more = document.createElement("details");
  more.style.cssText = "font-size:90%%; color:#333; max-width:60em";
  const summary = document.createElement("summary");
  summary.textContent = "All the numbers of this figure";
  const full = document.createElement("p");
  full.style.margin = "0.25em 0";
  more.append(summary, full);
  wrap.append(p, more);
  el.appendChild(wrap);
  const head = document.createElement("div");
  head.className = "course-live-head";
  const h = document.createElement("h4");
  const note = document.createElement("p");
  note.className = "course-live-note";
  note.id = id + "-note";
  head.append(h, note);

  let timer = null, quiet = null, observer = null, waiting = null, live = null, lastPing = 0, b = null;
  const box = () => el.closest(".course-live");
  const fill = () => {
    h.textContent = model.get("title") || "Explorer";
    full.textContent = model.get("text");
    more.hidden = !model.get("text") || model.get("text") === shown.textContent;
  };
  const setAlt = () => {
    const img = b?.querySelector(":scope > img.widget-image, :scope > .widget-image img");
    const text = words()[1];
    if (img && text && img.getAttribute("alt") !== text) img.setAttribute("alt", text);
  };
  const tend = () => {
    if (!b) return;
    if (head.parentElement !== b || b.firstElementChild !== head) b.prepend(head);
    b.classList.toggle("course-not-live", live === false);
    const text = live === false ? NOT_LIVE : "";
    if (note.textContent !== text) note.textContent = text;
    nameControls(b, live, note.id);
    setAlt();
  };
  const setLive = (value) => { if (live !== value) { live = value; tend(); } };
  const ping = () => {                 // is a kernel behind this explorer? it answers "pong"
    const now = Date.now();
    if (now - lastPing < 1000) return;
    lastPing = now;
    model.send({ ping: now });
    clearTimeout(waiting);
    waiting = setTimeout(expire, PING_MS);
  };
  // A kernel running cells (Run All) answers only when they are done: while JupyterLab shows
  // this notebook busy, or a cell running or queued ("[*]"), keep waiting instead of saying
  // "not live" of an explorer that is.
  const busy = () => {
    const panel = el.closest(".jp-NotebookPanel");
    if (!panel) return false;
    const indicator = panel.querySelector(".jp-Notebook-ExecutionIndicator");
    return (indicator && indicator.getAttribute("data-status") === "busy") ||
           [...panel.querySelectorAll(".jp-InputPrompt")].some(prompt => prompt.textContent.includes("*"));
  };
  const expire = () => { if (busy()) { waiting = setTimeout(expire, PING_MS); } else { setLive(false); } };
  const onMsg = (msg) => { if (msg && msg.pong !== undefined) { clearTimeout(waiting); setLive(true); } };
  model.on("msg:custom", onMsg);
  const inControl = (e) => e.target instanceof Element && e.target.closest(CONTROL) &&
                           !e.target.closest(".course-caption-box, .course-live-head");
  const onKey = (e) => {               // capture: before the control's own handler
    if (!inControl(e) || e.ctrlKey || e.altKey || e.metaKey) return;
    if (live === false && e.key !== "Tab" && e.key !== "Escape" && e.key !== "Enter" && e.key !== "Shift") {
      e.preventDefault(); e.stopPropagation(); ping(); return;
    }
  };
  const onKeyUp = (e) => {             // bubbling: the control has its key, the notebook not
    if (!inControl(e) || e.ctrlKey || e.altKey || e.metaKey) return;
    const select = e.target.tagName === "SELECT";
    if (MOVES.has(e.key) || (select && (e.key.length === 1 || e.key === "Enter"))) e.stopPropagation();
  };
  const onPointer = (e) => {
    if (live === false && inControl(e)) { e.preventDefault(); e.stopPropagation(); ping(); }
  };
  const onFocus = (e) => { if (inControl(e)) ping(); };
  const follow = () => {
    b = box();
    if (!b) { requestAnimationFrame(follow); return; }   // not in the page yet
    fill(); tend();
    b.addEventListener("keydown", onKey, true);
    b.addEventListener("keydown", onKeyUp, false);
    b.addEventListener("pointerdown", onPointer, true);
    b.addEventListener("mousedown", onPointer, true);
    b.addEventListener("focusin", onFocus);
    observer = new MutationObserver(tend);
    observer.observe(b, { subtree: true, childList: true, characterData: true,
                          attributes: true, attributeFilter: ["aria-valuenow", "src"] });
  };
  follow();
  ping();
  // Live only after a quiet start: opening a lesson renders every explorer at once.
  quiet = setTimeout(() => { p.setAttribute("role", "status"); p.setAttribute("aria-live", "polite"); }, QUIET_MS);
  const changed = () => {
    setAlt(); fill();
    clearTimeout(timer);
    timer = setTimeout(() => {
      const [see, hear] = words();
      shown.textContent = see;
      if (heard.textContent !== hear) heard.textContent = hear;
      fill();
    }, SETTLE_MS);
  };
  model.on("change:said", changed);
  model.on("change:spoken", changed);
  model.on("change:text", changed);
  model.on("change:title", fill);
  return () => {
    clearTimeout(timer); clearTimeout(quiet); clearTimeout(waiting); observer?.disconnect();
    model.off("change:said", changed); model.off("change:spoken", changed); model.off("change:text", changed); model.off("change:title", fill);
    model.off("msg:custom", onMsg);
    if (b) {
      b.removeEventListener("keydown", onKey, true); b.removeEventListener("keydown", onKeyUp, false);
      b.removeEventListener("pointerdown", onPointer, true); b.removeEventListener("mousedown", onPointer, true);
      b.removeEventListener("focusin", onFocus);
    }
    head.remove();
  };
}
export default { render };
""" % {"settle": SETTLE_MS, "quiet": QUIET_MS, "ping": PING_MS, "not_live": json.dumps(NOT_LIVE)}


class FigureCaption(anywidget.AnyWidget):
    """An explorer's words (see the module doc): `title` (its heading), `text` (the
    figure's whole description), `said` (the short caption as shown) and `spoken` (the same in
    words: heard, and the picture's alt). It answers the page's "is anyone there?" (`ping`), so the page can tell a live
    explorer from one whose kernel is gone."""

    _esm = traitlets.Unicode(_ESM).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    text = traitlets.Unicode("").tag(sync=True)
    said = traitlets.Unicode("").tag(sync=True)
    spoken = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.on_msg(self._answer)

    def _answer(self, _widget, content, _buffers):
        if isinstance(content, dict) and "ping" in content:
            self.send({"pong": content["ping"]})

    def show(self, text: str, lead: str = "", result: str = "") -> None:
        """Say the figure's `result` (else the start of its description `text`), led by what
        changed (`lead`, "d_k 128"): `said` as shown (symbols), `spoken` in words."""
        said = _short_caption(text, lead, result)
        with self.hold_sync():
            self.text, self.said, self.spoken = text, said, _in_words(said)

    def __repr__(self):
        return f"[figure: {self.said or self.text}]" if (self.said or self.text) else "[figure]"
