"""Say something once: plain text for logs, nbval and the export; one spoken paragraph in JupyterLab.

Orca does not read a new cell output by itself: after Shift+Enter on a check it said "Code
Cell Content clickable." and nothing of the verdict, which then had to be hunted with the
arrow keys and arrived cut where the screen wrapped the `<pre>` of a printed line (JupyterLab
breaks a stream's lines anywhere, mid-word; issue 43). What a screen reader does announce by
itself is a change inside a live region that is already in the page — the way the explorers'
captions are spoken (`course_lib/widgets/_caption.py`). So `say(text, heading)` displays a
mimebundle:

- `text/plain`: exactly `text` (the heading as its first line, if given): what nbval compares,
  what a log or a terminal shows, what `print` used to show;
- `text/html`: the same words in one paragraph (lines kept, words never broken), followed by
  a small script. JupyterLab runs the script only for an output it trusts — one the kernel
  has just sent — and the script then announces the paragraph once: it empties the paragraph,
  makes it a polite live region (`role="status"`), and puts the words back a moment later,
  a change the screen reader speaks as one utterance. The script does that only while the
  cell is running ("[*]"): an output restored with a saved notebook, or read in the HTML
  export, is shown and read in place, not announced (a reopened lesson would otherwise read
  every verdict aloud at once). Without the script (an untrusted notebook, another front end)
  the paragraph is plain, readable text.

The HTML is the same on every run (no random ids), so nbval can compare it like the text.
Outside IPython (pytest, a script) `say` prints the plain text.
"""
from __future__ import annotations

import html

__all__ = ["say"]

# The paragraph keeps the text's own line breaks and wraps only between words.
_STYLE = "white-space:pre-line; word-break:normal; overflow-wrap:break-word; margin:0.2em 0; max-width:60em"

# Runs once, when JupyterLab inserts the output into the page (it runs the scripts of trusted
# outputs only). `document.currentScript` is this script; its parent, the output's box.
_SCRIPT = """<script>
(function () {
  var me = document.currentScript, box = me && me.parentElement;
  var cell = box && box.closest(".jp-Cell");
  var prompt = cell && cell.querySelector(".jp-InputPrompt");
  if (!prompt || prompt.textContent.indexOf("*") < 0) return;
  var p = box.querySelector(".course-said"), words = p && p.firstElementChild;
  if (!words) return;
  p.removeChild(words);
  p.setAttribute("role", "status");
  p.setAttribute("aria-live", "polite");
  p.setAttribute("aria-atomic", "true");
  // The words go back once the empty live region is surely in the browser's accessibility
  // tree: in the page, then a rest (a busy 2-core machine lags), then an idle moment.
  var back = function () { p.appendChild(words); };
  var put = function (tries) {
    if (!p.isConnected && tries > 0) { setTimeout(function () { put(tries - 1); }, 100); return; }
    setTimeout(function () {
      if (window.requestIdleCallback) { window.requestIdleCallback(back, {timeout: 1500}); } else { back(); }
    }, 600);
  };
  put(50);
})();
</script>"""


def plain(text: str, heading: str = "") -> str:
    """What `say` shows as text: the heading, if any, on the first line, then `text`."""
    return f"{heading}\n{text}" if heading else text


def html_form(text: str, heading: str = "") -> str:
    """The `text/html` form of `say(text, heading)`: one paragraph (its words in a single
    `<span>`, so putting them back is one change, spoken once), then the announcing script."""
    words = html.escape(text)
    if heading:
        words = f"<strong>{html.escape(heading)}</strong>\n{words}"
    return (f'<div class="course-say"><p class="course-said" style="{_STYLE}">'
            f"<span>{words}</span></p>{_SCRIPT}</div>")


def say(text: str, heading: str = "") -> None:
    """Show `text` (under `heading`, if given) and have a screen reader announce it once.

    text: what to say, verdict first ("✅ correct — …"); its line breaks are kept.
    heading: an optional first line, shown in bold ("Your progress").
    In a notebook: a mimebundle (`text/plain` exactly `plain(text, heading)`, `text/html`
    announced once, see the module doc); elsewhere the plain text is printed.
    """
    if not isinstance(text, str) or not isinstance(heading, str):
        raise TypeError(f"say(text, heading) takes two strings; got {type(text).__name__} "
                        f"and {type(heading).__name__}")
    shown = plain(text, heading)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(shown)
        return
    display({"text/plain": shown, "text/html": html_form(text, heading)}, raw=True)
