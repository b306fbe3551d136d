"""A concept check on the page: the question, its options as one radio group (or a labelled
number field), and the feedback, spoken when it appears.

One piece of markup (`markup`) serves three places:

- **JupyterLab with a kernel** (the learner's lessons, the hub, Colab): `ConceptCheck`, an
  anywidget (markup and JavaScript shipped in this file, nothing fetched; anywidget also
  turns on Colab's widget manager). Choosing an option sends it to Python, which judges it
  (`Question.judge`), records it (`records.record_answer`) and sends the verdict back.
- **JupyterLab without a kernel behind the cell** (a lesson opened, its cell not run; the
  widget drawn from the saved state): the page judges from the data embedded with the widget
  and says that the answer was not recorded (run the cell to record). It knows by asking the
  kernel when it renders (a "ping" the Python side answers), as the explorers' captions do.
- **The HTML export** (no kernel, no widget manager): the output's `text/html` form
  (`static_html`) — the same markup, its data and a small inline script that does the same
  judging in the page.

Keyboard: the options are one radio group (`role="radiogroup"`, one Tab stop); the arrow keys,
Home and End move between options *without* choosing (so passing over an option never records
it), Space or Enter chooses; the keys stay with the group (JupyterLab's notebook shortcuts do
not see them). A number question is a text field labelled "Your answer (a number)" with a
Check button; Enter checks. The feedback sits in a polite live region (`role="status"`) that is
in the page from the start, so a screen reader announces it when it appears; it leads with
words — "Right —" or "Not quite —" — and the two states differ in line style too, never in
colour alone. Math is drawn by `mathtext` (no MathJax), with its words for screen readers.

The `text/plain` and `text/html` forms are the same on every run (no random ids: the page gives
each view its own ids when it mounts), so nbval compares them; the inline code between
`<!--course-concept-code-->` markers is left out of the comparison by the sanitizer
(assets/nbval_sanitize.cfg), so a change of script does not mean re-executing every lesson.
"""
from __future__ import annotations

import html
import json
import re

import anywidget
import traitlets

from course_lib.mathtext import markdown_html, plain_text
from .questions import LETTERS, NUMBER, PREDICT, Question

__all__: list = []

PING_MS = 3000        # no answer from a kernel within this (and not busy): judged in the page
NOT_RECORDED_LAB = "Not recorded — run this cell (Shift+Enter) to record your answers."
NOT_RECORDED_PAGE = ("Not recorded — this page has no Python behind it; open the lesson in "
                     "JupyterLab and run the cell to record your answers.")
NOT_A_NUMBER = "Type a number, e.g. 16 or 0.5."
CODE_START, CODE_END = "<!--course-concept-code-->", "<!--/course-concept-code-->"

CSS = """
.course-concept { border-left: 4px solid #1a4fa0; padding: 0.3em 0.8em; margin: 0.4em 0; max-width: 60em; }
.course-concept-kicker { margin: 0 0 0.2em; font-size: 90%; }
.course-concept-text p { margin: 0.2em 0; }
.course-concept-options { display: flex; flex-direction: column; gap: 0.3em; margin: 0.5em 0; }
.course-concept-option { border: 1px solid #767676; border-radius: 4px; padding: 0.25em 0.6em 0.25em 2em;
                         cursor: pointer; position: relative; }
.course-concept-option::before { content: "\\25CB"; position: absolute; left: 0.6em; }
.course-concept-option[aria-checked="true"] { border: 2px solid #1a4fa0; }
.course-concept-option[aria-checked="true"]::before { content: "\\25CF"; }
.course-concept-option:hover { border-color: #1a4fa0; }
.course-concept-option:focus-visible, .course-concept input:focus-visible,
.course-concept button:focus-visible { outline: 3px solid #1a4fa0; outline-offset: 2px; }
.course-concept-number-row { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5em; margin: 0.5em 0; }
.course-concept input.course-concept-number { width: 8em; padding: 0.2em 0.4em; border: 1px solid #767676; }
.course-concept button.course-concept-check { padding: 0.2em 0.9em; border: 1px solid #1a4fa0; border-radius: 4px;
                                              background: #1a4fa0; color: #ffffff; cursor: pointer; }
.course-concept-feedback p { margin: 0.2em 0; }
.course-concept-right .course-concept-feedback { border-left: 4px solid #1e6b1e; padding-left: 0.5em; }
.course-concept-wrong .course-concept-feedback { border-left: 4px dashed #a4161a; padding-left: 0.5em; }
.course-concept-note { font-size: 90%; font-style: italic; }
.course-math { white-space: nowrap; }
.course-sr { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden;
             clip: rect(0, 0, 0, 0); white-space: nowrap; border: 0; }
.course-math-frac { display: inline-flex; flex-direction: column; vertical-align: middle; text-align: center;
                    font-size: 90%; line-height: 1.1; }
.course-math-frac > span + span { border-top: 1px solid currentColor; }
.course-math-root { border-top: 1px solid currentColor; }
"""

# mount(root, data, channel): wires one question's markup. channel is null in the export;
# in the widget it has live() (true / false / null: not known yet), busy() and send(answer).
_MOUNT = r"""function (root, data, channel, notes) {
  var rand = Math.random().toString(36).slice(2, 8), ids = {};
  root.querySelectorAll("[id]").forEach(function (n) { ids[n.id] = n.id + "-" + rand; n.id = ids[n.id]; });
  root.querySelectorAll("[aria-labelledby], [aria-describedby], label[for]").forEach(function (n) {
    ["aria-labelledby", "aria-describedby", "for"].forEach(function (a) {
      var v = n.getAttribute(a);
      if (v) n.setAttribute(a, v.split(" ").map(function (x) { return ids[x] || x; }).join(" "));
    });
  });
  var status = root.querySelector(".course-concept-feedback");
  var radios = Array.prototype.slice.call(root.querySelectorAll("[role=radio]"));
  var input = root.querySelector("input.course-concept-number");
  var button = root.querySelector("button.course-concept-check");
  var waiting = null, shown = 0;
  function show(right, feedback, note) {
    var mine = ++shown;
    status.textContent = "";            // emptied, then filled: the same words twice are spoken twice
    setTimeout(function () {
      if (mine !== shown) return;
      status.innerHTML = "<p><strong>" + (right ? "Right \u2014" : "Not quite \u2014") + "</strong> " +
        feedback + "</p>" + (note ? '<p class="course-concept-note">' + note + "</p>" : "");
      root.classList.toggle("course-concept-right", !!right);
      root.classList.toggle("course-concept-wrong", !right);
    }, 80);
  }
  function local(answer) {
    if (data.kind === "number") {
      var text = String(answer).replace(",", ".").trim(), value = Number(text);
      if (text === "" || isNaN(value)) return { right: false, html: data.not_a_number };
      if (Math.abs(value - data.answer) <= data.tolerance) return { right: true, html: data.right };
      return { right: false, html: value < data.answer ? data.too_low : data.too_high };
    }
    var o = data.options[answer];
    return { right: o.right, html: o.html };
  }
  function judgeHere(answer) {
    var v = local(answer);
    show(v.right, v.html, channel ? notes.lab : notes.page);
  }
  function choose(answer) {
    clearTimeout(waiting);
    if (!channel || channel.live() === false) { judgeHere(answer); return; }
    channel.send(answer);
    waiting = setTimeout(function expire() {
      if (channel.busy()) { waiting = setTimeout(expire, notes.wait); return; }
      judgeHere(answer);
    }, notes.wait);
  }
  function check(r) {
    radios.forEach(function (x) {
      x.setAttribute("aria-checked", x === r ? "true" : "false");
      x.tabIndex = x === r ? 0 : -1;
    });
  }
  function focusAt(i) {
    var r = radios[(i + radios.length) % radios.length];
    radios.forEach(function (x) { x.tabIndex = x === r ? 0 : -1; });
    r.focus();
  }
  radios.forEach(function (r, i) {
    r.addEventListener("click", function () { check(r); r.focus(); choose(r.getAttribute("data-key")); });
    r.addEventListener("keydown", function (e) {
      if (e.ctrlKey || e.altKey || e.metaKey || (e.shiftKey && e.key === "Enter")) return;
      if (e.key === "ArrowDown" || e.key === "ArrowRight") focusAt(i + 1);
      else if (e.key === "ArrowUp" || e.key === "ArrowLeft") focusAt(i - 1);
      else if (e.key === "Home") focusAt(0);
      else if (e.key === "End") focusAt(radios.length - 1);
      else if (e.key === " " || e.key === "Enter") { check(r); choose(r.getAttribute("data-key")); }
      else return;
      e.preventDefault();
      e.stopPropagation();            // the notebook's shortcuts (arrows, Enter) stay out of it
    });
  });
  if (input) {
    var submit = function () { choose(input.value); };
    button.addEventListener("click", submit);
    input.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey && !e.ctrlKey && !e.altKey && !e.metaKey) {
        e.preventDefault(); submit();
      }
      if (!(e.shiftKey && e.key === "Enter")) e.stopPropagation();
    });
  }
  // Python's verdict (the widget): the answer it judged, right or not, the feedback.
  root.courseConceptShow = function (v) {
    clearTimeout(waiting);
    if (input) { if (input.value !== v.key) input.value = v.key; }
    else check(radios.filter(function (x) { return x.getAttribute("data-key") === v.key; })[0] || null);
    show(v.right, v.html, "");
  };
}"""

_NOTES = json.dumps({"lab": NOT_RECORDED_LAB, "page": NOT_RECORDED_PAGE, "wait": PING_MS},
                    ensure_ascii=False)

_ESM = r"""
const mount = %(mount)s;
const CSS = %(css)s, NOTES = %(notes)s, PING_MS = %(ping)d;

function ensureStyle() {
  if (document.getElementById("course-concept-style")) return;
  const style = document.createElement("style");
  style.id = "course-concept-style";
  style.textContent = CSS;
  document.head.appendChild(style);
}

function render({ model, el }) {
  ensureStyle();
  el.innerHTML = model.get("markup");
  const root = el.querySelector(".course-concept");
  let live = null, waiting = null;
  // A kernel running cells (Run All) answers only after them: while the notebook shows busy
  // or a cell queued ("[*]"), keep waiting rather than judging in the page.
  const busy = () => {
    const panel = el.closest(".jp-NotebookPanel");
    if (!panel) return false;
    const indicator = panel.querySelector(".jp-Notebook-ExecutionIndicator");
    return (indicator && indicator.getAttribute("data-status") === "busy") ||
           [...panel.querySelectorAll(".jp-InputPrompt")].some(p => p.textContent.includes("*"));
  };
  const channel = { live: () => live, busy, send: (answer) => model.send({ answer }) };
  mount(root, model.get("data"), channel, NOTES);
  const onMsg = (msg) => { if (msg && msg.pong !== undefined) { live = true; clearTimeout(waiting); } };
  model.on("msg:custom", onMsg);
  model.send({ ping: Date.now() });
  const expire = () => { if (busy()) waiting = setTimeout(expire, PING_MS); else if (live === null) live = false; };
  waiting = setTimeout(expire, PING_MS);
  const onVerdict = () => { const v = model.get("verdict"); if (v && v.key !== undefined) root.courseConceptShow(v); };
  model.on("change:verdict", onVerdict);
  onVerdict();
  return () => { clearTimeout(waiting); model.off("msg:custom", onMsg); model.off("change:verdict", onVerdict); };
}
export default { render };
""" % {"mount": _MOUNT, "css": json.dumps(CSS), "notes": _NOTES, "ping": PING_MS}

_PAGE_SCRIPT = ("<script>(function () {\n  var me = document.currentScript, out = me.parentElement;\n"
                "  window.courseConceptMount = window.courseConceptMount || (" + _MOUNT + ");\n"
                "  var data = JSON.parse(out.querySelector('script.course-concept-data').textContent);\n"
                "  window.courseConceptMount(out.querySelector('.course-concept'), data, null, "
                + _NOTES + ");\n})();</script>")


def _dom_id(question: Question) -> str:
    return "course-concept-" + question.id.replace(".", "-")


def _kicker(question: Question) -> str:
    what = {NUMBER: "type a number", PREDICT: "predict, then run the next cell"}.get(
        question.kind, "choose one")
    return f"Concept check {question.id} ({what})"


def markup(question: Question) -> str:
    """The question as HTML: kicker, text, options (a radio group) or a number field, and the
    empty feedback region. Ids come from the question's id (the page makes them unique)."""
    base = _dom_id(question)
    parts = [f'<div class="course-concept" data-question="{html.escape(question.id)}">',
             f'<p class="course-concept-kicker" id="{base}-kicker"><strong>'
             f"{html.escape(_kicker(question))}</strong></p>",
             f'<div class="course-concept-text" id="{base}-text">{markdown_html(question.text)}</div>']
    if question.kind == NUMBER:
        parts.append(f'<div class="course-concept-number-row"><label for="{base}-input">Your answer '
                     f'(a number)</label><input id="{base}-input" class="course-concept-number" '
                     f'type="text" inputmode="decimal" autocomplete="off" '
                     f'aria-describedby="{base}-text"><button type="button" '
                     f'class="course-concept-check">Check</button></div>')
    else:
        parts.append(f'<div class="course-concept-options" role="radiogroup" '
                     f'aria-labelledby="{base}-kicker {base}-text">')
        for i, option in enumerate(question.options):
            key = LETTERS[i]
            parts.append(f'<div class="course-concept-option" role="radio" aria-checked="false" '
                         f'tabindex="{0 if i == 0 else -1}" data-key="{key}">{key}) '
                         f"{markdown_html(option.text)}</div>")
        parts.append("</div>")
    parts.append('<div class="course-concept-feedback" role="status" aria-live="polite" '
                 'aria-atomic="true"></div></div>')
    return "".join(parts)


_VERDICT_WORD = re.compile(r"^\s*(?:right|correct|yes|no|not quite|wrong|not so)\b\s*[:.,;!—–-]+\s*", re.I)


def feedback_html(text: str) -> str:
    """A feedback as shown after the verdict ("Right —" / "Not quite —"): its own leading
    verdict word ("Right:", "No:") dropped, so the verdict is said once."""
    body = _VERDICT_WORD.sub("", text, count=1)
    return markdown_html(body[:1].upper() + body[1:] if body else text)


def judge_data(question: Question) -> dict:
    """What the page needs to judge an answer without Python (feedback as HTML)."""
    if question.kind == NUMBER:
        return {"kind": "number", "answer": float(question.answer), "tolerance": float(question.tolerance),
                "right": feedback_html(question.right), "too_low": feedback_html(question.too_low),
                "too_high": feedback_html(question.too_high), "not_a_number": NOT_A_NUMBER}
    return {"kind": "choice", "options": {LETTERS[i]: {"right": o.right, "html": feedback_html(o.feedback)}
                                          for i, o in enumerate(question.options)}}


def static_html(question: Question) -> str:
    """The `text/html` form: markup, its data, and (between the code markers) style and script."""
    data = json.dumps(judge_data(question), sort_keys=True, ensure_ascii=False).replace("</", "<\\/")
    return (f'<div class="course-concept-out">{markup(question)}'
            f'<script type="application/json" class="course-concept-data">{data}</script>'
            f"{CODE_START}<style>{CSS}</style>{_PAGE_SCRIPT}{CODE_END}</div>")


def plain_form(question: Question) -> str:
    """The `text/plain` form: the question and its lettered options (nbval compares it)."""
    lines = [f"{_kicker(question)}: {plain_text(question.text)}"]
    if question.kind == NUMBER:
        lines.append("  (answer with a number)")
    else:
        lines += [f"  {LETTERS[i]}) {plain_text(o.text)}" for i, o in enumerate(question.options)]
    return "\n".join(lines)


def normalize(question: Question, answer) -> str:
    """An answer as it is recorded: an option's letter, or the number as the learner typed it
    (a comma as decimal point becomes a dot). ValueError if it is neither."""
    if question.kind == NUMBER:
        text = str(answer).replace(",", ".").strip()
        float(text)                                  # ValueError for "abc"
        return text
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(question.options):
        return LETTERS[answer]
    if isinstance(answer, str) and answer.strip().lower() in LETTERS[:len(question.options)]:
        return answer.strip().lower()
    raise ValueError(f"{question.id}: no option {answer!r} (options: "
                     f"{', '.join(LETTERS[:len(question.options)])})")


class ConceptCheck(anywidget.AnyWidget):
    """One question in a live notebook (see the module doc). `answer(a)` judges, records and
    shows a verdict — what a click in the page does through the kernel."""

    _esm = traitlets.Unicode(_ESM).tag(sync=True)
    question_id = traitlets.Unicode("").tag(sync=True)
    markup = traitlets.Unicode("").tag(sync=True)
    data = traitlets.Dict().tag(sync=True)
    verdict = traitlets.Dict().tag(sync=True)     # {key, right, html, n}: the latest, n counts them

    def __init__(self, question: Question, record: bool = True, **kwargs):
        if not isinstance(question, Question):
            raise TypeError(f"ConceptCheck takes a Question (concepts.get('2.q1')), got {question!r}")
        super().__init__(question_id=question.id, markup=markup(question), data=judge_data(question),
                         **kwargs)
        self.question, self.record = question, record
        self.on_msg(self._message)

    def _message(self, _widget, content, _buffers):
        if not isinstance(content, dict):
            return
        if "ping" in content:
            self.send({"pong": content["ping"]})
        elif "answer" in content:
            self.answer(content["answer"])

    def answer(self, answer) -> tuple[bool, str]:
        """Judge `answer` (a letter, an option's index or a number), record it, show the
        verdict; returns (right?, feedback). Text that is not a number is told so, unrecorded."""
        q = self.question
        try:
            key = normalize(q, answer)
        except ValueError as e:
            right, feedback, key = False, NOT_A_NUMBER if q.kind == NUMBER else str(e), str(answer)
        else:
            right, feedback = q.judge(key)
            if self.record:
                from ...classroom.records import record_answer   # local: progress is optional plumbing
                record_answer(q.id, q.lesson, key, right)
        self.verdict = {"key": key, "right": bool(right), "html": feedback_html(feedback),
                        "n": self.verdict.get("n", 0) + 1}
        return right, feedback

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = dict(data, **{"text/plain": plain_form(self.question),
                             "text/html": static_html(self.question)})
        return data, metadata

    def __repr__(self):
        return f"ConceptCheck({self.question.id!r})"
