"""A process tree as /proc shows it, for the memory watchdog (perfaudit/autograde/isolation/memory.py): each process's
parent and start time (which tells it from a later process given the same pid), the tree under some roots, resident
memory, and a signal sent only to the process that is still the one seen."""

import os
import signal
from collections import deque

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def read_file(path: str) -> str:
    """The whole file; O_NOFOLLOW: a symlink where a cgroup or /proc file should be is an error, not a detour."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")
    finally:
        os.close(fd)



def stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, start time, state) from /proc/<pid>/stat, or None once the process is gone.

    The start time tells a process from a later one that was given the same pid.
    """
    try:
        text = read_file(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the command name in (...) may hold spaces and parentheses
    try:
        return int(fields[1]), int(fields[19]), fields[0]
    except (IndexError, ValueError):
        return None


def process_table() -> dict[int, tuple[int, int, str]]:
    """Every live process: pid -> (ppid, start time, state). Zombies (Z) and dead ones (X) are left out."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = stat(int(entry))
            if info is not None and info[2] not in ("Z", "X"):
                table[int(entry)] = info
    return table


def tree(table: dict[int, tuple[int, int, str]], seeds: dict[int, int]) -> dict[int, int]:
    """The seeds still alive (same start time) and all their descendants: pid -> start time.

    Seeds are the watched roots and every process seen in the tree before: one whose parent exited (re-parented
    to init) still counts, as long as it was seen once while in the tree.
    """
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    members = {pid: start for pid, start in seeds.items() if pid in table and table[pid][1] == start}
    queue = deque(members)
    while queue:
        for child in children.get(queue.popleft(), ()):
            if child not in members:
                members[child] = table[child][1]
                queue.append(child)
    members.pop(os.getpid(), None)  # never the grader itself
    members.pop(1, None)
    return members


def rss_bytes(pid: int) -> int:
    try:
        return int(read_file(f"/proc/{pid}/statm").split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def memfd_bytes(pid: int, counted: set[tuple[int, int]]) -> int:
    """The memory of the memfds the process holds open and that `counted` does not hold yet (each one is added to
    it): memory no resident set shows while it is not mapped, and no address space limit counts."""
    total = 0
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0
    for fd in descriptors:
        try:
            if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:"):
                continue
            info = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (info.st_dev, info.st_ino) not in counted:
            counted.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
    return total


def signal_if_same(pid: int, start: int, signum: int) -> None:
    """signum to pid if it is still the process that started at start (a pidfd pins it while we check)."""
    pidfd = None
    try:
        if hasattr(os, "pidfd_open"):
            pidfd = os.pidfd_open(pid)
        info = stat(pid)
        if info is None or info[1] != start:
            return
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, signum)
        else:
            os.kill(pid, signum)
    except OSError:
        pass
    finally:
        if pidfd is not None:
            os.close(pidfd)
