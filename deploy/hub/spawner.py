"""The spawner of a hub that runs as root: each student's server as their own account.

JupyterHub's LocalProcessSpawner runs a server as the Unix user named like the hub
user; here the account is PREFIX + name (accounts.py). Every process of the student —
server, kernels, whatever they start — runs in the student's control group with its
CPU, memory and process limits, or under the rlimits where the machine has no control
groups (limits.py). When the server stops, nothing of the student's is left running.
"""
from __future__ import annotations

import asyncio
import json
import os
import pwd
import time
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from traitlets import Any, Unicode


class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner with the course's account names and per-student limits."""

    account_prefix = Unicode("course-", config=True, help="Unix account = prefix + user name")
    groups = Any(None, config=True, help="limits.Groups: the students' limits")
    disk_file = Unicode("", config=True, help="where each student's folder size is kept for "
                                              "the class board ('' : not measured)")
    board_gid = Any(None, config=True, help="the board's group, which may read disk_file")
    measure_every = 60                      # seconds between two sizes of one folder

    @property
    def account(self) -> str:
        return self.account_prefix + self.user.name

    async def start(self):
        """The student's group first (made by root, here), then the server in it."""
        if self.groups is not None:
            await asyncio.to_thread(self.groups.create, self.account)
            # Each start is a new group: the kernels' notice counts its stops (limit_notice).
            self._group_id = f"{int(time.time())}"
        started = await super().start()
        await self.measure_folder()
        return started

    async def poll(self):
        status = await super().poll()
        if status is None and time.monotonic() - getattr(self, "_measured", 0) > self.measure_every:
            await self.measure_folder()
        return status

    async def measure_folder(self) -> None:
        """The student's folder size into disk_file, for the board (best effort)."""
        if not self.disk_file:
            return
        from limits import folder_size

        self._measured = time.monotonic()
        size = await asyncio.to_thread(folder_size, Path(pwd.getpwnam(self.account).pw_dir))
        async with _DISK_LOCK:              # every student's spawner writes the same file
            await asyncio.to_thread(_store_size, Path(self.disk_file), self.user.name, size,
                                    self.board_gid)

    def make_preexec_fn(self, name):
        """After fork, before exec: into the group and under the rlimits (set while still
        root, so they also bind the hard limits), then the student's uid and groups."""
        become = set_user_setuid(self.account)
        groups, account = self.groups, self.account

        def preexec():
            if groups is not None:
                groups.enter(account)
            become()

        return preexec

    def user_env(self, env):
        entry = pwd.getpwnam(self.account)
        env["USER"] = self.account
        env["HOME"] = entry.pw_dir
        env["SHELL"] = entry.pw_shell
        # Temporary files in a folder of the student's (accounts.private_tmp), not the shared
        # /tmp, where others list them and the hub could not tell whose they are.
        from accounts import private_tmp

        env["TMPDIR"] = str(private_tmp(entry))
        if self.groups is not None:
            from limits import gb

            events = self.groups.memory_events(self.account)
            if events is not None:          # the kernels say why one of them stopped
                env["COURSE_MEMORY_EVENTS"] = str(events)
                env["COURSE_MEMORY_LIMIT"] = gb(self.groups.limits.memory)
                env["COURSE_GROUP_ID"] = getattr(self, "_group_id", "0")
        return env

    async def stop(self, now=False):
        """Stop the server as JupyterHub does, then everything else of the student's (a
        loop left in the background, a fork loop's children), then remove the group."""
        try:
            await super().stop(now=now)
        finally:
            if self.groups is not None:
                uid = pwd.getpwnam(self.account).pw_uid
                killed = await asyncio.to_thread(self.groups.stop_all, self.account, uid)
                if killed:
                    self.log.warning("stopped %d leftover process(es) of %s", killed, self.account)
                await asyncio.to_thread(self.groups.remove, self.account)

    async def move_certs(self, paths):      # internal TLS is off; never guess a home
        raise NotImplementedError("internal_ssl is not supported by the course's spawner")


_DISK_LOCK = asyncio.Lock()


def _store_size(path: Path, user: str, size: int, gid) -> None:
    try:
        sizes = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        sizes = {}
    sizes[user] = {"bytes": size, "at": time.time()}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(sizes, sort_keys=True), encoding="utf-8")
    if gid is not None:
        os.chown(tmp, 0, gid)
    tmp.chmod(0o640)
    tmp.replace(path)
