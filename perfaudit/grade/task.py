"""The grading task: one student's submission in, plain data out; it needs nothing of the client's machine.

The client builds the assignment's definition once (`definition`: nbgrader_config.py, the instructor's source and
release notebooks, a gradebook holding the assignment and no student) and, for each student, reads the submitted
files as bytes (`submitted_files`). On a worker, `grade` lays the definition out as a private course directory
(once per worker process, so the canary's once-per-process verdicts hold), writes the submission into it, runs the
same per-student pipeline as `python -m perfaudit.grade` on one machine (perfaudit/grade/worker.py: nbgrader's
autograde with the course's plug-ins, student code in the sandbox on that worker), and returns a GradingResult of
strings, numbers and bytes that the grader's own code built: the scores read from its scratch gradebook, the
autograded folder's files and the feedback pages as bytes, and the reasons. Nothing student code made crosses back,
and the client alone writes the course's gradebook and folders (perfaudit/grade/writer.py, for the batch and the
service alike).
"""

import hashlib
import json
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeGuard

from nbgrader.api import MissingEntry

from perfaudit.autograde.isolation import sandbox
from perfaudit.autograde.isolation.limits import SandboxLimits
from perfaudit.autograde.isolation import submission
from perfaudit.autograde.plugins import canary
from perfaudit.autograde.plugins.execute import TrustedExecute
from perfaudit.bookkeeping.coursedir import (LMS_RECORD, course_config, course_directory, remove_tree,
                                             venv_first_on_path)
from perfaudit.grade import gradebook, records, worker

CONFIG_FILE = "nbgrader_config.py"
_lock = threading.Lock()  # one student at a time per process, whatever the worker's thread count
_courses: dict[str, Path] = {}  # {definition digest: this process's course directory for it}


def definition(course_dir: str | Path, assignment: str, notebooks: Iterable[str],
               template_path: str | Path) -> dict[str, Any]:
    """The assignment as plain data: what a worker needs to grade its notebooks, and a digest that names it."""
    course_dir = Path(course_dir)
    coursedir = course_directory(course_dir)
    files = {CONFIG_FILE: (course_dir / CONFIG_FILE).read_bytes()}
    for directory in (coursedir.source_directory, coursedir.release_directory):
        files.update(read_tree(course_dir / directory / assignment, prefix=f"{directory}/{assignment}"))
    template = Path(template_path).read_bytes()
    digest = hashlib.sha256(template)
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    return {"assignment": assignment, "notebooks": sorted(notebooks), "files": files, "template": template,
            "digest": digest.hexdigest()}


def read_tree(folder: str | Path, prefix: str = "", ignore: Sequence[str] = (), dir_fd: int | None = None,
              within_limits: bool = False) -> dict[str, bytes]:
    """{relative path: bytes} of the regular files under folder (relative to dir_fd, an opened folder, if given);
    the rest (links, FIFOs, devices) is left unread, and so are names matching ignore and all under them. The folder
    may be a student's, changing while it is read: each folder is opened in its opened parent (os.fwalk, which checks
    it is the folder it looked at) and each file in its opened folder, none following a link, so a folder swapped
    for a link midway leads nowhere else.

    within_limits: raise submission.OverLimits as soon as what is read passes a submission's limits (entries, bytes,
    a file's bytes, depth, a path's length, hard links), counted by the submission.Tally that submission.problems
    counts with before the read. That check is not enough alone: a held-out attacker swapped a folder in while the
    service read: hard links that made 1 GB of a 256 MB submission (in the service's memory, then on the course's
    disk), and a chain of long names whose copy failed as the service's own fault (File name too long), which stopped
    grading for the class."""
    found: dict[str, bytes] = {}
    if dir_fd is None and not Path(folder).is_dir():
        return found
    tally = submission.Tally(os.stat(folder, dir_fd=dir_fd).st_uid)  # the rules submission.problems checked

    def over(relative: Path, why: str | None) -> None:
        if within_limits and why:
            raise submission.OverLimits(submission.describe([(submission.shown(relative.as_posix()), why)]))

    for root, dirs, files, root_fd in os.fwalk(folder, follow_symlinks=False, dir_fd=dir_fd):
        dirs[:] = sorted(d for d in dirs if not submission.ignored(d, ignore))
        here = Path(root).relative_to(folder)
        over(here, tally.folder(len(here.parts)))
        kept = sorted(name for name in files if not submission.ignored(name, ignore))
        for name in dirs + kept:
            tally.entries += 1
            over(here / name, tally.path((here / name).as_posix()))
        for name in kept:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=root_fd)
            except OSError:  # a link, or replaced by one since
                continue
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                if stat.S_ISREG(info.st_mode):  # a FIFO or a device: never read
                    data = handle.read(submission.MAX_FILE_BYTES + within_limits)  # one byte more tells it is over
                    # what was read, not what fstat said
                    over(here / name, tally.file(len(data), info.st_nlink, info.st_uid))
                    found[f"{prefix}/{(here / name).as_posix()}" if prefix else (here / name).as_posix()] = data
        over(here, tally.whole(ignore))
    return found


def submitted_files(folder: str | Path, ignore: Sequence[str] = ()) -> dict[str, bytes]:
    """The submission's files as bytes, for the task (intake and diagnose have refused anything but regular files);
    ignore: the course's CourseDirectory.ignore, names nbgrader would not copy (.git, runs/), left behind."""
    return read_tree(folder, ignore=ignore)


def write_tree(files: dict[str, bytes], into: str | Path) -> None:
    """Write {relative path: bytes} under `into`, refusing any path that would leave it."""
    into = Path(into).resolve()
    for relative, data in files.items():
        target = (into / relative).resolve()
        if into not in target.parents:
            raise ValueError(f"refused a path outside the folder: {relative!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def is_plain(value: object) -> bool:
    """True when value is made of dicts, lists, strings, bytes, numbers, booleans and None only."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(is_plain(v) for v in value)
    return value is None or type(value) in (str, bytes, int, float, bool)


@dataclass
class GradingResult:
    """What one grading task returns: plain data the grader's own code built, nothing student code made."""

    student: str
    host: str  # the machine and process that graded: a broken one is named, and the canary counts processes
    pid: int
    machine: dict  # records.machine(): versions, the package's digest, the machine, for the record behind a grade
    submitted_sha256: dict  # {relative path: sha256 of the submitted file}
    canary: str | None = None  # why this process's environment check failed (then nothing was graded), or None
    failures: dict = field(default_factory=dict)  # {notebook: why nbgrader could not grade it}: the student's 0
    environment: dict = field(default_factory=dict)  # {notebook: why not graded}: the environment's fault
    results: dict | None = None  # gradebook.read_submission's scores; None when no notebook was graded
    autograded: dict = field(default_factory=dict)  # {relative path: bytes} of autograded/<student>/<assignment>/
    feedback: dict = field(default_factory=dict)  # {relative path: bytes} of feedback/<student>/<assignment>/
    feedback_failure: str | None = None  # why generate_feedback failed, or None
    notebook_seconds: dict = field(default_factory=dict)  # {notebook: seconds its conversion took}
    seconds: float = 0.0  # the whole task, on the worker

    def is_plain(self) -> bool:
        """True when every field holds plain data only (is_plain): what crosses back from a worker is checked."""
        return all(is_plain(getattr(self, f.name)) for f in fields(self))


def is_plain_result(value: object) -> TypeGuard[GradingResult]:
    """True when a task's return value is a GradingResult made of plain data."""
    return type(value) is GradingResult and value.is_plain()


def _course(spec):
    """This process's course directory for the definition, laid out on first use."""
    root = _courses.get(spec["digest"])
    if root is None or not root.is_dir():
        root = Path(tempfile.mkdtemp(prefix="perfaudit-course-", dir=_local_directory()))
        write_tree(spec["files"], root)
        (root / "template.db").write_bytes(spec["template"])
        _courses[spec["digest"]] = root
    return root


def _local_directory():
    """The Dask worker's own scratch folder (removed with the worker), else the system's temporary folder."""
    try:  # distributed (seconds) only on a worker: writer.py and the service's exchange import tasks without it
        from distributed import get_worker

        return get_worker().local_directory
    except (ImportError, ValueError):
        return None


def _canary_failure(root, spec, settings):
    """None when this process's canary passed for every notebook (run at most once per process), else why not."""
    if not settings.get("TrustedExecute.canary", True) or os.environ.get(canary.SKIP) == "1":
        return None
    config = course_config(root, {**settings, "CourseDirectory.assignment_id": spec["assignment"]})
    try:
        for notebook in spec["notebooks"]:
            canary.check_once_per_process(notebook, config, TrustedExecute)
    except canary.GradingEnvironmentError as error:
        return str(error)
    return None


def _clear(root, student):
    for folder in ("submitted", "autograded", "feedback"):
        remove_tree(root / folder / student)


def _record_lms_id(root, student, lms_id):
    """This private course's intake record: the one student graded now, as intake recorded them on the client."""
    record = root / "submitted" / LMS_RECORD
    if lms_id is None:
        record.unlink(missing_ok=True)
    else:
        record.write_text(json.dumps({student: {"id": lms_id}}))


def grade(spec: dict[str, Any], student: str, files: dict[str, bytes], notebooks: list[str], settings: dict[str, Any],
          feedback: bool = True, lms_id: str | None = None) -> GradingResult:
    """Grade one submission on this machine; return plain data only (see the module's docstring).

    spec: definition(); files: {relative path: bytes} of submitted/<student>/<assignment>/; notebooks: the names
    to grade; settings: {"Section.trait": value} on top of the course's nbgrader_config.py; lms_id: the LMS's id of
    a student who came through an LMS download, which notebook 5's variant is drawn from (autograde/graded.py).
    """
    with _lock:
        venv_first_on_path()
        started, assignment = time.monotonic(), spec["assignment"]
        root = _course(spec)
        result = GradingResult(student=student, host=os.uname().nodename, pid=os.getpid(), machine=records.machine(),
                               submitted_sha256={name: records.sha256(data) for name, data in files.items()})
        result.canary = _canary_failure(root, spec, settings)
        if result.canary:
            result.seconds = time.monotonic() - started
            return result
        _clear(root, student)
        write_tree(files, root / "submitted" / student / assignment)
        _record_lms_id(root, student, lms_id)
        with tempfile.TemporaryDirectory(prefix="perfaudit-scratch-", dir=root) as scratch_dir:
            graded = worker.autograde(str(root), assignment, student, notebooks, str(root / "template.db"),
                                      scratch_dir, settings)
            result.failures, result.environment = graded["failures"], graded["environment"]
            result.notebook_seconds = graded["notebook_seconds"]
            if not result.environment:
                url = gradebook.sqlite_url(graded["scratch"])
                course_id = course_directory(root).course_id
                try:
                    result.results = gradebook.read_submission(url, course_id, assignment, student)
                except MissingEntry:  # nbgrader graded none of its notebooks: the failures say why
                    result.results = None
                result.autograded = read_tree(root / "autograded" / student / assignment)
                if feedback and result.autograded:
                    done = worker.feedback(str(root), assignment, student, {**settings, "CourseDirectory.db_url": url})
                    result.feedback_failure = done["failure"]
                    result.feedback = read_tree(root / "feedback" / student / assignment)
        _clear(root, student)
        result.seconds = time.monotonic() - started
        return result


def hold(spec: dict[str, Any]) -> dict[str, Any]:
    """The definition as a task of its own: a worker that loses it gets it again from the scheduler."""
    return spec


def sandbox_status(limits: dict[str, Any]) -> tuple[str | None, str]:
    """(why this worker refuses to run student code, or None; the line saying how student code runs here)."""
    try:
        sandbox.require()
        refusal = None
    except sandbox.SandboxUnavailable as error:
        refusal = str(error)
    return refusal, sandbox.status(SandboxLimits(**limits))
