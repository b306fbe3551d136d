"""`say` (course_lib/classroom/speak.py): plain text for nbval and logs, one announced paragraph
in JupyterLab (issue 43). The page's side — Orca speaking it — is tests/test_screen_reader_exercises.py."""
import re

import pytest

from course_lib.classroom import speak


def test_the_plain_text_is_the_text_with_its_heading_first(capsys):
    speak.say("✅ correct — softmax: matches.", "Exercise 2.1")
    assert capsys.readouterr().out == "Exercise 2.1\n✅ correct — softmax: matches.\n"
    speak.say("one line")
    assert capsys.readouterr().out == "one line\n"


def test_the_html_is_one_paragraph_escaped_and_the_same_every_time():
    a = speak.html_form("a < b & c\nsecond line", "Heading")
    assert a == speak.html_form("a < b & c\nsecond line", "Heading")          # nbval compares it
    assert a.count("<p ") == 1 and "a &lt; b &amp; c\nsecond line" in a and "<strong>Heading</strong>" in a
    assert "pre-line" in a and "word-break:normal" in a                        # lines kept, words whole
    assert not re.search(r"id=|Math\.random|[0-9a-f]{16}", a)                  # no per-run ids
    # Announced only while its cell runs ("[*]"): not when a saved notebook is opened.
    assert '.indexOf("*") < 0) return' in a and 'setAttribute("role", "status")' in a


def test_in_a_notebook_it_displays_both_forms(monkeypatch):
    shown = []
    import IPython
    import IPython.display

    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    speak.say("⏳ not solved yet", "Check")
    (bundle, raw), = shown
    assert raw and bundle["text/plain"] == "Check\n⏳ not solved yet"
    assert bundle["text/html"] == speak.html_form("⏳ not solved yet", "Check")


def test_it_says_what_it_expected():
    with pytest.raises(TypeError, match="two strings"):
        speak.say(3)
