"""Saved widget views -> what they showed, as plain notebook outputs (the export has no kernel).

nbconvert would embed the saved widget state and load the widget manager from a CDN,
which offline renders nothing. Instead each widget view is replaced by what it showed
when the notebook was executed: the figure(s) of its output area (an explorer's picture
with its caption as `alt`), the values of its controls, and a note that it is
interactive in JupyterLab. tqdm progress bars become a static bar. A view whose output also
carries its own page form (a concept check, course_lib.exercises.concepts.widget: `text/html`
with its inline script, which works without a kernel) keeps that form instead.
"""
from __future__ import annotations

import html
import re

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
STATIC_NOTE = "Interactive in JupyterLab"


def _ref(value):
    return value[len("IPY_MODEL_"):] if isinstance(value, str) and value.startswith("IPY_MODEL_") else None


def _fmt(value, spec=None):
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        try:
            return format(value, spec) if spec else f"{value:.4g}"
        except (ValueError, TypeError):
            return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "–".join(_fmt(v, spec) for v in value)
    return str(value)


_BOXES = {"VBoxModel", "HBoxModel", "BoxModel", "GridBoxModel", "TabModel", "AccordionModel",
          "StackModel"}
_SELECTIONS = {"DropdownModel", "SelectionSliderModel", "ToggleButtonsModel", "RadioButtonsModel",
               "SelectModel", "SelectionRangeSliderModel", "SelectMultipleModel"}
_VALUE_CONTROLS = {"IntSliderModel", "FloatSliderModel", "FloatLogSliderModel", "IntRangeSliderModel",
                   "FloatRangeSliderModel", "CheckboxModel", "ToggleButtonModel", "IntTextModel",
                   "FloatTextModel", "BoundedIntTextModel", "BoundedFloatTextModel", "TextModel",
                   "TextareaModel", "ComboboxModel", "ColorPickerModel", "DatePickerModel", "PlayModel"}


class StaticWidget:
    """One saved widget view -> plain notebook outputs (HTML note + the output area's outputs)."""

    def __init__(self, state: dict):
        self.state = state

    def model(self, model_id):
        m = self.state.get(model_id)
        return (m.get("model_name", ""), m.get("state", {})) if m else (None, {})

    def buffer(self, model_id, key):
        """A saved binary value (an Image's picture) as base64 text, or None."""
        for b in (self.state.get(model_id) or {}).get("buffers", []):
            if list(b.get("path", [])) == [key] and b.get("encoding") == "base64":
                return b.get("data")
        return None

    def convert(self, model_id: str) -> list:
        self.controls, self.items, self.alt, self.title = [], [], None, ""
        self._walk(model_id, depth=0)
        outputs = []
        if self.title:                  # an explorer's heading, as in JupyterLab (an h4: _caption.py)
            outputs.append(_html_output(f'<h4 class="course-explorer-heading">{html.escape(self.title)}</h4>'))
        if self.controls:
            values = ", ".join(f"<b>{html.escape(label)}</b> = {html.escape(value)}"
                               for label, value in self.controls)
            outputs.append(_html_output(
                f'<div class="course-static-widget course-static-widget-note">{STATIC_NOTE}: '
                f"this page shows the view saved when the lesson was run, with {values}. "
                "Open the notebook in JupyterLab to move the controls.</div>"))
        fragments = []
        for kind, item in self.items:
            if kind == "html":
                fragments.append(item)
                continue
            if fragments:
                outputs.append(_html_output("".join(fragments)))
                fragments = []
            outputs.append(item)
        if fragments:
            outputs.append(_html_output("".join(fragments)))
        if not outputs:
            outputs.append(_html_output(f'<div class="course-static-widget course-static-widget-note">'
                                        f"{STATIC_NOTE}: run the notebook to see this widget.</div>"))
        return outputs

    def _walk(self, model_id, depth):
        name, st = self.model(model_id)
        if name is None or depth > 20:
            return
        if name in _BOXES:
            children = [c for c in (_ref(x) for x in st.get("children", [])) if c]
            captions = [self.model(c)[1].get("text") for c in children if self.model(c)[0] == "AnyModel"]
            if any(captions):           # an explorer: its picture's alt is its caption
                self.alt = next(c for c in captions if c)
            if name == "HBoxModel" and not any(self._has_output(c) for c in children):
                self.items.append(("html", self._inline_row(children)))
                return
            for c in children:
                self._walk(c, depth + 1)
        elif name == "OutputModel":
            for out in st.get("outputs", []):
                self.items.append(("output", nbformat.from_dict(out)))
        elif name == "ImageModel":             # an explorer's figure (course_lib/widgets/_wiring.py)
            data, fmt = self.buffer(model_id, "value"), st.get("format", "png")
            if data and fmt in ("png", "jpeg", "gif"):
                shown = {f"image/{fmt}": data, "text/plain": "<figure>"}
                if self.alt:                # nbconvert writes its placeholder on an <img> without alt
                    shown["text/html"] = (f'<img src="data:image/{fmt};base64,{data}" '
                                          f'alt="{html.escape(self.alt, quote=True)}"/>')
                self.items.append(("output", nbformat.v4.new_output("display_data", data=shown)))
        elif name == "AnyModel" and st.get("text"):     # an explorer's caption (widgets/_caption.py)
            self.title = self.title or st.get("title") or "Explorer"
            self.items.append(("html", f'<p class="course-caption">{html.escape(st["text"])}</p>'))
        elif name in ("HTMLModel", "HTMLMathModel", "LabelModel"):
            frag = self._leaf_html(name, st)
            if frag:
                self.items.append(("html", f"<div>{frag}</div>"))
        elif name in ("FloatProgressModel", "IntProgressModel"):
            self.items.append(("html", f'<div class="course-static-progress">{self._leaf_html(name, st)}</div>'))
        elif name in _SELECTIONS or name in _VALUE_CONTROLS:
            label = re.sub(r"<[^>]+>", "", st.get("description") or "") or "value"
            self.controls.append((label, self._value(name, st)))

    def _has_output(self, model_id, depth=0):
        name, st = self.model(model_id)
        if name in ("OutputModel", "ImageModel"):
            return True
        return depth < 20 and any(self._has_output(c, depth + 1)
                                  for c in (_ref(x) for x in st.get("children", [])) if c)

    def _inline_row(self, children):
        parts = []
        for c in children:
            name, st = self.model(c)
            frag = self._leaf_html(name, st) if name else ""
            if frag:
                parts.append(frag)
            elif name in _SELECTIONS or name in _VALUE_CONTROLS:
                label = re.sub(r"<[^>]+>", "", st.get("description") or "") or "value"
                self.controls.append((label, self._value(name, st)))
        return f'<div class="course-static-progress">{" ".join(parts)}</div>'

    @staticmethod
    def _leaf_html(name, st):
        if name in ("HTMLModel", "HTMLMathModel"):
            return st.get("value") or ""
        if name == "LabelModel":
            return html.escape(st.get("value") or "")
        if name in ("FloatProgressModel", "IntProgressModel"):
            lo, hi, v = st.get("min", 0), st.get("max", 100), st.get("value", 0)
            return f'<progress value="{v - lo}" max="{hi - lo}"></progress>'
        return ""

    @staticmethod
    def _value(name, st):
        if name in _SELECTIONS:
            labels = st.get("_options_labels", [])
            idx = st.get("index")
            if isinstance(idx, int) and 0 <= idx < len(labels):
                return labels[idx]
            if isinstance(idx, (list, tuple)):
                return ", ".join(labels[i] for i in idx if 0 <= i < len(labels))
            return "—"
        value = st.get("value")
        if name in ("TextModel", "TextareaModel", "ComboboxModel") and isinstance(value, str) and len(value) > 60:
            value = value[:57] + "…"
        return _fmt(value, st.get("readout_format"))


def _html_output(fragment: str):
    return nbformat.v4.new_output("display_data", data={"text/html": fragment})


def replace_widgets(nb) -> int:
    """Replace every widget view output of `nb` by its static rendering; drop the state.

    Returns the number of views replaced.
    """
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    static = StaticWidget(state)
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        new = []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                new.append(out)
                continue
            if "course-concept" in out.get("data", {}).get("text/html", ""):
                data = {k: v for k, v in out["data"].items() if k != WIDGET_VIEW}
                new.append(nbformat.v4.new_output("display_data", data=data))
                count += 1
                continue
            new.extend(static.convert(view.get("model_id", "")))
            count += 1
        cell.outputs = new
    nb.metadata.pop("widgets", None)
    return count
