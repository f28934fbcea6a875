"""nbgrader's exchange, as the service reads and writes it: inbound submissions in, feedback out.

A submission is a folder `<student>+<assignment>+<timestamp>+<random>` in `<root>/<course>/inbound/`, written by
the student's own `nbgrader submit` (so its owner is the student's account), with `timestamp.txt` and, written
last, `submission_secret.txt`. The service reads a submission only through its folder opened in inbound/ without
following a link (opened): a name its student swaps afterwards, for a link to a classmate's folder or to inbound/
itself, leads nowhere else, and a folder put in its place is not the one noticed. Collect copies it into
submitted/<student>/<assignment>/ as `nbgrader collect` does, but one named submission at a time (collect takes
each student's newest) and regular files only, each opened without following a link. Release writes each
notebook's page to `<root>/<course>/feedback/<hash>.html`, the hash being nbgrader's notebook_hash of the
submission's secret and the notebook's name, as `nbgrader release_feedback` names it and the student's Fetch
Feedback looks for it; written to a temporary name and moved, so the student never fetches half a page.
"""

import os
import pwd
import stat
import time
from collections.abc import Container, Iterator, Sequence
from contextlib import contextmanager
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


def scan(inbound: str | Path, assignment: str, known: Container[str], settle_s: float = 0.0,
         unfinished: dict[str, tuple[int, int]] | None = None) -> tuple[list[tuple[str, str, datetime]], list[Odd]]:
    """What inbound/ holds that is not in known: (complete submissions, oldest first; odd entries).

    Complete: the secret, which submit writes last, is there. Names are split as nbgrader's collect splits them;
    another assignment's submissions are left alone. Odd: whatever a student may leave there that the service could
    not read or should not follow (a link, a FIFO, a file, a folder they closed to the course's group, a name
    nbgrader's submit never writes). Nothing is followed and no error of one entry stops the scan: each is its maker's
    problem. A folder the service may not open is odd only once it has not changed for settle_s seconds (a copy in
    progress under a strict umask is closed for a moment, until submit sets its modes).

    unfinished (the caller's, kept from scan to scan): {name: (mtime, ctime)} of folders seen without their secret,
    each looked at again only once it has changed (a file added, its modes set). Tens of thousands of such folders,
    made in seconds, were opened again at every scan and delayed everyone's submissions by seconds each time.
    """
    arrived: list[tuple[str, str, datetime]] = []
    odd: list[Odd] = []
    try:
        names = os.listdir(inbound)
    except FileNotFoundError:
        return arrived, odd
    if unfinished is not None:
        for gone in set(unfinished) - set(names):
            del unfinished[gone]
    for name in names:
        if name in known:
            continue
        try:
            info = os.lstat(Path(inbound) / name)
        except FileNotFoundError:
            continue  # gone since it was listed
        changed = (info.st_mtime_ns, info.st_ctime_ns)
        if unfinished is not None:
            if unfinished.get(name) == changed:
                continue  # unfinished, and unchanged since
            unfinished.pop(name, None)  # changed: examined again, and kept only if still unfinished
        parts = name.rsplit("+", 3)
        if len(parts) >= 3 and parts[1] != assignment and name.isprintable():
            continue  # another assignment's submission: not this service's
        try:
            why, complete = _examine(Path(inbound) / name, info, parts, settle_s)
            when: datetime | None = parse_utc(parts[2]) if complete and not why else None
        except Exception as error:  # noqa: BLE001 - one entry's surprise (a library's own error) is its maker's
            why, complete = f"the service could not examine it ({type(error).__name__})", False
        if why:
            odd.append(Odd(name, account_of(info.st_uid), why))
        elif complete and when is not None:
            arrived.append((name, parts[0], when))
        elif complete is None and unfinished is not None:
            unfinished[name] = changed
    return sorted(arrived, key=lambda item: (item[2], item[0])), odd


def _examine(path: Path, info: os.stat_result, parts: list[str], settle_s: float
             ) -> tuple[str | None, bool | None]:
    """(why the entry is odd or None, whether it is a complete submission: None for a folder without its secret)."""
    if not stat.S_ISDIR(info.st_mode):
        kind = "a file" if stat.S_ISREG(info.st_mode) else submission.kind(info.st_mode)
        return f"{kind}, not a submission's folder", False
    if len(parts) < 3 or not path.name.isprintable():
        return "a name nbgrader's submit does not write", False
    try:
        parse_utc(parts[2])
    except Exception:  # noqa: BLE001 - ValueError, OverflowError, and python-dateutil's own for a zone like '..'
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
        return None, None  # still being written: submit writes the secret last
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


def maker(inbound: str | Path, name: str) -> str:
    """The account that made inbound/<name>, whatever its name says."""
    try:
        return account_of(os.lstat(Path(inbound) / name).st_uid)
    except OSError:
        return "an account gone since"


def shown(name: str, limit: int | None = None) -> str:
    """An entry's name as the log and the instructor read it: quoted, every byte a name may hold written out; its
    first limit characters, where one is given, and a mark that there is more."""
    quoted = repr(name)
    return quoted if limit is None or len(quoted) <= limit else f"{quoted[:limit]}..."


class Entry(NamedTuple):
    """A submission's folder, opened (opened): every read of it goes through the descriptor."""

    fd: int
    path: Path  # /proc/self/fd/<fd>: the opened folder itself, for what walks by path (submission.problems)
    uid: int  # its owner: the account that made it
    identity: tuple[int, int]  # (device, inode): the folder noticed is the folder read


@contextmanager
def opened(inbound: str | Path, name: str, noticed: Sequence[int] | None = None) -> Iterator[Entry]:
    """inbound/<name> opened without following a link, closed after. Raises FileNotFoundError when it is gone, and
    UnreadableSubmission when it is no folder the grader may open now (a link, closed to the course's group) or not
    the folder noticed (noticed: its identity when the service noticed it)."""
    parent = os.open(inbound, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except FileNotFoundError:
        raise
    except OSError as error:  # ELOOP or ENOTDIR: a link or a file now; EACCES: closed
        raise UnreadableSubmission(f"it is no longer a folder the grader may open ({error.strerror})") from error
    finally:
        os.close(parent)
    try:
        info = os.fstat(fd)
        if noticed is not None and (info.st_dev, info.st_ino) != tuple(noticed):
            raise UnreadableSubmission("its folder was replaced by another since the service noticed it")
        yield Entry(fd, Path(f"/proc/self/fd/{fd}"), info.st_uid, (info.st_dev, info.st_ino))
    finally:
        os.close(fd)


def owner(entry: Entry) -> str:
    """The account that owns the submission's folder: the student who ran submit."""
    return account_of(entry.uid)


def notebooks(entry: Entry, expected: Container[str]) -> list[str]:
    """The assignment's notebooks (expected: their names, no suffix) at the top of the submission, regular files
    only: those Fetch Feedback looks for. No other name gets a page: 200 hard links named n<i>.ipynb got 200 pages,
    kept after their folder went."""
    names = [name for name in os.listdir(entry.fd) if name.endswith(".ipynb") and name[:-len(".ipynb")] in expected]
    return sorted(name[:-len(".ipynb")] for name in names
                  if stat.S_ISREG(os.stat(name, dir_fd=entry.fd, follow_symlinks=False).st_mode))


def secret(entry: Entry) -> str:
    with os.fdopen(os.open(SECRET, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=entry.fd), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UnreadableSubmission(f"its {SECRET} is not a regular file")
        return handle.read(4096).decode("utf-8", "replace")


def unsafe(entry: Entry, ignore: Sequence[str] = ()) -> str | None:
    """Why the submission's folder is not read (a link, a FIFO, too big), or None. ignore: the course's
    CourseDirectory.ignore (.git, runs/): entries matching it are neither counted nor refused, as plain nbgrader's
    refusal and the batch's diagnosis leave them (nbgrader's own submit leaves most of them out already)."""
    found = submission.problems(entry.path, ignore)
    return submission.describe(found) if found else None


def collect(entry: Entry, submitted_folder: str | Path, ignore: Sequence[str] = ()) -> None:
    """Replace submitted/<student>/<assignment>/ with this submission's regular files, byte for byte; names
    matching ignore, and all under them, are not copied (nbgrader's collect leaves them out too).

    Raises UnreadableSubmission, leaving submitted/ as it was, when the submission cannot be read whole (its student
    closed a folder or a file of it, or put a link there, since the service noticed it)."""
    why = unsafe(entry, ignore)
    if why:
        raise UnreadableSubmission(why)
    try:
        files = task.read_tree(".", ignore=ignore, dir_fd=entry.fd, within_limits=True)
    except submission.OverLimits as error:  # checked above, then changed while it was read: its maker's doing
        raise UnreadableSubmission(f"it changed while it was read and passed a submission's limits ({error})") \
            from error
    except OSError as error:
        raise UnreadableSubmission(f"it could not be read ({error.strerror}: {error.filename})") from error
    except RecursionError as error:  # nested deeper since unsafe() looked: the walk recurses (Python 3.11)
        raise UnreadableSubmission("its folders are nested too deep to read") from error
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
