"""The lessons' notebook client never loses a kernel message to a poll that does not wake.

nbclient waits for a cell's reply with one `poll` as long as the cell's timeout. Lesson 08's
student version, run by nbclient, stalled in 5 of 6 runs for exactly that timeout at its
translator widget: the reply had come, the poll did not wake (with LessonClient: 0 of 5).
LessonClient polls in slices of WAKE_EVERY seconds; these tests check the slicing keeps
nbclient's contract (a message is returned, a timeout still raises Empty in time).
"""
import asyncio
import time
from queue import Empty

import pytest
from nbclient import NotebookClient

from lesson_client import LessonClient
import execute_notebooks


class _LateMessage:
    """A channel's get_msg whose message is only seen by a poll that starts after `ready_at`
    (a poll already waiting never wakes: the lost wake-up)."""

    def __init__(self, ready_at):
        self.ready_at, self.timeouts = ready_at, []

    async def get_msg(self, timeout=None):
        self.timeouts.append(timeout)
        if time.monotonic() >= self.ready_at:
            return {"msg_type": "execute_reply"}
        await asyncio.sleep(timeout if timeout is not None else 3600)
        raise Empty


def test_a_message_missed_by_one_poll_is_found_by_the_next(monkeypatch):
    monkeypatch.setattr(execute_notebooks, "WAKE_EVERY", 0.05)
    channel = _LateMessage(ready_at=time.monotonic() + 0.12)
    get_msg = execute_notebooks._in_slices(channel.get_msg)
    start = time.monotonic()
    msg = asyncio.run(asyncio.wait_for(get_msg(timeout=None), 5))
    assert msg["msg_type"] == "execute_reply"
    assert time.monotonic() - start < 1, "found within a slice or two, not at the timeout"
    assert all(t is not None and t <= 0.05 for t in channel.timeouts), channel.timeouts


def test_a_timeout_still_raises_empty_in_time(monkeypatch):
    monkeypatch.setattr(execute_notebooks, "WAKE_EVERY", 0.05)
    channel = _LateMessage(ready_at=float("inf"))
    get_msg = execute_notebooks._in_slices(channel.get_msg)
    start = time.monotonic()
    with pytest.raises(Empty):
        asyncio.run(get_msg(timeout=0.3))
    assert 0.25 <= time.monotonic() - start < 1.5
    assert len(channel.timeouts) >= 5


def test_the_blocking_set_up_uses_the_sliced_waits_too():
    """setup_kernel() calls start_new_kernel_client, which nbclient binds to its own coroutine."""
    assert LessonClient.start_new_kernel_client is not NotebookClient.start_new_kernel_client
    assert LessonClient.async_start_new_kernel_client is not NotebookClient.async_start_new_kernel_client


def test_nbgrader_runs_with_the_sliced_waits():
    """nbgrader's autograde makes its own client (nbconvert's ExecutePreprocessor): the runner
    tools/nbgrader_grade.py uses gives every NotebookClient of its process the same waits."""
    import subprocess
    import sys
    from pathlib import Path

    tools = Path(__file__).resolve().parent.parent / "tools"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import execute_notebooks as e\n"
            "e.use_sliced_waits_in_nbclient()\n"
            "from nbgrader.preprocessors import Execute\n"
            "assert Execute.async_start_new_kernel_client is e._start_with_sliced_waits\n"
            "assert Execute.start_new_kernel_client is not e._start_kernel_client\n"
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code, str(tools)], capture_output=True, text=True,
                       encoding="utf-8", timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
