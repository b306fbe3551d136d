"""Command-line output that works on a console or a file in any locale.

On Windows (Python before 3.15) and under a POSIX C locale, output sent to a pipe or a
file is written in a legacy encoding that has no "—", "✅" or "√": printing one raises
UnicodeEncodeError. The course's command-line scripts call `utf8_output()` first, so
what they print is UTF-8 wherever it goes (read it back with encoding="utf-8").
Standard library only: tools/, deploy/ and benchmarks/ import it too.
"""
import sys

__all__ = ["utf8_output"]


def utf8_output():
    """Make sys.stdout and sys.stderr write UTF-8 (what UTF-8 cannot encode, a lone
    surrogate from a mis-decoded file name, becomes "?" rather than an error).
    Streams without `reconfigure` are left alone."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # not a notebook kernel's stream, say
            stream.reconfigure(encoding="utf-8", errors="replace")
