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
from collections.abc import Container, Sequence
from datetime import datetime
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default import Exchange
from nbgrader.utils import notebook_hash, parse_utc
from traitlets.config import Config

from perfaudit.autograde.isolation import submission
from perfaudit.bookkeeping.coursedir import remove_tree
from perfaudit.grade import task

SECRET = "submission_secret.txt"


def course_path(config: Config, coursedir: CourseDirectory) -> Path:
    """<Exchange.root>/<course id>: the course's folder in the exchange nbgrader_config.py names."""
    return Path(Exchange(config=config, coursedir=coursedir).root) / coursedir.course_id


def arrivals(inbound: str | Path, assignment: str, known: Container[str]) -> list[tuple[str, str, datetime]]:
    """[(folder name, student id, the timestamp its name gives)] of complete submissions not in known, oldest first.

    Complete: the secret, which submit writes last, is there. Names are split as nbgrader's collect splits them.
    """
    found: list[tuple[str, str, datetime]] = []
    if not Path(inbound).is_dir():
        return found
    for path in Path(inbound).iterdir():
        parts = path.name.rsplit("+", 3)
        if path.name in known or len(parts) < 3 or parts[1] != assignment or not path.is_dir():
            continue
        secret = path / SECRET
        if path.is_symlink() or not secret.is_file() or secret.stat().st_size == 0:
            continue
        try:
            stamped = parse_utc(parts[2])
        except (ValueError, OverflowError):
            continue  # not a name nbgrader's submit writes
        found.append((path.name, parts[0], stamped))
    return sorted(found, key=lambda item: (item[2], item[0]))


def owner(path: str | Path) -> str:
    """The account that owns the submission's folder: the student who ran submit."""
    try:
        return pwd.getpwuid(os.lstat(path).st_uid).pw_name
    except KeyError:
        return "unknown id"


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
    matching ignore, and all under them, are not copied (nbgrader's collect leaves them out too)."""
    remove_tree(submitted_folder)
    Path(submitted_folder).mkdir(parents=True)
    task.write_tree(task.read_tree(path, ignore=ignore), submitted_folder)


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
