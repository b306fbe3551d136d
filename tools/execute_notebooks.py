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
from queue import Empty

import nbformat
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from course_lib.console import utf8_output

KERNEL = "transformers-course"
WAKE_EVERY = 0.5    # seconds: how often a wait for the kernel's next message looks again


_start_kernel_client = NotebookClient.async_start_new_kernel_client


async def _start_with_sliced_waits(self):
    """nbclient's start of the kernel client, then its shell and IOPub waits in slices."""
    kc = await _start_kernel_client(self)
    for channel in (kc.shell_channel, kc.iopub_channel):
        channel.get_msg = _in_slices(channel.get_msg)
    return kc


class LessonClient(NotebookClient):
    """nbclient's NotebookClient, with waits for the kernel's messages that cannot be lost.

    nbclient waits for a cell's reply with one `poll` of the shell socket as long as the cell's
    timeout. Run by nbclient, lesson 08's student version stalled in 5 of 6 runs at its
    translator widget: the reply had come and the kernel was idle, but the poll woke only at
    its timeout (100 s later; in a seventh run it never woke and the cell "timed out"; nbclient
    issue #312 reports the same with widgets). Polling in slices of WAKE_EVERY seconds, each of
    which looks at the socket again, finds such a message within half a second: 5 of 5 runs
    had no stall. Timeouts are unchanged.
    """

    async_start_new_kernel_client = _start_with_sliced_waits
    # nbclient binds the blocking form to its own coroutine: bind it to this one
    # (setup_kernel(), which the notebook budget benchmark uses, calls it).
    start_new_kernel_client = run_sync(_start_with_sliced_waits)


def use_sliced_waits_in_nbclient() -> None:
    """Give every NotebookClient of this process LessonClient's waits: for programs that make
    their own client, as nbgrader's autograde does (tools/nbgrader_run.py)."""
    NotebookClient.async_start_new_kernel_client = _start_with_sliced_waits
    NotebookClient.start_new_kernel_client = run_sync(_start_with_sliced_waits)


def _in_slices(get_msg_once):
    """`get_msg(timeout=None)` that polls at most WAKE_EVERY seconds at a time."""
    async def get_msg(timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = WAKE_EVERY if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await get_msg_once(timeout=min(WAKE_EVERY, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
    return get_msg


def execute(path: Path, timeout: int = 600) -> float:
    """Execute `path` in a fresh kernel, write it back, return the wall time in seconds."""
    nb = nbformat.read(path, as_version=4)
    client = LessonClient(nb, timeout=timeout, kernel_name=KERNEL, store_widget_state=True,
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
