"""python -m perfaudit.hub.watchdog: each student's memory in total, kept under their share (a hub service, as root).

rlimits (perfaudit/hub/server_limits.py) cap each process; a student who starts several kernels could still take several
times the limit. Where no systemd slice or cgroup counts a person's total, this service does, as a cgroup's memory
limit would: every few seconds it adds up the resident memory of each student's processes, and when a student is
over their share it stops that student's largest process (a kernel, whose JupyterLab then says it died and restarts
it), never their server's own (the process the hub itself started: perfaudit/hub/servers.py), and never another
account's. Files a student leaves in shared memory (/dev/shm, a tmpfs: its files are memory no process holds, so no
rlimit or process count sees them) count towards their share too, and their largest such files (or folders) are
removed before any process is stopped (a kernel holds the student's work; a file there rarely does), each by its
name in the opened /dev/shm, no link followed. Memory neither of those shows counts too
(perfaudit/hub/held_memory.py): the memfds and the files removed from a tmpfs that their processes hold open or
mapped, each once, which stopping the processes gives back; and the SysV shared-memory segments they made, which
outlive every process: those no process has attached are removed first. Each stop is one line of the hub's log and,
with --limits-notes, a note its student reads at the top of their next feedback page
(perfaudit/serve/limits_notes.py). With --exchange, it keeps each student's bytes in the exchange under --disk as
well, where no user quota does (perfaudit/hub/exchange_share.py).

    python -m perfaudit.hub.watchdog GROUP --memory 2G [--exchange /srv/nbgrader/exchange --disk 1G] [--every 2]
        [--hub-pid PID] [--limits-notes FOLDER]
"""

import argparse
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import NamedTuple

import psutil

from perfaudit.hub import exchange_share, held_memory
from perfaudit.hub.server_limits import parse_bytes
from perfaudit.hub.servers import Hub, each_account, members, stop
from perfaudit.serve import limits_notes

Tell = Callable[[str, str], None]  # (account, what that student reads)


SHARED_MEMORY = Path("/dev/shm")
MB = 2**20
# What each look may cost per student: every descriptor of their processes is looked at (the files held in the
# exchange and in shared memory), one stat each. A held-out attacker's 420 processes of 19,950 descriptors each (8.4
# million) kept this service on one pass for minutes, while their dd wrote 0.9 GB past their share of the exchange.
# Counted as the slots of each process's descriptor table (FDSize in /proc/<pid>/status: one read a process, at least
# its open descriptors); a JupyterLab and a few kernels hold a few thousand.
DESCRIPTOR_SLOTS = 65536


class Counted(NamedTuple):
    """What one student holds, by where it is; each byte counted once in its own place (a file or segment mapped
    by a process counts again in that process's resident set: over, never under)."""

    resident: int  # their processes' resident sets
    unnamed: int  # memfds, and files removed from a tmpfs, that their processes hold open or mapped
    files: int  # their files in shared memory (/dev/shm)
    segments: int  # the SysV shared-memory segments they made, attached or not
    shared_memory: Path

    @property
    def total(self) -> int:
        return self.resident + self.unnamed + self.files + self.segments

    def said(self, whose: str) -> str:
        """'3172 MB of memory (100 MB resident in your processes, 3072 MB in memfds ...)': each part named where
        more than the processes' resident sets was counted."""
        parts = [(self.resident, f"resident in {whose} processes"),
                 (self.unnamed, f"in memfds and removed shared-memory files {whose} processes hold"),
                 (self.files, f"in {whose} files in {self.shared_memory}"),
                 (self.segments, f"in {whose} SysV shared-memory segments")]
        named = ", ".join(f"{size // MB} MB {what}" for size, what in parts if size)
        return f"{self.total // MB} MB of memory" + (f" ({named})" if self.total != self.resident else "")


def enforce(accounts: Iterable[str], budget: int, hub: Hub, tell: Tell | None = None,
            shared_memory: Path = SHARED_MEMORY) -> list[str]:
    """For each account over budget (Counted): remove its SysV segments that no process has attached, then its files
    in shared memory, largest first until it is under, then stop its process holding the most (its resident set and
    the files without a name it holds), never its server, until it is under (or only its server is left). Returns
    what was done, one line each; tell(account, what they read) for each."""
    said = []
    in_shared_memory = held_in(shared_memory)  # one walk for the whole class, not one per student
    devices, all_segments = held_memory.tmpfs_devices(), held_memory.segments()
    for account, uid, running in each_account(accounts):
        holding = {p.pid: held_memory.unnamed_files(p.pid, devices) for p in running}
        unnamed = {key: size for held in holding.values() for key, size in held.items()}  # each file once
        theirs = [segment for segment in all_segments if segment.creator == uid]
        shared = in_shared_memory.get(uid, {})
        counted = Counted(sum(p.info["memory_info"].rss for p in running), sum(unnamed.values()),
                          sum(shared.values()), sum(segment.bytes for segment in theirs), shared_memory)
        total = counted.total
        if total <= budget:
            continue
        logged, told = counted.said(f"{account}'s"), counted.said("your")  # what was counted, for the log and them
        detached = [segment for segment in theirs if not segment.attached]
        if detached:  # no process gives them back when stopped
            removed, held = remove_segments(detached, total - budget)
            if removed:
                said.append(f"removed {account}'s {removed} SysV shared-memory segment(s) that no process had "
                            f"attached ({held // MB} MB): {account} held {logged}, over the {budget // MB} MB each "
                            "student may have")
                if tell:
                    tell(account, f"your {removed} SysV shared-memory segment(s) that no process had attached "
                         f"({held // MB} MB) were removed: you held {told}, over the {budget // MB} MB each student "
                         "may have. A segment (shmget) stays in memory after every process of yours ends: remove "
                         "each (shmctl IPC_RMID, or ipcrm -m) when you are done with it.")
                total -= held
        if total > budget and shared:
            removed, held = remove_largest(shared_memory, uid, total - budget)
            said.append(f"removed {account}'s {removed} file(s) in {shared_memory} ({held // MB} MB): {account} "
                        f"held {logged}, over the {budget // MB} MB each student may have")
            if tell:
                tell(account, f"your {removed} file(s) in {shared_memory} ({held // MB} MB) were removed: with "
                     f"them you held {told}, over the {budget // MB} MB each student may have. Files there are "
                     "memory: keep your data in your home folder.")
            total -= held
        freed: set[tuple[int, int]] = set()

        def holds(process: psutil.Process) -> int:
            """Its resident bytes and those of the files without a name it holds, not counted freed yet."""
            return process.info["memory_info"].rss + sum(size for key, size in holding[process.pid].items()
                                                         if key not in freed)

        for process in sorted((p for p in running if not hub.started(p)), key=holds, reverse=True):
            if total <= budget:
                break
            size = holds(process)
            command = stop(process)
            if command is None:
                continue
            freed.update(holding[process.pid])  # another process may hold one too: the next look sees it there
            said.append(f"stopped {account}'s process {process.pid} ({command}, {size // MB} MB): {account}'s "
                        f"processes held {logged}, over the {budget // MB} MB each student may have")
            if tell:
                tell(account, f"your process {process.pid} ({command}, {size // MB} MB) was stopped: your "
                     f"processes held {told}, over the {budget // MB} MB each student may have. Shut down the "
                     "kernels you do not use (Kernel > Shut Down Kernel) and keep less in the one you work in; your "
                     "notebooks are as you last saved them.")
            total -= size
    return said


def table_slots(pid: int) -> int:
    """The slots of the process's descriptor table (at least as many as it has open); 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next((int(line.split()[1]) for line in status if line.startswith("FDSize:")), 0)
    except (OSError, ValueError):
        return 0


def enforce_descriptors(accounts: Iterable[str], hub: Hub, tell: Tell | None = None,
                        budget: int = DESCRIPTOR_SLOTS) -> list[str]:
    """Before the looks that stat each descriptor: for each account whose processes' descriptor tables hold more than
    budget slots together, stop its processes with the most, never its server, until it is under. Returns what was
    done, one line each; tell(account, what they read) for each."""
    said = []
    for account, _, running in each_account(accounts):
        slots = {p.pid: table_slots(p.pid) for p in running}
        total = sum(slots.values())
        for process in sorted((p for p in running if not hub.started(p)), key=lambda p: slots[p.pid], reverse=True):
            if total <= budget:
                break
            command = stop(process)
            if command is None:
                continue
            said.append(f"stopped {account}'s process {process.pid} ({command}, {slots[process.pid]} descriptor "
                        f"slots): {account}'s processes held {total}, over the {budget} each student may have")
            if tell:
                tell(account, f"your process {process.pid} ({command}) was stopped: your processes held {total} "
                     f"open-file slots together, over the {budget} each student may have. Close the files you "
                     "open (a `with open(...)` block closes it), and shut down the kernels you do not use.")
            total -= slots[process.pid]
    return said


def held_in(root: Path) -> dict[int, dict[tuple[int, int], int]]:
    """{uid: {(device, inode): bytes in memory}} of the entries under root (a file linked twice counts once; a folder
    nested past what a path reaches counts over any share): exchange_share.owned_blocks, which follows no link."""
    return exchange_share.owned_blocks(root) if root.is_dir() else {}


def remove_segments(detached: list[held_memory.Segment], at_least: int) -> tuple[int, int]:
    """Remove SysV segments that no process has attached, largest first, until at_least bytes are freed: (segments
    removed, bytes freed). Stopping processes cannot give that memory back: no process holds it."""
    removed = freed = 0
    for segment in sorted(detached, key=lambda segment: segment.bytes, reverse=True):
        if freed >= at_least or not segment.bytes:
            break
        if held_memory.remove_detached(segment):
            removed, freed = removed + 1, freed + segment.bytes
    return removed, freed


def remove_largest(root: Path, uid: int, at_least: int) -> tuple[int, int]:
    """Remove uid's largest entries in root (a file, or a folder with all in it) until at_least bytes are freed:
    (entries removed, bytes freed). Each is removed by its name in root, opened once, no link followed: shutil.rmtree
    with dir_fd removes a folder through the folders it opens, so a folder swapped for a link leads nowhere else."""
    where = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        sizes = []
        for name in os.listdir(where):
            try:
                info = os.stat(name, dir_fd=where, follow_symlinks=False)
            except OSError:  # gone since it was listed
                continue
            if info.st_uid == uid and stat.S_ISREG(info.st_mode):
                sizes.append((info.st_blocks * exchange_share.BLOCK, name, False))
            elif info.st_uid == uid and stat.S_ISDIR(info.st_mode):
                sizes.append((sum(held_in(root / name).get(uid, {}).values()), name, True))
        removed = freed = 0
        for size, name, folder in sorted(sizes, reverse=True):
            if freed >= at_least:
                break
            try:
                shutil.rmtree(name, dir_fd=where) if folder else os.unlink(name, dir_fd=where)
            except (OSError, RecursionError):  # a folder nested too deep: what was removed stays removed
                continue
            removed, freed = removed + 1, freed + size
        return removed, freed
    finally:
        os.close(where)


def tell_in(folder: Path, account: str, said: str) -> None:
    try:
        limits_notes.leave(folder, account, said)
    except OSError as error:  # the stop stands; the hub's log has it
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} could not leave {account} a note in {folder}: {error}",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perfaudit.hub.watchdog", description=__doc__.splitlines()[0])
    parser.add_argument("group", help="the students' group (nbgrader-<course id>)")
    parser.add_argument("--memory", required=True, help="each student's share, e.g. 2G")
    parser.add_argument("--exchange", help="nbgrader's exchange: each student's bytes there kept under --disk")
    parser.add_argument("--disk", help="each student's share of the exchange, e.g. 1G (with --exchange)")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between two looks (default 2)")
    parser.add_argument("--limits-notes", type=Path, help="the folder where each stop is left as a note for its "
                        "student, told on their next feedback page (perfaudit/serve/limits_notes.py)")
    parser.add_argument("--hub-pid", type=int, default=os.getppid(),
                        help="the JupyterHub process, whose children are the servers (default: this one's parent, "
                        "the hub that starts it as a service)")
    args = parser.parse_args(argv)
    hub = Hub(args.hub_pid)
    tell = partial(tell_in, args.limits_notes) if args.limits_notes else None
    budget = parse_bytes(args.memory)
    if bool(args.exchange) != bool(args.disk):
        parser.error("--exchange and --disk go together")
    share = parse_bytes(args.disk) if args.disk else 0
    while True:
        students = members(args.group)
        said = enforce_descriptors(students, hub, tell)  # first: what the looks below cost is then bounded
        said += enforce(students, budget, hub, tell)
        if args.exchange:
            try:
                said += exchange_share.enforce(students, args.exchange, share, hub, tell)
            except Exception as error:  # noqa: BLE001 - whatever a student left there, memory is still kept
                said.append(f"the exchange's shares were not looked at this time: {type(error).__name__}: "
                            f"{str(error)[:200]}")
        for line in said:
            print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}", flush=True)
        time.sleep(args.every)


if __name__ == "__main__":
    sys.exit(main())
