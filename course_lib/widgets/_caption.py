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
- shows a short caption (`said`: what changed, its new value, the start of the figure's
  description, symbols in words, `_spoken.py`) in a `role="status"` paragraph, written once
  the value has rested for `SETTLE_MS` — one announcement per settled value; live only
  after the first `QUIET_MS`, so opening a lesson does not read every caption aloud;
- gives the picture that caption as its `alt`, at once; the whole description (`text`)
  sits under it in a disclosure;
- names every control after its label (`aria-label`) and gives each slider handle a value
  text "name value" from its readout; the readout itself leaves the Tab order and the
  accessibility tree (the value is spoken from the handle);
- keeps a control's keys with the control: arrows, Home/End, Page Up/Down (and a
  drop-down's letters) do not reach JupyterLab's notebook shortcuts;
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
    set(handle, "aria-valuetext", name + " " + value);
    if (readout) {               // seen, not a tab stop, not read: the handle says the value
      set(readout, "contenteditable", "false");
      set(readout, "tabindex", "-1");
      set(readout, "aria-hidden", "true");
    }
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
  p.textContent = model.get("said") || model.get("text");
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
    more.hidden = !model.get("text") || model.get("text") === p.textContent;
  };
  const setAlt = () => {
    const img = b?.querySelector(":scope > img.widget-image, :scope > .widget-image img");
    const text = model.get("said") || model.get("text");
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
    timer = setTimeout(() => { p.textContent = model.get("said") || model.get("text"); fill(); }, SETTLE_MS);
  };
  model.on("change:said", changed);
  model.on("change:text", changed);
  model.on("change:title", fill);
  return () => {
    clearTimeout(timer); clearTimeout(quiet); clearTimeout(waiting); observer?.disconnect();
    model.off("change:said", changed); model.off("change:text", changed); model.off("change:title", fill);
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
    figure's whole description), `said` (the short caption: spoken, shown, the picture's
    alt). It answers the page's "is anyone there?" (`ping`), so the page can tell a live
    explorer from one whose kernel is gone."""

    _esm = traitlets.Unicode(_ESM).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    text = traitlets.Unicode("").tag(sync=True)
    said = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.on_msg(self._answer)

    def _answer(self, _widget, content, _buffers):
        if isinstance(content, dict) and "ping" in content:
            self.send({"pong": content["ping"]})

    def show(self, text: str, lead: str = "") -> None:
        """Say `text` (the figure's description), led by what changed (`lead`, "d_k 128")."""
        said = _short_caption(text, lead)
        with self.hold_sync():
            self.text, self.said = text, said

    def __repr__(self):
        return f"[figure: {self.said or self.text}]" if (self.said or self.text) else "[figure]"
