"""Each student's bytes in the exchange, kept under their share where its file system has no user quotas (as root).

Every account writes the exchange (inbound/ is 3733, the root 1777), and nbgrader's size limit is its submit's own,
on the student's side: a student copying into inbound/ from a terminal is limited by the disk alone, and a full
exchange refuses every classmate's submission. User quotas (setquota) are the kernel's way; where the exchange's file
system has none (a kernel built without them, tmpfs before Linux 6.6), the hub's `limits` service
(perfaudit/hub/watchdog.py) does what a quota would: it adds up, every few seconds, the blocks each student owns
under the exchange (each inode once, no link followed), and the files their processes hold open for writing there
(a file removed while open still fills the disk), and stops, while a student is over their share, each of that
student's processes writing there; never their server, never another account's, and nothing they wrote is changed.
What one student can write past their share is what their writers write in one look's interval.
"""

import errno
import os
import pwd
import stat
from collections.abc import Iterable
from pathlib import Path

import psutil

BLOCK = 512  # st_blocks counts 512-byte blocks: what a file takes of the disk (a sparse file takes little)


# What a folder that cannot be read by its path counts for: nested past the longest path the kernel takes (PATH_MAX,
# about 2000 levels of one-letter names), its contents cannot be seen, so its owner is taken to be over any share.
UNREADABLE = 2**62


def owned_blocks(root: str | Path) -> dict[int, dict[tuple[int, int], int]]:
    """{uid: {(device, inode): bytes on disk}} of everything under root, no link followed; an entry gone or closed
    to root (nothing is, but a file system may say so) is skipped, and so is a mount point's other file system.
    Walked with a list of folders still to read, not by recursion: a student's folders nested thousands deep are
    one more entry each, where os.walk (recursive before Python 3.12) would stop the service; a folder nested too
    deep to read by its path counts UNREADABLE for its owner."""
    found: dict[int, dict[tuple[int, int], int]] = {}
    info = os.lstat(root)
    device, folders = info.st_dev, [(os.fspath(root), info)]
    while folders:
        folder, parent = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as error:
            if error.errno == errno.ENAMETOOLONG:
                found.setdefault(parent.st_uid, {})[(parent.st_dev, parent.st_ino)] = UNREADABLE
            continue  # else gone or closed since it was seen
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as error:
                if error.errno == errno.ENAMETOOLONG:  # its folder's owner nested it there
                    found.setdefault(parent.st_uid, {})[(parent.st_dev, parent.st_ino)] = UNREADABLE
                continue
            if info.st_dev != device:
                continue  # another file system mounted here: neither counted nor entered
            found.setdefault(info.st_uid, {})[(info.st_dev, info.st_ino)] = info.st_blocks * BLOCK
            if stat.S_ISDIR(info.st_mode):
                folders.append((entry.path, info))
    return found


def open_for_writing(process: psutil.Process, device: int) -> dict[tuple[int, int], int]:
    """{(device, inode): bytes on disk} of the files the process holds open for writing on the exchange's file system,
    removed ones included: /proc/<pid>/fd/<n> reaches the inode whatever became of its name."""
    held = {}
    fds = f"/proc/{process.pid}/fd"
    try:
        numbers = os.listdir(fds)
    except OSError:
        return held  # gone, or a zombie
    for number in numbers:
        try:
            info = os.stat(f"{fds}/{number}")
            with open(f"/proc/{process.pid}/fdinfo/{number}") as fdinfo:
                flags = int(next(line for line in fdinfo if line.startswith("flags:")).split()[1], 8)
        except (OSError, StopIteration, ValueError):
            continue
        if info.st_dev == device and stat.S_ISREG(info.st_mode) and flags & os.O_ACCMODE != os.O_RDONLY:
            held[(info.st_dev, info.st_ino)] = info.st_blocks * BLOCK
    return held


def enforce(accounts: Iterable[str], exchange: str | Path, share: int, server: str) -> list[str]:
    """Stop, for each account whose bytes in the exchange are over share, every process of it but its server that
    holds a file there open for writing. Returns what was done, one line each."""
    try:
        device = os.lstat(exchange).st_dev
    except FileNotFoundError:
        return []  # not made yet (make hub makes it before the hub starts)
    owned = owned_blocks(exchange)
    said = []
    for account in accounts:
        try:
            uid = pwd.getpwnam(account).pw_uid
        except KeyError:
            continue
        theirs = [p for p in psutil.process_iter(["uids", "cmdline"]) if p.info["uids"] and p.info["uids"].real == uid]
        writing = {process: open_for_writing(process, device) for process in theirs}
        blocks = {**owned.get(uid, {})}
        for held in writing.values():
            blocks.update(held)
        total = sum(blocks.values())
        if total <= share:
            continue
        for process, held in writing.items():
            command = " ".join(process.info["cmdline"] or [])
            if not held or server in command:
                continue
            try:
                process.kill()
            except psutil.NoSuchProcess:
                continue
            held_there = ("has folders there nested too deep to be read" if total >= UNREADABLE else
                          f"has {total // 2**20} MB there")
            said.append(f"stopped {account}'s process {process.pid} ({command[:80]}), writing in the exchange: "
                        f"{account} {held_there}, over the {share // 2**20} MB each student may have; what they "
                        "wrote is left as it is")
    return said
