"""Memory a student holds that no resident set shows, for the limits service (perfaudit/hub/watchdog.py, as root).

A memfd (memfd_create), or a file in a tmpfs removed while still open or mapped (/dev/shm, /tmp where it is a
tmpfs), is memory with no name left: no walk of /dev/shm sees it, RLIMIT_AS does not limit write() into it, and
while it is not mapped no resident set counts it. The last descriptor or mapping of it to go gives it back, so
stopping the processes that hold it frees it. A System V shared memory segment (shmget) is memory that outlives
every process: once no process has it attached (nattch 0) nobody holds it, and only its removal (IPC_RMID) gives it
back, or, machine-wide, kernel.shm_rmid_forced=1 (docs/hub.md).
"""

import ctypes
import os
import stat
from pathlib import Path
from typing import NamedTuple

from perfaudit.hub import exchange_share
from perfaudit.hub.exchange_share import BLOCK

MEMFD = "/memfd:"  # how /proc/<pid>/fd and map_files name a memfd: the kernel writes the prefix, the student the rest
DELETED = " (deleted)"  # what the kernel adds to the name of a file with none left (a memfd's too), in maps as in fd
MOUNTS = Path("/proc/self/mountinfo")
SYSV_SHM = Path("/proc/sysvipc/shm")
IPC_RMID = 0


def tmpfs_devices(mounts: Path = MOUNTS) -> set[int]:
    """st_dev of every tmpfs mounted (/dev/shm, and /tmp or /run/user/<uid> where they are one)."""
    devices = set()
    for line in mounts.read_text().splitlines():
        # id parent major:minor root mount-point options [optional fields...] - type source super-options
        fields = line.split()
        if fields[fields.index("-") + 1] == "tmpfs":
            major, minor = fields[2].split(":")
            devices.add(os.makedev(int(major), int(minor)))
    return devices


def unnamed_files(pid: int, devices: set[int]) -> dict[tuple[int, int], int]:
    """{(device, inode): bytes in memory} of the memfds the process holds and of its files without a name on a
    tmpfs of devices, by a descriptor or a mapping (/proc/<pid>/map_files: a mapping outlives its descriptor).

    The kernel's own shared memory behind a mapping is left out, by the name the kernel gives it: an attached SysV
    segment (/SYSV<key>) is counted once, for the account that made it, by segments(); a shared anonymous mapping
    (/dev/zero) lives only while mapped, so the resident set of each process mapping it shows it already. Like
    exchange_share.held_files (which walks one device and keeps no names) and the grader's proctree.memfd_bytes
    (descriptors only), on the memory file systems."""
    proc = f"/proc/{pid}"
    try:
        links = [f"{proc}/fd/{number}" for number in os.listdir(f"{proc}/fd")]
        with open(f"{proc}/maps") as maps:
            spans = [line.split(maxsplit=1)[0] for line in maps if line.rstrip("\n").endswith(DELETED)]
    except OSError:
        return {}  # gone, or a zombie
    links += [exchange_share.map_file(proc, span) for span in spans]
    found = {}
    for link in links:
        try:
            info = os.stat(link)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink:
                continue  # a named file: /dev/shm's are walked for their owner (watchdog.held_in)
            if info.st_dev not in devices and not os.readlink(link).startswith(MEMFD):
                continue
        except OSError:
            continue  # closed, unmapped or gone since it was listed
        found[(info.st_dev, info.st_ino)] = info.st_blocks * BLOCK
    return found


class Segment(NamedTuple):
    """A System V shared memory segment, as /proc/sysvipc/shm shows it."""

    id: int
    creator: int  # cuid: the account that made it. The owner (uid) is not: shmctl(IPC_SET) lets it be given away
    attached: int  # nattch: processes that have it attached
    bytes: int  # rss + swap: what it holds now (its size is only what it may hold; pages come as they are written)


def segments(table: Path = SYSV_SHM) -> list[Segment]:
    """Every segment of the machine's IPC namespace (this process's)."""
    header, *rows = table.read_text().splitlines()
    columns = header.split()
    found = []
    for row in rows:
        value = dict(zip(columns, (int(field) for field in row.split())))
        found.append(Segment(value["shmid"], value["cuid"], value["nattch"], value["rss"] + value["swap"]))
    return found


_libc = ctypes.CDLL(None, use_errno=True)


def remove_detached(segment: Segment, table: Path = SYSV_SHM) -> bool:
    """Remove the segment (IPC_RMID) if the table still shows it, made by the same account and attached by no
    process: whether it was removed. Read again just before, so a segment attached since it was seen, or an id
    given to another's segment since, is left alone."""
    now = next((seen for seen in segments(table) if seen.id == segment.id), None)
    if now is None or now.creator != segment.creator or now.attached:
        return False
    return _libc.shmctl(segment.id, IPC_RMID, None) == 0
