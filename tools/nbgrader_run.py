"""`nbgrader`, with the waits of the lessons' notebook client (execute_notebooks.LessonClient).

nbgrader's autograde runs each submission through nbclient, whose wait for a cell's reply
can miss it and sleep until the cell's timeout (seen with lesson 08's widgets; see
LessonClient). tools/nbgrader_grade.py runs nbgrader through this file:

    python tools/nbgrader_run.py autograde ASSIGNMENT --force
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute_notebooks import use_sliced_waits_in_nbclient  # noqa: E402

if __name__ == "__main__":
    use_sliced_waits_in_nbclient()
    from nbgrader.apps.nbgraderapp import main
    sys.exit(main())
