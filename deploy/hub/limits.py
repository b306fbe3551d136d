"""Limits per student on the one-machine hub: CPU, memory and processes for everything a
student's server starts — server, kernels, their children — together (issue 30).

A student's mistake (a loop on every core, a fork loop, three kernels of 3 GB each) must
not take the machine from the class. The first of these the machine allows is used:

* cgroup v2: one control group per student under the hub's own, with cpu.max,
  memory.max (no swap) and pids.max;
* cgroup v1 (cpu, memory and pids hierarchies writable by root): the same limits as
  cpu.cfs_quota_us, memory.limit_in_bytes (+ memsw) and pids.max;
* rlimits, where neither is possible: RLIMIT_NPROC per account (processes and threads),
  the address-space cap per process; the CPU is then not capped (say so at start).

Always: RLIMIT_FSIZE (no file past the size limit; Python raises "File too large") and
RLIMIT_AS per process (one allocation past the memory limit raises MemoryError in the
student's own cell, before the group's limit stops the kernel). On a machine whose init
is systemd, jupyterhub-systemdspawner is the standard way to the same limits
(docs/instructor_guide.md). Linux only, like the hub; everything here runs as root.
"""
from __future__ import annotations

import os
import resource
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("cpu", "memory", "pids")
PERIOD_US = 100_000                    # the CPU quota's period: 0.1 s
GROUP = "course-hub"                   # the folder holding one group per student
BASES = "control_groups.txt"           # in the hub's runtime folder: the folders it made


@dataclass(frozen=True)
class Limits:
    """What one student may use, all their processes together."""

    cpu: float          # cores (cgroups only)
    memory: int         # bytes: the group's limit, and each process's address space
    pids: int           # processes and threads
    file_size: int      # bytes, per file written

    def words(self) -> str:
        return (f"CPU {self.cpu:g} core{'s' if self.cpu != 1 else ''}, memory {gb(self.memory)}, "
                f"{self.pids} processes and threads, files up to {gb(self.file_size)}")


def gb(n: int) -> str:
    """Bytes in the words a student reads: '4 GB', '1.5 GB', '512 MB'."""
    return f"{n / 2**30:g} GB" if n >= 2**30 else f"{n / 2**20:g} MB"


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def _own_path(controller: str | None, proc: Path) -> str:
    """The hub's own group in a hierarchy (/proc/self/cgroup): the students' nest under it,
    so a limit on the hub (a container's) still binds them."""
    try:
        lines = proc.read_text(encoding="utf-8").splitlines()
    except OSError:
        return "/"
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller is None and names == "") or (controller and controller in names.split(",")):
            return path or "/"
    return "/"


class Groups:
    """The students' control groups (or, kind 'rlimits', none). Create before the server
    starts, enter from the child before exec, stop_all and remove when it stops."""

    def __init__(self, kind: str, limits: Limits, bases: dict[str, Path], why: str = ""):
        self.kind, self.limits, self.bases, self.why = kind, limits, bases, why

    # ---------------------------------------------------------------- where
    def folders(self, account: str) -> list[Path]:
        return [base / account for base in self.bases.values()]

    def create(self, account: str) -> None:
        """The student's group with its limits (reused if it exists)."""
        lim = self.limits
        if self.kind == "cgroup2":
            g = self.bases["unified"] / account
            g.mkdir(exist_ok=True)
            _write(g / "cpu.max", f"{int(lim.cpu * PERIOD_US)} {PERIOD_US}")
            _write(g / "memory.max", lim.memory)
            if (g / "memory.swap.max").exists():
                _write(g / "memory.swap.max", 0)
            _write(g / "pids.max", lim.pids)
        elif self.kind == "cgroup1":
            cpu, mem, pids = (self.bases[c] / account for c in V1_CONTROLLERS)
            for g in (cpu, mem, pids):
                g.mkdir(exist_ok=True)
            _write(cpu / "cpu.cfs_period_us", PERIOD_US)
            _write(cpu / "cpu.cfs_quota_us", int(lim.cpu * PERIOD_US))
            _write(mem / "memory.limit_in_bytes", lim.memory)
            if (mem / "memory.memsw.limit_in_bytes").exists():     # no escape into swap
                _write(mem / "memory.memsw.limit_in_bytes", lim.memory)
            _write(pids / "pids.max", lim.pids)

    def enter(self, account: str) -> None:
        """In the child, after fork and before exec, still root: join the student's group
        (every process it starts stays in it), then the rlimits."""
        if self.kind != "rlimits":
            for g in self.folders(account):
                _write(g / "cgroup.procs", os.getpid())
        lim = self.limits
        resource.setrlimit(resource.RLIMIT_AS, (lim.memory, lim.memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (lim.file_size, lim.file_size))
        if self.kind == "rlimits":          # per account: counts the student's every thread
            resource.setrlimit(resource.RLIMIT_NPROC, (lim.pids, lim.pids))

    # ---------------------------------------------------------------- what happened
    def pids_in(self, account: str) -> list[int]:
        """Every process of the student's group (cgroups); [] for rlimits."""
        found: set[int] = set()
        for g in self.folders(account) if self.kind != "rlimits" else []:
            try:
                found |= {int(p) for p in (g / "cgroup.procs").read_text(encoding="utf-8").split()}
            except OSError:
                pass
        return sorted(found)

    def memory_events(self, account: str) -> Path | None:
        """The file whose 'oom_kill N' line counts the student's kernels stopped at the limit."""
        if self.kind == "cgroup2":
            return self.bases["unified"] / account / "memory.events"
        if self.kind == "cgroup1":
            return self.bases["memory"] / account / "memory.oom_control"
        return None

    def stop_all(self, account: str, uid: int | None = None, timeout: float = 10) -> int:
        """SIGKILL everything left of the student (a detached loop, a fork loop's children)
        until nothing is; the number of processes killed. The rlimits fallback finds them
        by their account's uid."""
        killed, deadline = 0, time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = self.pids_in(account) if self.kind != "rlimits" else _processes_of(uid)
            if not pids:
                return killed
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        return killed

    def remove(self, account: str) -> None:
        """Remove the student's (empty) groups; a group the kernel still holds stays."""
        for g in self.folders(account) if self.kind != "rlimits" else []:
            for _ in range(50):             # the kernel frees a killed group a moment later
                try:
                    g.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)

    def summary(self) -> str:
        """The one line the hub prints at start: which limits hold."""
        if self.kind == "rlimits":
            return (f"Limits per student (rlimits; no control groups here: {self.why}): "
                    f"{self.limits.pids} processes and threads per account, memory "
                    f"{gb(self.limits.memory)} per process, files up to "
                    f"{gb(self.limits.file_size)}; the CPU is NOT capped")
        return f"Limits per student ({self.kind}, all their processes together): {self.limits.words()}"


def _write(path: Path, value) -> None:
    path.write_text(f"{value}\n", encoding="ascii")


def _processes_of(uid: int | None) -> list[int]:
    if uid is None:
        return []
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def detect(limits: Limits, want: str = "auto", tag: str = GROUP, root: Path = CGROUP,
           proc: Path = Path("/proc/self/cgroup")) -> Groups:
    """The best kind this machine allows ('auto'), or the one asked for; the students'
    groups then live under <hub's group>/<tag>/ in each hierarchy. `want='rlimits'` forces
    the fallback; asking for a kind the machine lacks falls back with the reason."""
    if want == "rlimits":
        return Groups("rlimits", limits, {}, why="--limits rlimits")
    reasons = []
    if want in ("auto", "cgroup2"):
        controllers = root / "cgroup.controllers"
        if controllers.is_file():
            have = set(controllers.read_text(encoding="ascii").split())
            missing = {"cpu", "memory", "pids"} - have
            if missing:
                reasons.append(f"cgroup v2 lacks {', '.join(sorted(missing))}")
            elif not os.access(root, os.W_OK):
                reasons.append(f"{root} is not writable (run as root)")
            else:
                try:
                    base = _v2_base(root, tag)
                    return Groups("cgroup2", limits, {"unified": base})
                except OSError as e:
                    reasons.append(f"cgroup v2: {e.strerror or e}")
        elif want == "cgroup2":
            reasons.append(f"no cgroup v2 at {root}")
    if want in ("auto", "cgroup1"):
        mounts = {c: root / c for c in V1_CONTROLLERS}
        missing = [c for c, m in mounts.items() if not (m / "cgroup.procs").is_file()]
        if missing:
            reasons.append(f"no cgroup v1 {', '.join(missing)} hierarchy")
        elif not all(_writable(m) for m in mounts.values()):
            reasons.append("the cgroup v1 hierarchies are not writable (run as root)")
        else:
            try:
                bases = {}
                for c, m in mounts.items():
                    base = m / _own_path(c, proc).lstrip("/") / tag
                    base.mkdir(parents=True, exist_ok=True)
                    bases[c] = base
                return Groups("cgroup1", limits, bases)
            except OSError as e:
                reasons.append(f"cgroup v1: {e.strerror or e}")
    return Groups("rlimits", limits, {}, why="; ".join(reasons) or "none found")


def _v2_base(root: Path, tag: str) -> Path:
    """<root>/<tag>, with cpu, memory and pids handed down to its children. It hangs from
    the root group: cgroup v2 gives controllers only to groups without processes of their
    own, and the hub's group holds the hub."""
    base = root / tag
    base.mkdir(exist_ok=True)
    _write(root / "cgroup.subtree_control", "+cpu +memory +pids")
    _write(base / "cgroup.subtree_control", "+cpu +memory +pids")
    return base


# ---------------------------------------------------------------- disk
def disk_refusal(folder: Path, reserve: float) -> str | None:
    """Why no server may start now (the disk holding the homes has less than `reserve`,
    a fraction, free: the hub's database and every classmate's saves live there too),
    or None."""
    import shutil

    use = shutil.disk_usage(folder)
    if use.free < reserve * use.total:
        return (f"the disk holding the students' folders is {100 * (1 - use.free / use.total):.0f} % "
                f"full ({gb(use.free)} free, below the {100 * reserve:g} % the hub keeps free): "
                f"the instructor must free space before more servers start")
    return None


def folder_size(folder: Path) -> int:
    """Bytes in a student's folder (links not followed: root only reads sizes here)."""
    total = 0
    for top, dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                pass
    return total


def remove_bases(listing: Path) -> list[str]:
    """--remove-accounts: the hub's group folders (listed in its runtime folder), after
    stopping anything still in a student's group; one line per folder removed."""
    try:
        bases = [Path(b) for b in listing.read_text(encoding="utf-8").split()]
    except OSError:
        return []
    said = []
    for base in bases:
        if not base.is_dir():
            continue
        groups = Groups("cgroup1", None, {"x": base})
        for g in [p for p in base.iterdir() if p.is_dir()]:
            groups.stop_all(g.name)
            groups.remove(g.name)
        try:
            base.rmdir()
            said.append(f"removed control group {base}")
        except OSError as e:
            said.append(f"control group {base} not removed: {e.strerror}")
    listing.unlink()
    return said
