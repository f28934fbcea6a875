"""nbgrader's exchange, as the service reads and writes it: inbound submissions in, feedback out.

A submission is a folder `<student>+<assignment>+<timestamp>+<random>` in `<root>/<course>/inbound/`, written by
the student's own `nbgrader submit` (so its owner is the student's account), with `timestamp.txt` and, written
last, `submission_secret.txt`. Collect copies it into submitted/<student>/<assignment>/ as `nbgrader collect`
does, but one named submission at a time (collect takes each student's newest) and regular files only, each
opened without following a link. Release writes each notebook's page to `<root>/<course>/feedback/<hash>.html`,
the hash being nbgrader's notebook_hash of the submission's secret and the notebook's name, as `nbgrader
release_feedback` names it and the student's Fetch Feedback looks for it; written to a temporary name and moved,
so the student never fetches half a page.
"""

import os
import pwd
import stat
import time
from collections.abc import Container, Sequence
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default import Exchange
from nbgrader.utils import notebook_hash, parse_utc
from traitlets.config import Config

from perfaudit.autograde.isolation import submission
from perfaudit.bookkeeping.coursedir import remove_tree
from perfaudit.grade import task
from perfaudit.serve.errors import UnreadableSubmission

SECRET = "submission_secret.txt"


def course_path(config: Config, coursedir: CourseDirectory) -> Path:
    """<Exchange.root>/<course id>: the course's folder in the exchange nbgrader_config.py names."""
    return Path(Exchange(config=config, coursedir=coursedir).root) / coursedir.course_id


class Odd(NamedTuple):
    """An entry of inbound/ that is not a submission the service can read: skipped, recorded, told to its maker."""

    name: str
    account: str  # the account that made it (whatever its name says)
    why: str  # for that student and the instructor's log


def arrivals(inbound: str | Path, assignment: str, known: Container[str]) -> list[tuple[str, str, datetime]]:
    """[(folder name, student id, the timestamp its name gives)] of complete submissions not in known, oldest first."""
    return scan(inbound, assignment, known)[0]


def scan(inbound: str | Path, assignment: str, known: Container[str], settle_s: float = 0.0
         ) -> tuple[list[tuple[str, str, datetime]], list[Odd]]:
    """What inbound/ holds that is not in known: (complete submissions, oldest first; odd entries).

    Complete: the secret, which submit writes last, is there. Names are split as nbgrader's collect splits them;
    another assignment's submissions are left alone. Odd: whatever a student may leave there that the service could
    not read or should not follow (a link, a FIFO, a file, a folder they closed to the course's group, a name
    nbgrader's submit never writes). Nothing is followed and no error of one entry stops the scan: each is its maker's
    problem. A folder the service may not open is odd only once it has not changed for settle_s seconds (a copy in
    progress under a strict umask is closed for a moment, until submit sets its modes).
    """
    arrived: list[tuple[str, str, datetime]] = []
    odd: list[Odd] = []
    try:
        names = os.listdir(inbound)
    except FileNotFoundError:
        return arrived, odd
    for name in names:
        if name in known:
            continue
        try:
            info = os.lstat(Path(inbound) / name)
        except FileNotFoundError:
            continue  # gone since it was listed
        parts = name.rsplit("+", 3)
        if len(parts) >= 3 and parts[1] != assignment and name.isprintable():
            continue  # another assignment's submission: not this service's
        why, complete = _examine(Path(inbound) / name, info, parts, settle_s)
        if why:
            odd.append(Odd(name, account_of(info.st_uid), why))
        elif complete:
            arrived.append((name, parts[0], parse_utc(parts[2])))
    return sorted(arrived, key=lambda item: (item[2], item[0])), odd


def _examine(path: Path, info: os.stat_result, parts: list[str], settle_s: float) -> tuple[str | None, bool]:
    """(why the entry is odd or None, whether it is a complete submission)."""
    if not stat.S_ISDIR(info.st_mode):
        kind = "a file" if stat.S_ISREG(info.st_mode) else submission.kind(info.st_mode)
        return f"{kind}, not a submission's folder", False
    if len(parts) < 3 or not path.name.isprintable():
        return "a name nbgrader's submit does not write", False
    try:
        parse_utc(parts[2])
    except (ValueError, OverflowError):
        return "a name nbgrader's submit does not write (its time cannot be read)", False
    closed = (f"the grader may not open it (mode {oct(stat.S_IMODE(info.st_mode))}, owner {account_of(info.st_uid)}): "
              "submit again from the Assignment List and leave the modes of the exchange's folders as they are")
    try:
        folder = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except PermissionError:
        return (closed, False) if time.time() - info.st_ctime >= settle_s else (None, False)
    except OSError:
        return None, False  # replaced or removed since: looked at again at the next scan
    try:
        os.listdir(folder)
        handle = os.open(SECRET, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except FileNotFoundError:
        return None, False  # still being written: submit writes the secret last
    except PermissionError:
        return (closed, False) if time.time() - info.st_ctime >= settle_s else (None, False)
    except OSError as error:
        return f"its {SECRET} cannot be read ({error.strerror})", False
    finally:
        os.close(folder)
    with os.fdopen(handle, "rb") as secret_file:
        if not stat.S_ISREG(os.fstat(secret_file.fileno()).st_mode):
            return f"its {SECRET} is not a regular file", False
        return None, os.fstat(secret_file.fileno()).st_size > 0


def account_of(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def shown(name: str) -> str:
    """An entry's name as the log and the instructor read it: quoted, every byte a name may hold written out."""
    return repr(name)


def owner(path: str | Path) -> str:
    """The account that owns the submission's folder: the student who ran submit."""
    return account_of(os.lstat(path).st_uid)


def notebooks(path: str | Path) -> list[str]:
    """The notebook names (no suffix) at the top of the submission: those Fetch Feedback looks for."""
    return sorted(p.stem for p in Path(path).glob("*.ipynb") if not p.is_symlink())


def secret(path: str | Path) -> str:
    return os.fdopen(os.open(Path(path) / SECRET, os.O_RDONLY | os.O_NOFOLLOW)).read()


def unsafe(path: str | Path, ignore: Sequence[str] = ()) -> str | None:
    """Why the submission's folder is not read (a link, a FIFO, too big), or None. ignore: the course's
    CourseDirectory.ignore (.git, runs/): entries matching it are neither counted nor refused, as plain nbgrader's
    refusal and the batch's diagnosis leave them (nbgrader's own submit leaves most of them out already)."""
    found = submission.problems(path, ignore)
    return submission.describe(found) if found else None


def collect(path: str | Path, submitted_folder: str | Path, ignore: Sequence[str] = ()) -> None:
    """Replace submitted/<student>/<assignment>/ with this submission's regular files, byte for byte; names
    matching ignore, and all under them, are not copied (nbgrader's collect leaves them out too).

    Raises UnreadableSubmission, leaving submitted/ as it was, when the submission cannot be read whole (its student
    closed a folder or a file of it, or put a link there, since the service noticed it)."""
    why = unsafe(path, ignore)
    if why:
        raise UnreadableSubmission(why)
    try:
        files = task.read_tree(path, ignore=ignore)
    except OSError as error:
        raise UnreadableSubmission(f"it could not be read ({error.strerror}: {error.filename})") from error
    remove_tree(submitted_folder)
    Path(submitted_folder).mkdir(parents=True)
    task.write_tree(files, submitted_folder)


def release(course: str | Path, submission_secret: str, notebook: str, page: bytes) -> Path:
    """Put one notebook's feedback page (bytes) where that submission's Fetch Feedback finds it."""
    outbound = Path(course) / "feedback"
    if not outbound.is_dir():
        outbound.mkdir(parents=True)
        outbound.chmod(0o711)  # as release_feedback makes it: students list nothing, open their own hash
    target = outbound / f"{notebook_hash(secret=submission_secret, notebook_id=notebook)}.html"
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(page)
    tmp.chmod(0o644)
    os.replace(tmp, target)
    return target
