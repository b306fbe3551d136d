"""How the screen-reader test reads Orca's debug log (tests/screen_reader_support.py): the
words spoken, and what Orca did with a key — on stand-in log lines in Orca 43's format, so
no screen reader is needed."""
from __future__ import annotations

import screen_reader_support as srs

SPOKEN = """06:34:41.540775 - SPEECH DISPATCHER: Speaking '<speak><mark name="0:3"/>d_k <mark name="4:14"/>horizontal <mark name="15:21"/>slider <mark name="22:25"/>64.</speak>' 
                  ORCA rate 5.0, pitch 5.0, volume 5.0, language en, punctuation: MOST 
06:34:42.000000 - SPEECH DISPATCHER: Speaking '<speak>d sub k 65: &lt;one&gt;
line two</speak>' 
"""


def _key(name: str, where: str, consume: str, focus_mode: str) -> str:
    return f"""
vvvvv PROCESS ATSPI_KEY_PRESSED_EVENT: '{name}' (114) vvvvv
06:34:45.712194 - HOST_APP: [application | Chromium]
06:34:45.712381 - LOCATION: {where}
06:34:45.712389 - CONSUME:  {consume}
06:34:45.712572 - INPUT EVENT: _inFocusMode: {focus_mode}
^^^^^ PROCESS ATSPI_KEY_PRESSED_EVENT: '{name}' (114) ^^^^^

vvvvv PROCESS ATSPI_KEY_RELEASED_EVENT: '{name}' (114) vvvvv
06:34:45.738073 - LOCATION: {where}
06:34:45.738084 - CONSUME:  False (Is release for last non-modifier keyevent)
^^^^^ PROCESS ATSPI_KEY_RELEASED_EVENT: '{name}' (114) ^^^^^
"""


def _reader(tmp_path, text: str) -> srs.ScreenReader:
    sr = srs.ScreenReader.__new__(srs.ScreenReader)     # the log only: nothing started
    sr.log = tmp_path / "orca-debug.log"
    sr.log.write_text(text, encoding="utf-8")
    sr._mark = 0
    return sr


def test_the_words_spoken_are_read_without_marks_and_whole_across_lines():
    assert srs.utterances_of(SPOKEN) == ["d_k horizontal slider 64.", "d sub k 65: <one> line two"]


def test_a_key_orca_kept_in_browse_mode_is_told_from_one_it_passed_on(tmp_path):
    sr = _reader(tmp_path, SPOKEN
                 + _key("Tab", "[push button | Check]", "False (No handler)", "True")
                 + _key("Right", "[slider | d_k]", "True (Script indication)", "False")
                 + _key("Right", "[slider | d_k]", "False (Script indication)", "True"))
    assert sr.key_decisions("Right") == [
        "Right at [slider | d_k]: kept by Orca: True (Script indication), focus mode: False",
        "Right at [slider | d_k]: kept by Orca: False (Script indication), focus mode: True"]
    assert sr.key_decisions("Right", 1) == [sr.key_decisions("Right")[-1]]
    assert sr.key_decisions("Down") == []
    assert sr.said() == ["d_k horizontal slider 64.", "d sub k 65: <one> line two"]


def test_a_missing_log_is_no_decisions(tmp_path):
    sr = _reader(tmp_path, "")
    sr.log.unlink()
    assert sr.key_decisions("Right") == [] and sr.transcript() == []
