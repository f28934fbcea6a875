"""Each student's bytes in the exchange, kept under their share where its file system has no user quotas (as root).

Every account writes the exchange (inbound/ is 3733, the root 1777), and nbgrader's size limit is its submit's own,
on the student's side: a student copying into inbound/ from a terminal is limited by the disk alone, and a full
exchange refuses every classmate's submission. User quotas (setquota) are the kernel's way; where the exchange's file
system has none (a kernel built without them, tmpfs before Linux 6.6), the hub's `limits` service
(perfaudit/hub/watchdog.py) does what a quota would: it adds up, every few seconds, the blocks each student owns
under the exchange (each inode once, no link followed), and the files on the exchange's file system that have no
name left and that their processes hold, by any descriptor (read-only included) or any mapping (mmap outlives its
descriptor): a file removed while held still fills the disk, and counts for each student holding it. While a
student is over their share it stops every process of that student but their server (the process the hub itself
started: perfaudit/hub/servers.py): not only those that hold a file there, since a loop in a terminal starts a new
short-lived writer each time one is stopped, and a process that only makes names (empty files, folders) holds
nothing there. Never another account's, and nothing they wrote is changed: their instructor removes it (the note
says so). What one student can write past their share is what their processes write in one look's interval.
"""

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import psutil

from perfaudit.hub.servers import Hub, each_account, stop

BLOCK = 512  # st_blocks counts 512-byte blocks: what a file takes of the disk (a sparse file takes little)
ENTRY = 4096  # what an entry counts at least: an empty file takes no block but an inode (200 000 of them: 800 MB)


# What a folder nested deeper than MAX_DEPTH counts for: its owner is taken to be over any share. The walk holds one
# descriptor per level, so a depth without bound would be a number of descriptors without bound.
UNREADABLE = 2**62
MAX_DEPTH = 256


def owned_blocks(root: str | Path) -> dict[int, dict[tuple[int, int], int]]:
    """{uid: {(device, inode): bytes on disk}} of everything under root, no link followed; an entry gone or closed
    to root (nothing is, but a file system may say so) is skipped, and so is a mount point's other file system.

    Walked by descriptor: each folder opened in its opened parent, without following a link, and checked to be the
    folder its entry showed; no path is ever built. A student who swaps a folder for a link while it is walked (to
    inbound/, to a classmate's folder) leads the walk nowhere: root's walk by path once followed such a link, and
    charged a classmate with what it found there. Depth-first with a list of the folders open, not by recursion; a
    folder nested past MAX_DEPTH counts UNREADABLE for the account that made it."""
    found: dict[int, dict[tuple[int, int], int]] = {}
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return found
    device = os.fstat(top).st_dev
    walking = [(top, iter(_entries(top)))]  # the folders open, each with what is left of its entries
    try:
        while walking:
            folder, entries = walking[-1]
            entry = next(entries, None)
            if entry is None:
                os.close(walking.pop()[0])
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone since it was listed
            if info.st_dev != device:
                continue  # another file system mounted here: neither counted nor entered
            found.setdefault(info.st_uid, {})[(info.st_dev, info.st_ino)] = max(info.st_blocks * BLOCK, ENTRY)
            if not stat.S_ISDIR(info.st_mode):
                continue
            if len(walking) > MAX_DEPTH:
                found[info.st_uid][(info.st_dev, info.st_ino)] = UNREADABLE
                continue
            inner = _open_folder(entry.name, folder, info)
            if inner is not None:
                walking.append((inner, iter(_entries(inner))))
    finally:
        for folder, _ in walking:
            os.close(folder)
    return found


def _entries(folder: int) -> list[os.DirEntry]:
    try:
        return list(os.scandir(folder))
    except OSError:
        return []  # closed or gone since it was opened


def _open_folder(name: str, parent: int, seen: os.stat_result) -> int | None:
    """The folder parent/name, opened without following a link, if it is still the folder seen; else None."""
    try:
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return None  # a link now (ELOOP, ENOTDIR), closed or gone
    now = os.fstat(inner)
    if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(inner)  # another folder put in its place since it was seen: looked at by the next walk
        return None
    return inner


class Held(NamedTuple):
    """A file a process holds, by a descriptor or a mapping."""

    bytes: int  # on disk
    unlinked: bool  # no name left: the walk cannot see it, and only those holding it keep it on disk


def held_files(process: psutil.Process, device: int) -> dict[tuple[int, int], Held]:
    """{(device, inode): Held} of the regular files on the exchange's file system the process holds: every open
    descriptor, whatever its mode, and every mapping of a file (/proc/<pid>/map_files reaches the inode of each,
    as /proc/<pid>/fd does, whatever became of its name; a mapping outlives the descriptor it was made from)."""
    held: dict[tuple[int, int], Held] = {}
    proc = f"/proc/{process.pid}"
    try:
        links = [f"{proc}/fd/{number}" for number in os.listdir(f"{proc}/fd")]
        with open(f"{proc}/maps") as maps:  # address perms offset device inode [path]; inode 0: no file behind it
            links += [map_file(proc, fields[0]) for fields in (line.split(maxsplit=5) for line in maps)
                      if len(fields) >= 5 and fields[4] != "0"]
    except OSError:
        return held  # gone, or a zombie
    for link in links:
        try:
            info = os.stat(link)
        except OSError:
            continue  # closed, unmapped or gone since it was listed
        if info.st_dev == device and stat.S_ISREG(info.st_mode):
            held[(info.st_dev, info.st_ino)] = Held(info.st_blocks * BLOCK, info.st_nlink == 0)
    return held


def map_file(proc: str, span: str) -> str:
    """/proc/<pid>/map_files/<start>-<end> of a span as /proc/<pid>/maps writes it: maps pads an address to 8
    digits, map_files does not (00010000 there is 10000 here), so a padded name missed every low mapping."""
    start, end = (int(address, 16) for address in span.split("-"))
    return f"{proc}/map_files/{start:x}-{end:x}"


def enforce(accounts: Iterable[str], exchange: str | Path, share: int, hub: Hub,
            tell: Callable[[str, str], None] | None = None) -> list[str]:
    """Stop, for each account whose bytes in the exchange are over share, every process of it but its server.
    Returns what was done, one line each; tell(account, what they read) for each stop."""
    try:
        device = os.lstat(exchange).st_dev
    except FileNotFoundError:
        return []  # not made yet (make hub makes it before the hub starts)
    owned = owned_blocks(exchange)
    walked = {key for files in owned.values() for key in files}  # counted for their owners already
    said = []
    for account, uid, theirs in each_account(accounts):
        blocks = {**owned.get(uid, {})}
        for process in theirs:  # a file without a name: its holder's, each inode once
            held = held_files(process, device)
            blocks.update({key: file.bytes for key, file in held.items() if file.unlinked and key not in walked})
        total = sum(blocks.values())
        if total <= share:
            continue
        held_there = ("has folders there nested too deep to be read" if total >= UNREADABLE else
                      f"has {total // 2**20} MB there")
        for process in theirs:
            if hub.started(process):
                continue
            command = stop(process)
            if command is None:
                continue
            said.append(f"stopped {account}'s process {process.pid} ({command}): {account} {held_there}, over "
                        f"the {share // 2**20} MB each student may have, and every process of theirs but their "
                        "server is stopped while they are; what they wrote is left as it is")
            if tell:
                yours = ("you have folders there nested too deep to be read" if total >= UNREADABLE else
                         f"you have {total // 2**20} MB there")
                tell(account, f"your process {process.pid} ({command}) was stopped: {yours} in the exchange, "
                     f"over the {share // 2**20} MB each student may have, and while you are over it every program "
                     "you start (kernels, terminals) is stopped. Ask your instructor to remove what you put there "
                     "(a copy made into inbound/ from a terminal, a file a process of yours still held); your "
                     "submissions are left as they are.")
    return said
