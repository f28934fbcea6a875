"""Each person's server in cgroups of their own, where the machine lets root make them: the kernel then counts all the
memory the person's processes take and stops one of theirs past the limit, never a classmate's; and it shares the
CPU between people, not between processes.

Memory. The watchdog (perfaudit/hub/watchdog.py) adds up what it can see of a student's memory: resident sets, files
in /dev/shm, memfds and removed files their processes hold, SysV segments. A memfd whose only descriptor waits in a
unix socket's queue (sent, never received) is in no process's descriptors or mappings, so a student held 4 GB that
way against a 2 GB limit, unseen. A memory cgroup charges each page to the group of the process that made it,
wherever its descriptor goes, so such memory counts there too: past the group's limit the kernel reclaims, then
stops a process of that group (out of memory, SIGKILL), and its socket's queue goes with it.

CPU. nice shares the CPU between processes: 300 busy processes of one student slowed classmates' work and gradings
by about 30 %. Each person's CPU group has the same weight, so the scheduler gives each person who wants CPU an equal
part of what the people's groups get, however many processes they run. A cap (PERFAUDIT_HUB_CPUS, c.Spawner.cpu_limit)
is optional: a capped group's threads are stopped for the rest of each 100 ms period once they have used its quota,
which makes a student's timings jump (the course's subject), so by default there is none.

Where a controller is mounted and root may make groups under the hub's own (cgroup v1's `memory` and `cpu`, each a
hierarchy of its own, or v2 with them in the hub's group's subtree_control), the spawner
(namespace_guard.GuardedSpawner) makes `<the hub's group>/perfaudit-hub/<account>` in each, with the person's
limits, and moves each server into them before it becomes the person; everything the server starts stays there (a
group's processes are root's to move). Where none is, servers start as before, under rlimits, nice and the watchdog,
and the hub's log says so. Groups are left when the hub stops (empty, they hold nothing) and go with their account
(accounts.remove).
"""

import os
import re
from dataclasses import dataclass
from pathlib import Path

from perfaudit.autograde.isolation import cgroupfs

HUB_GROUP = "perfaudit-hub"
CONTROLLERS = ("memory", "cpu")
ACCOUNT = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")  # a Linux account name: one folder, never a path
PERIOD_US = 100_000  # the scheduler's period for a CPU cap, its default
# The file a v1 hierarchy of each controller has, by which it is known writable here.
V1_MARK = {"memory": "memory.limit_in_bytes", "cpu": "cpu.shares"}


@dataclass(frozen=True)
class Hierarchy:
    folder: Path  # the hub's own cgroup, where the people's groups go
    version: int  # 1 or 2
    controllers: tuple[str, ...]  # which of CONTROLLERS it holds: one in v1; those handed down in v2


@dataclass(frozen=True)
class GroupLimits:
    memory_bytes: int | None  # the person's memory in all; None: not limited here
    cpus: float | None = None  # a cap in CPUs (0.5: half of one); None: none, fair shares alone


def hierarchies(proc: Path = Path("/proc/self")) -> list[Hierarchy]:
    """The cgroups this process is in, one for each controller of CONTROLLERS, where root may make groups under them;
    none where there is none."""
    groups = cgroupfs.own_groups(proc)
    found: list[Hierarchy] = []
    held: set[str] = set()
    for mount in sorted(cgroupfs.mounted(proc), key=lambda m: m.version):  # a controller v1 holds is not v2's
        if mount.version == 1:
            for controller in (c for c in CONTROLLERS if c in mount.controllers and c not in held):
                folder = cgroupfs.own_dir(mount, groups.get(controller))
                if folder and os.access(folder, os.W_OK) and os.path.exists(os.path.join(folder, V1_MARK[controller])):
                    found.append(Hierarchy(Path(folder), 1, (controller,)))
                    held.add(controller)
            continue
        folder = cgroupfs.own_dir(mount, groups.get(""))
        if folder is None or not os.access(folder, os.W_OK):
            continue
        # v2 gives a child a controller only where its parent hands it down
        handed = _words(Path(folder) / "cgroup.subtree_control")
        controllers = tuple(c for c in CONTROLLERS if c in handed and c not in held)
        if controllers:
            found.append(Hierarchy(Path(folder), 2, controllers))
            held.update(controllers)
    return found


def prepare(account: str, limits: GroupLimits, found: list[Hierarchy] | None = None) -> list[Path]:
    """The account's groups, made (or found) under the hub's, with the limits written: one in each hierarchy, none
    where there is none. Run as root, before the server's fork."""
    if not ACCOUNT.fullmatch(account):
        raise ValueError(f"not an account name: {account!r:.40}")
    made = []
    for hierarchy in hierarchies() if found is None else found:
        hub = hierarchy.folder / HUB_GROUP
        hub.mkdir(exist_ok=True)
        if hierarchy.version == 2:  # hand the controllers down to the people's groups
            (hub / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in hierarchy.controllers))
        group = hub / account
        group.mkdir(exist_ok=True)
        for name, value in limit_files(hierarchy, limits, group):
            (group / name).write_text(value)
        made.append(group)
    return made


def limit_files(hierarchy: Hierarchy, limits: GroupLimits, group: Path) -> list[tuple[str, str]]:
    """(file, value) of each limit the hierarchy's controllers take, for the group. Every person's CPU weight is the
    default: written anyway, so a group made before by hand has it too."""
    v1, written = hierarchy.version == 1, []
    if "memory" in hierarchy.controllers and limits.memory_bytes:
        written.append(("memory.limit_in_bytes" if v1 else "memory.max", str(int(limits.memory_bytes))))
        if not v1 and (group / "memory.swap.max").exists():  # (a kernel without swap accounting has none)
            written.append(("memory.swap.max", "0"))  # past the limit into swap is past the limit
    if "cpu" in hierarchy.controllers:
        quota = None if not limits.cpus else max(1000, int(limits.cpus * PERIOD_US))
        if v1:
            written += [("cpu.shares", "1024"), ("cpu.cfs_period_us", str(PERIOD_US)),
                        ("cpu.cfs_quota_us", str(quota or -1))]
        else:
            written += [("cpu.weight", "100"), ("cpu.max", f"{quota or 'max'} {PERIOD_US}")]
    return written


def remove(account: str, found: list[Hierarchy] | None = None) -> None:
    """The account's groups gone, where there are some and nothing runs in them (the account's removal, at a term's
    end)."""
    if not ACCOUNT.fullmatch(account):
        return
    for hierarchy in hierarchies() if found is None else found:
        try:
            (hierarchy.folder / HUB_GROUP / account).rmdir()
        except OSError:
            pass  # none made, or a process still in it: left, as the hub leaves groups


def joiner(groups: list[Path]):
    """A function that moves the process calling it (a forked child, still root) into each of groups. Everything it
    needs is made beforehand: after a fork, only the writes themselves."""
    procs = [os.fsencode(group / "cgroup.procs") for group in groups]

    def join() -> None:
        pid = str(os.getpid()).encode()
        for path in procs:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    return join


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def _words(path: Path) -> list[str]:
    lines = _lines(path)
    return lines[0].split() if lines else []
