"""Stop `make` with one line if this Python is too old for the course.

Written for any Python 3 (no f-strings) so that an old interpreter reaches the
message instead of a SyntaxError.
"""
import sys

NEEDED = (3, 10)

if sys.version_info[:2] < NEEDED:
    sys.stderr.write(
        "The course needs Python >= %d.%d, but %s is Python %d.%d. "
        "Install a newer Python and run e.g. `make lab PY=python3.11`.\n"
        % (NEEDED + (sys.executable,) + tuple(sys.version_info[:2]))
    )
    sys.exit(1)
