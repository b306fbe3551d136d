"""Execute lesson notebooks in place, saving outputs and widget state.

`make execute` runs this on every lesson. nbclient stores the widget state in
the notebook's metadata, so a notebook opened in JupyterLab shows its sliders
and plots without being re-run. Prints the wall time of each notebook (the
lesson budget is 120 s on a 2-core machine).
"""
import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from course_lib.console import utf8_output

KERNEL = "transformers-course"


def execute(path: Path, timeout: int = 600) -> float:
    """Execute `path` in a fresh kernel, write it back, return the wall time in seconds."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL, store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    nbformat.write(nb, path)
    return elapsed


def main(argv=None) -> int:
    utf8_output()                # a failing cell's traceback may hold any character
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("notebooks", nargs="+", type=Path)
    args = p.parse_args(argv)
    for path in args.notebooks:
        try:
            seconds = execute(path)
        except CellExecutionError as e:
            print(f"{path.name}: FAILED\n{e}", file=sys.stderr)
            return 1
        print(f"{path.name}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
