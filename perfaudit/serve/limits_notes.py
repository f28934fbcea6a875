"""What the hub's limits service leaves for the grading service to tell a student: one small file a note.

The limits service (perfaudit/hub/watchdog.py, as root) stops a student's process past their memory or exchange
share; the student reads what it did where the grading service already tells them what it could not read of
theirs: the top of their next feedback page (Service.untold). The folder is in the hub's state folder, which only
root writes, so no link can be put at its name; it is the course's owner's (0700: no student reads a classmate's
note), and root only ever creates new files in it (O_EXCL: nothing there is followed or overwritten), each
handed to that owner, who reads and removes it.
"""

import json
import os
import stat
import time
from pathlib import Path
from typing import NamedTuple


class Note(NamedTuple):
    name: str  # the file's: unique, so a note is recorded once
    student: str
    said: str  # what the student reads
    at: float  # when it happened (seconds since the epoch)


def prepare(folder: str | Path, owner_uid: int) -> None:
    """Make folder (as root, in root's state folder) the owner's alone."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chown(folder, owner_uid, -1, follow_symlinks=False)
    os.chmod(folder, 0o700, follow_symlinks=False)


def leave(folder: str | Path, student: str, said: str) -> None:
    """A note for student, as a new file that the folder's owner owns."""
    where = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        owner = os.fstat(where).st_uid
        name = f"{time.time_ns()}-{os.getpid()}-{student}.json"
        handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=where)
        with os.fdopen(handle, "w", encoding="utf-8") as note:
            json.dump({"student": student, "said": said, "at": time.time()}, note)
            os.fchown(note.fileno(), owner, -1)
    finally:
        os.close(where)


def read(folder: str | Path) -> list[Note]:
    """The notes left in folder, oldest first; a file that is not one is skipped. The caller records each, then
    removes it (remove): a note is never lost, and its unique name keeps it from being recorded twice."""
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    notes = []
    for name in names:
        try:
            with open(os.open(Path(folder) / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK),
                      encoding="utf-8") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    continue
                found = json.load(handle)
            notes.append(Note(name, str(found["student"]), str(found["said"]), float(found["at"])))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return notes


def remove(folder: str | Path, note: Note) -> None:
    try:
        (Path(folder) / note.name).unlink()
    except FileNotFoundError:
        pass
