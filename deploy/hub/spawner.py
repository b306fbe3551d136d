"""The spawner of a hub that runs as root: each student's server as their own account.

JupyterHub's LocalProcessSpawner runs a server as the Unix user named like the hub
user; here the account is PREFIX + name (accounts.py), and every process of the
student — server and kernels — starts with an address-space cap (RLIMIT_AS), so a
kernel that allocates past it fails alone while the classmates' keep running.
"""
from __future__ import annotations

import pwd
import resource

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from traitlets import Integer, Unicode


class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner with the course's account names and a memory cap."""

    account_prefix = Unicode("course-", config=True, help="Unix account = prefix + user name")
    memory_cap = Integer(0, config=True,
                         help="bytes of address space per process (RLIMIT_AS); 0: no cap")

    @property
    def account(self) -> str:
        return self.account_prefix + self.user.name

    def make_preexec_fn(self, name):
        """After fork, before exec: the cap (set while still root, so it also binds the
        hard limit), then the student's uid and groups, then their home."""
        become = set_user_setuid(self.account)
        cap = self.memory_cap

        def preexec():
            if cap:
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            become()

        return preexec

    def user_env(self, env):
        entry = pwd.getpwnam(self.account)
        env["USER"] = self.account
        env["HOME"] = entry.pw_dir
        env["SHELL"] = entry.pw_shell
        return env

    async def move_certs(self, paths):      # internal TLS is off; never guess a home
        raise NotImplementedError("internal_ssl is not supported by the course's spawner")

