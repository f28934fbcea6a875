"""What a submission may hold: regular files only, each opened without following a link, sizes capped.

The grader reads a student's submitted folder in one place, here: to stage the copy a sandboxed kernel starts
from, and to refuse a submission that holds anything else (a symlink, FIFO, socket, device, hard link, or a file
or folder over the limits) before nbgrader's own copy step could follow it. Each refusal names the entry and why.
"""

import fnmatch
import glob
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from traitlets.config import Config
from perfaudit.autograde.errors import UnsafeSubmission

class OverLimits(ValueError):
    """What is being read of a submission passed the limits below (it changed since they were checked)."""


MAX_FILE_BYTES = 64 * 2**20
MAX_TOTAL_BYTES = 256 * 2**20
MAX_ENTRIES = 1000
# Folders one in another: the course's submission nests two or three. os.walk recurses (Python 3.11), so a folder
# nested near the interpreter's recursion limit (1000) would stop the grader with RecursionError, not refuse it.
MAX_DEPTH = 64
# A path within the submission: the graders copy it under folders of their own (a Dask worker's scratch space is
# 130 characters deep), and a path the student's side takes (the kernel's 4096, PATH_MAX) would fail the grader's copy
# there, which reads as the grader's own fault and stops grading for everyone.
MAX_PATH_CHARS = 1024


def kind(mode: int) -> str:
    """What an entry that is not a regular file is, as a student reads it ("a FIFO")."""
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "not a regular file"


def ignored(name: str, ignore: Sequence[str]) -> bool:
    """Whether an entry's name matches one of the course's ignore patterns (CourseDirectory.ignore), as nbgrader's
    collect and the batch match them when they copy a submission."""
    return any(fnmatch.fnmatch(name, pattern) for pattern in ignore)


def ignored_by_autograde(path: str | Path, ignore: Sequence[str]) -> bool:
    """Whether plain `nbgrader autograde` leaves the entry at `path` out when it copies a submission's other files:
    nbgrader.utils.is_ignored, a glob of each pattern in the entry's folder. It ignores less than a match of the name
    (ignored): a name starting with '.' matches only a pattern that does (`.x.pyc` is copied), and under a folder
    whose path holds glob characters nothing is ignored unless each such part matches itself as a pattern (`*/x.pyc`
    is left out, `a[1]/x.pyc` copied). Written here, as nbgrader writes it (importing nbgrader takes seconds:
    course_ignore), but with the folder's own path escaped: globbed as a pattern, 26 folders named `*`, each beside a
    link `a -> *`, expand to 2^26 paths, and the grader would not come back."""
    folder = os.path.dirname(str(path))
    if not all(fnmatch.fnmatchcase(part, part) for part in Path(folder).parts if glob.has_magic(part)):
        return False  # nbgrader's glob of the folder as a pattern does not find the folder itself
    return any(str(path) in glob.glob(os.path.join(glob.escape(folder), pattern)) for pattern in ignore)


def left_out(path: str | Path, ignore: Sequence[str]) -> bool:
    """Whether every copy of a submission leaves the entry at `path` out: its name matches the course's ignore list,
    and plain autograde's glob leaves it out too (ignored_by_autograde). What is left out is neither checked nor
    counted nor digested (grade/run.py's fingerprint): what is not is graded."""
    return ignored(os.path.basename(path), ignore) and ignored_by_autograde(path, ignore)


class Tally:
    """A submission counted against its limits, entry by entry. Both walks feed one: the check before a read
    (problems) and the read itself (grade/task.read_tree), which a student can change under, so both refuse by the
    same rules and in the same words. Each method returns why the entry passes a limit, or None.

    owner: the uid that owns the submission's folder (the student's on the hub, the instructor's in submitted/).
    A file of theirs with other links is read as any file (an instructor's backup made with `cp -al` linked every
    submission, and a refusal zeroed the class); a linked file another account owns is refused: where the kernel lets
    anyone link what they cannot read (fs.protected_hardlinks=0), it could be the answer key, or a classmate's
    notebook, whose own submission a refusal of any linked file zeroed (a fresh attacker)."""

    def __init__(self, owner: int | None = None) -> None:
        self.owner = owner
        self.entries = 0
        self.bytes = 0

    @staticmethod
    def folder(depth: int) -> str | None:
        return f"a folder nested {depth} deep, over the {MAX_DEPTH} a submission may have" \
            if depth >= MAX_DEPTH else None

    @staticmethod
    def path(relative: str) -> str | None:
        return f"a path of {len(relative)} characters, over the {MAX_PATH_CHARS} a submission's paths may have" \
            if len(relative) > MAX_PATH_CHARS else None

    def file(self, size: int, links: int, uid: int) -> str | None:
        """A regular file of size bytes, links names and owner uid: counted, unless it is refused."""
        if links > 1 and uid != self.owner:
            return (f"a hard link to a file another account owns (uid {uid}, not {self.owner}): submissions may hold "
                    "their own files only")
        if size > MAX_FILE_BYTES:
            return f"{size} bytes, over the {MAX_FILE_BYTES // 2**20} MB a file may have"
        self.bytes += size
        return None

    def whole(self, not_counted: Sequence[str] = ()) -> str | None:
        """After each folder: whether all counted so far passes the submission's limits."""
        if self.entries <= MAX_ENTRIES and self.bytes <= MAX_TOTAL_BYTES:
            return None
        unlisted = f"; {', '.join(not_counted)} not counted" if not_counted else ""
        return (f"where the submission passed its limits: {self.entries} files and folders and "
                f"{self.bytes // 2**20} MB counted so far, over the {MAX_ENTRIES} entries or "
                f"{MAX_TOTAL_BYTES // 2**20} MB a submission may hold{unlisted}")


def shown(relative: str) -> str:
    """A path as a refusal names it: a path too long to read is cut."""
    return relative if len(relative) <= MAX_PATH_CHARS else relative[:80] + "..."


def problems(folder: str | Path, ignore: Sequence[str] = ()) -> list[tuple[str, str]]:
    """[(relative path, why)] for every entry of folder the grader refuses to read; [] when all is well.

    ignore: the course's CourseDirectory.ignore (course_ignore), names nbgrader never copies and the kernel never
    gets (.git, runs/, checkpoints): entries matching them, and all under them, are neither refused nor counted, so
    the limits apply to what is graded. Only where every copy leaves them out: an entry plain autograde would copy
    all the same (ignored_by_autograde) is counted and checked, since that copy follows links."""
    folder, found = Path(folder), []
    if folder.is_dir() and not os.access(folder, os.R_OK | os.X_OK):
        return [(".", f"a folder the grader may not open (mode {oct(stat.S_IMODE(folder.stat().st_mode))})")]
    tally = Tally(folder.stat().st_uid if folder.is_dir() else None)

    def closed(error: OSError) -> None:  # a folder this account may not list (its student closed it)
        if isinstance(error, FileNotFoundError):
            return  # gone (or never there): nothing in it to refuse, as before
        where = Path(error.filename or folder)
        found.append((str(where.relative_to(folder)) if where != folder else ".",
                      f"a folder the grader may not open ({error.strerror}{_mode_of(where)})"))

    for root, dirs, files in os.walk(folder, onerror=closed):  # never follows links: a linked folder is a name
        relative = Path(root).relative_to(folder)
        here = str(relative)
        why = tally.folder(len(relative.parts))
        if why:
            found.append((here, why))
            break
        for name in sorted(dirs + files):
            path = Path(root) / name
            rel = str(path.relative_to(folder))
            why = tally.path(rel)
            if why:
                found.append((shown(rel), why))
                if name in dirs:
                    dirs.remove(name)
                continue
            if left_out(path, ignore):
                if name in dirs:
                    dirs.remove(name)
                continue
            try:
                info = os.lstat(path)
            except OSError as error:  # its folder may be listed, not entered
                found.append((rel, f"out of the grader's reach ({error.strerror}{_mode_of(Path(root))})"))
                if name in dirs:
                    dirs.remove(name)
                continue
            tally.entries += 1
            if stat.S_ISDIR(info.st_mode):
                if not os.access(path, os.R_OK | os.X_OK):
                    found.append((rel, f"a folder the grader may not open (mode {oct(stat.S_IMODE(info.st_mode))})"))
                    dirs.remove(name)
                continue
            if stat.S_ISREG(info.st_mode) and not os.access(path, os.R_OK):
                found.append((rel, f"a file the grader may not read (mode {oct(stat.S_IMODE(info.st_mode))})"))
            elif not stat.S_ISREG(info.st_mode):
                found.append((rel, f"{kind(info.st_mode)}: submissions may hold regular files only"))
            else:
                why = tally.file(info.st_size, info.st_nlink, info.st_uid)
                if why:
                    found.append((rel, why))
        why = tally.whole(ignore)
        if why:
            found.append((here, why))
            break
    return found


def _mode_of(path: Path) -> str:
    try:
        return f", {path.name or path} has mode {oct(stat.S_IMODE(os.lstat(path).st_mode))}"
    except OSError:
        return ""


def course_ignore(config: Config) -> list[str]:
    """The course's CourseDirectory.ignore: what nbgrader leaves out when it copies a submission."""
    from nbgrader.coursedir import CourseDirectory  # seconds to import: see submitted_folder

    return list(CourseDirectory(config=config).ignore)


def describe(found: list[tuple[str, str]]) -> str:
    return "; ".join(f"'{rel}' is {why}" for rel, why in found)


def stage(folder: str | Path, into: str | Path, ignore: Sequence[str] = ()) -> None:
    """Copy folder's regular files into `into` (a folder of the grader's), each opened with O_NOFOLLOW.

    Raises UnsafeSubmission, copying nothing, when the folder holds anything else.
    """
    found = problems(folder, ignore)
    if found:
        raise UnsafeSubmission(describe(found))
    folder, into = Path(folder), Path(into)
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not ignored(d, ignore)]
        for name in files:
            if ignored(name, ignore):
                continue
            source = Path(root) / name
            target = into / source.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped since problems() looked
                    raise UnsafeSubmission(f"'{source.relative_to(folder)}' changed while it was read")
                target.write_bytes(handle.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES])


def submitted_folder(config: Config, resources: dict[str, Any]) -> Path | None:
    """The student's submitted folder of the notebook being autograded, or None outside autograde."""
    # nbgrader's CourseDirectory loads its gradebook's SQLAlchemy (seconds): only when autograding, as
    # grade/intake.py and grade/diagnose.py import this module for its rules alone
    from nbgrader.coursedir import CourseDirectory

    info = resources.get("nbgrader", {})
    if not info.get("student") or not info.get("assignment"):
        return None
    coursedir = CourseDirectory(config=config)
    folder = Path(coursedir.format_path(coursedir.submitted_directory, info["student"], info["assignment"]))
    return folder if folder.is_dir() else None
