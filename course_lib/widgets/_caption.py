"""An explorer's words: its figure's description as a live text, and names for its controls.

JupyterLab shows an `ipywidgets.Image` as an `<img>` with no `alt`, and an ipywidgets
slider's handle (a noUiSlider `div role="slider"`) with no accessible name: its
`description` is a `<label>` tied to nothing (axe-core: `image-alt`,
`aria-input-field-name`). ipywidgets has no trait for either, so a screen reader heard
"image" and "slider" and nothing when the figure changed.

`FigureCaption` is a small widget of our own (`anywidget`: markup and a few lines of
JavaScript shipped in the Python file, nothing fetched) that sits under the figure and:
- shows the figure's description (computed from its data, `course_lib.viz.describe`) in
  a `role="status"` `aria-live="polite"` paragraph, written once the value has rested for
  `SETTLE_MS` — one announcement per settled value, not one per frame drawn on the way;
- gives the explorer's picture that text as its `alt`, at once;
- names every control of its explorer after its label (`aria-label`) and gives each
  slider handle a value text "name value" from the slider's readout, kept up to date as
  ipywidgets redraws them.
The saved notebook keeps the caption's text, so a lesson opened without a kernel, or
exported to HTML, still says what its figure shows.
"""
from __future__ import annotations

import anywidget
import traitlets

__all__: list = []

SETTLE_MS = 400

_ESM = """
const SETTLE_MS = %(settle)d;

function labelOf(widget) {
  const label = widget.querySelector(":scope > .widget-label, :scope > label");
  return label ? (label.textContent.trim() || label.title || "").trim() : "";
}

function nameControls(box) {
  // Each control's widget element (not every one carries the "jupyter-widgets" class:
  // a SelectionSlider's does not) holds its <label class="widget-label">.
  for (const handle of box.querySelectorAll("[role=slider]")) {
    const widget = handle.closest(".widget-slider, .widget-inline-hbox");
    const name = widget ? labelOf(widget) : "";
    if (!name) continue;
    if (handle.getAttribute("aria-label") !== name) handle.setAttribute("aria-label", name);
    const readout = widget.querySelector(".widget-readout");
    const value = readout ? readout.textContent.trim() : handle.getAttribute("aria-valuenow");
    const text = name + " " + value;
    if (handle.getAttribute("aria-valuetext") !== text) handle.setAttribute("aria-valuetext", text);
  }
  for (const field of box.querySelectorAll("select, input, textarea")) {
    if (field.type === "checkbox" || field.labels?.length || field.getAttribute("aria-label")) continue;
    const widget = field.closest(".widget-inline-hbox");
    const name = widget ? labelOf(widget) : "";
    if (name) field.setAttribute("aria-label", name);
  }
}

function render({ model, el }) {
  const p = document.createElement("p");
  p.className = "course-caption";
  p.setAttribute("role", "status");
  p.setAttribute("aria-live", "polite");
  p.style.cssText = "margin:0.25em 0; font-size:90%%; color:#333; max-width:60em";
  p.textContent = model.get("text");
  el.appendChild(p);
  let timer = null, observer = null;
  const box = () => el.closest(".course-live");
  const setAlt = () => {
    const img = box()?.querySelector(":scope > img.widget-image, :scope > .widget-image img");
    if (img && model.get("text")) img.setAttribute("alt", model.get("text"));
  };
  const follow = () => {
    const b = box();
    if (!b) { requestAnimationFrame(follow); return; }   // not in the page yet
    nameControls(b); setAlt();
    observer = new MutationObserver(() => { nameControls(b); setAlt(); });
    observer.observe(b, { subtree: true, childList: true, characterData: true,
                          attributes: true, attributeFilter: ["aria-valuenow", "src"] });
  };
  follow();
  const changed = () => {
    setAlt();
    clearTimeout(timer);
    timer = setTimeout(() => { p.textContent = model.get("text"); }, SETTLE_MS);
  };
  model.on("change:text", changed);
  return () => { clearTimeout(timer); observer?.disconnect(); model.off("change:text", changed); };
}
export default { render };
""" % {"settle": SETTLE_MS}


class FigureCaption(anywidget.AnyWidget):
    """The figure's description under an explorer's picture (see the module doc)."""

    _esm = traitlets.Unicode(_ESM).tag(sync=True)
    text = traitlets.Unicode("").tag(sync=True)

    def __repr__(self):
        return f"[figure: {self.text}]" if self.text else "[figure]"
