"""Each person's server in a memory cgroup of their own, where the machine lets root make one: the kernel then counts
everything the person's processes take, and stops one of theirs past the limit, never a classmate's.

The watchdog (perfaudit/hub/watchdog.py) adds up what it can see of a student's memory: resident sets, files in
/dev/shm, memfds and removed files their processes hold, SysV segments. A memfd whose only descriptor waits in a
unix socket's queue (sent, never received) is in no process's descriptors or mappings, so a student held 4 GB that
way against a 2 GB limit, unseen. A memory cgroup charges each page to the group of the process that made it,
wherever its descriptor goes, so such memory counts there too: past the group's limit the kernel reclaims, then
stops a process of that group (out of memory, SIGKILL), and its socket's queue goes with it.

Where a memory controller is mounted and root may make groups under the hub's own (cgroup v1's `memory`, or v2 with
`memory` in the hub's group's subtree_control), the spawner (namespace_guard.GuardedSpawner) makes
`<the hub's group>/perfaudit-hub/<account>` with the person's limit (c.Spawner.mem_limit, PERFAUDIT_HUB_MEMORY) and
moves each server into it before it becomes the person; everything the server starts stays in it (a group's
processes are root's to move). Where none is, servers start as before, under rlimits and the watchdog, and the hub's
log says so. Groups are left when the hub stops (empty, they hold nothing) and go with their account
(accounts.remove).
"""

import os
import re
from dataclasses import dataclass
from pathlib import Path

HUB_GROUP = "perfaudit-hub"
ACCOUNT = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")  # a Linux account name: one folder, never a path


@dataclass(frozen=True)
class Hierarchy:
    folder: Path  # the hub's own memory cgroup, where the people's groups go
    version: int  # 1 or 2

    def limit_file(self) -> str:
        return "memory.limit_in_bytes" if self.version == 1 else "memory.max"


def hierarchy(proc: Path = Path("/proc/self")) -> Hierarchy | None:
    """The memory cgroup this process is in, where root may make groups under it; None where there is none."""
    mounts = _mounts(proc / "mountinfo")
    groups = _groups(proc / "cgroup")
    for version, root, mount in mounts:
        path = groups.get("memory" if version == 1 else "")
        if path is None or not (path + "/").startswith(root.rstrip("/") + "/"):
            continue  # this process's group is outside what is mounted there
        folder = mount / path[len(root.rstrip("/")):].lstrip("/")
        if version == 2 and "memory" not in _words(folder / "cgroup.subtree_control"):
            continue  # v2 gives a child the memory controller only where its parent hands it down
        if os.access(folder, os.W_OK) and (folder / ("memory.limit_in_bytes" if version == 1 else
                                                      "cgroup.controllers")).exists():
            return Hierarchy(folder, version)
    return None


def prepare(account: str, limit_bytes: int, found: Hierarchy | None = None) -> Path | None:
    """The account's group, made (or found) under the hub's with the limit written: None where there is no
    hierarchy. Run as root, before the server's fork."""
    found = found or hierarchy()
    if found is None:
        return None
    if not ACCOUNT.fullmatch(account):
        raise ValueError(f"not an account name: {account!r:.40}")
    group = found.folder / HUB_GROUP / account
    group.mkdir(parents=True, exist_ok=True)
    (group / found.limit_file()).write_text(str(int(limit_bytes)))
    if found.version == 2 and (group / "memory.swap.max").exists():
        (group / "memory.swap.max").write_text("0")  # past the limit into swap is past the limit
    return group


def remove(account: str, found: Hierarchy | None = None) -> None:
    """The account's group gone, where there is one and nothing runs in it (the account's removal, at a term's end)."""
    found = found or hierarchy()
    if found is None or not ACCOUNT.fullmatch(account):
        return
    try:
        (found.folder / HUB_GROUP / account).rmdir()
    except OSError:
        pass  # none made, or a process still in it: left, as the hub leaves groups


def joiner(group: Path | None):
    """A function that moves the process calling it (a forked child, still root) into group; nothing where None.
    Everything it needs is made beforehand: after a fork, only the write itself."""
    procs = None if group is None else os.fsencode(group / "cgroup.procs")

    def join() -> None:
        if procs is None:
            return
        fd = os.open(procs, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)

    return join


def _mounts(mountinfo: Path) -> list[tuple[int, str, Path]]:
    """(cgroup version, the group mounted there, mount point) of each cgroup file system mounted with the memory
    controller (v1) or of v2."""
    found = []
    for line in _lines(mountinfo):
        fields, _, after = line.partition(" - ")
        parts, tail = fields.split(), after.split()
        if len(parts) < 5 or len(tail) < 3:
            continue
        point = Path(parts[4].replace("\\040", " "))
        if tail[0] == "cgroup" and "memory" in tail[2].split(","):
            found.append((1, parts[3], point))
        elif tail[0] == "cgroup2":
            found.append((2, parts[3], point))
    return sorted(found)  # v1's memory controller first: where both are, v1 holds the memory controller


def _groups(cgroup: Path) -> dict[str, str]:
    """{controller: this process's path} from /proc/self/cgroup; "" for v2's unified line."""
    found = {}
    for line in _lines(cgroup):
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def _words(path: Path) -> list[str]:
    lines = _lines(path)
    return lines[0].split() if lines else []
