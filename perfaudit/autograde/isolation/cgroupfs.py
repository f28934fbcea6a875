"""Where this process's cgroups are, read one way for the grader's memory groups (memory.py) and the hub's groups for
each person (perfaudit/hub/person_groups.py): the cgroup file systems mounted (/proc/<pid>/mountinfo), and the
process's group in each (/proc/<pid>/cgroup) as a folder under its mount."""

import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mounted:
    version: int  # 1 or 2
    root: str  # the group mounted there: "/", or deeper in a cgroup namespace or a bind mount
    point: str  # where it is mounted
    controllers: tuple[str, ...]  # v1: the controllers of its mount options; v2: those its root offers, () unread


def mounted(proc: str | os.PathLike[str] = "/proc/self") -> list[Mounted]:
    """Each cgroup file system mounted, in mountinfo's order; none where it cannot be read."""
    found = []
    for line in _lines(Path(proc) / "mountinfo"):
        before, sep, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        root, point, fstype = unescape(fields[3]), unescape(fields[4]), tail[0]
        if fstype == "cgroup2":
            offered = _lines(Path(point) / "cgroup.controllers")
            found.append(Mounted(2, root, point, tuple(offered[0].split()) if offered else ()))
        elif fstype == "cgroup":
            found.append(Mounted(1, root, point, tuple(tail[2].split(","))))
    return found


def own_groups(proc: str | os.PathLike[str] = "/proc/self") -> dict[str, str]:
    """{controller: the process's group} from /proc/<pid>/cgroup; "" is v2's; {} where it cannot be read."""
    found = {}
    for line in _lines(Path(proc) / "cgroup"):
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def own_dir(mount: Mounted, own: str | None) -> str | None:
    """The group own (a path in /proc/<pid>/cgroup) as a folder under mount, or None where it lies outside what is
    mounted there, or is no folder."""
    if own is None:
        return None
    if mount.root == "/":
        relative = own
    elif own == mount.root or own.startswith(mount.root + "/"):
        relative = own[len(mount.root):]
    else:
        return None
    parts = [p for p in relative.split("/") if p]
    if any(p in (".", "..") for p in parts):  # a cgroup namespace shows groups outside it as /../..
        return None
    path = os.path.join(mount.point, *parts)
    return path if os.path.isdir(path) and not os.path.islink(path) else None


def unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as \\ooo."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []
