"""The batch: intake, diagnose, grade in workers, merge as the one gradebook writer, feedback, export, summary.

A student counts as graded when the gradebook holds their submission and the record in
autograded/.batch-grading/<student>.json was made from the same submitted files; re-running grades only
the others (or everyone, with regrade=True). A claim file there keeps several grading processes (several
machines sharing one course directory and one PostgreSQL gradebook) off each other's students.
"""

import hashlib
import json
import os
import socket
import stat
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from sqlalchemy.exc import SAWarning

from perfaudit import ASSIGNMENT, course
from perfaudit.autograde import canary, sandbox, submission
from perfaudit.autograde.limits import SandboxLimits
from perfaudit.grade import diagnose, gradebook, intake, summary, versions, worker

STATE_DIR = ".batch-grading"  # under autograded/: nbgrader's globs (autograded/*/<assignment>) skip it
STALE_CLAIM_S = 3 * 3600


@dataclass
class Options:
    course_dir: Path
    download: Path | None = None  # an LMS zip or folder to sort into submitted/ first
    workers: int = os.cpu_count() or 1
    regrade: bool = False
    db_url: str | None = None  # default: nbgrader_config.py's, else sqlite gradebook.db in the course
    cell_timeout: int | None = None  # default: nbgrader_config.py's Execute.timeout
    notebook_timeout: int | None = None  # default: nbgrader_config.py's TrustedExecute.notebook_timeout
    memory_mb: int | None = None  # default: nbgrader_config.py's SandboxLimits.memory_mb (a submission's processes together)
    feedback: bool = True
    progress: bool = True
    canary: bool = True  # grade the instructor's solutions and the release first; a broken environment stops here


@dataclass
class Batch:
    graded: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # graded before, unchanged
    claimed_elsewhere: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)  # {"autograde": s, "feedback": s, "export": s}
    sandbox: str = ""  # how student code ran: perfaudit.autograde.sandbox.status()
    canary: str = ""  # what the canary found before grading, or that it was skipped
    environment: dict = field(default_factory=dict)  # {student: [why]}: not graded, the environment's fault
    versions: dict = field(default_factory=dict)  # what it graded with: perfaudit.grade.versions.graded_with()
    drift: list = field(default_factory=list)  # how that differs from requirements-cpu.txt, one sentence each


class Progress:
    """One line on stderr: counts, elapsed, ETA."""

    def __init__(self, total, enabled):
        self.total, self.done, self.notebooks, self.enabled = total, 0, 0, enabled and total > 0
        self.started = time.monotonic()

    def step(self, notebooks):
        self.done += 1
        self.notebooks += notebooks
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        bar = "#" * (20 * self.done // self.total)
        sys.stderr.write(
            f"\r[{bar:<20}] {self.done}/{self.total} students, {self.notebooks} notebooks, "
            f"{elapsed:.0f} s elapsed, ETA {eta:.0f} s "
        )
        if self.done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def fingerprint(folder):
    """A digest of the submitted files; entries that are not regular files count by name and kind, never read."""
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(folder)):  # os.walk never follows a linked folder
        for name in sorted(dirs + files):
            path = Path(root) / name
            info = path.lstat()
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + str(info.st_mode).encode())
            if stat.S_ISREG(info.st_mode) and info.st_size <= submission.MAX_FILE_BYTES:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as handle:
                    digest.update(handle.read())
            digest.update(b"\0")
    return digest.hexdigest()


class State:
    """Per-student records and claims under autograded/.batch-grading/."""

    def __init__(self, autograded_dir):
        self.dir = Path(autograded_dir) / STATE_DIR
        self.dir.mkdir(parents=True, exist_ok=True)

    def record(self, student):
        path = self.dir / f"{student}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def save(self, student, record):
        path = self.dir / f"{student}.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
        tmp.replace(path)

    def claim(self, student):
        path = self.dir / f"{student}.claim"
        if path.exists() and time.time() - path.stat().st_mtime > STALE_CLAIM_S:
            path.unlink(missing_ok=True)  # left by a process that died
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        try:
            os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())
        except OSError:  # a full disk: no claim left behind to keep the next run from grading this student
            path.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)
        return True

    def release(self, student):
        (self.dir / f"{student}.claim").unlink(missing_ok=True)


def _coursedir(options):
    config = worker.course_config(options.course_dir)
    if options.db_url:
        config.CourseDirectory.db_url = options.db_url
    return CourseDirectory(config=config)


def _expected_ids(course_gb):
    return {nb.name: [c.name for c in nb.source_cells] for nb in course_gb.find_assignment(ASSIGNMENT).notebooks}


def run(options, out=sys.stdout):
    """Grade every submission in the course directory; print the summary; return the Batch.

    Without a working sandbox this raises SandboxUnavailable before it grades anyone (PERFAUDIT_UNSANDBOXED=1:
    grades all the same, and says so first thing and in the summary).
    """
    sandbox.require()
    # nbgrader's own submission bookkeeping warns about its session on every new submission: not ours to fix.
    warnings.filterwarnings("ignore", category=SAWarning, module="nbgrader")
    course_dir = Path(options.course_dir).resolve()
    coursedir = _coursedir(options)
    url, course_id = coursedir.db_url, coursedir.course_id
    submitted = Path(coursedir.format_path(coursedir.submitted_directory, ".", ".")).resolve()
    autograded = Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")).resolve()
    settings = {"CourseDirectory.db_url": url}
    if options.cell_timeout:
        settings["Execute.timeout"] = options.cell_timeout
    if options.notebook_timeout:
        settings["TrustedExecute.notebook_timeout"] = options.notebook_timeout
    if options.memory_mb:
        settings["SandboxLimits.memory_mb"] = options.memory_mb

    with gradebook.opened(url, course_id) as course_gb:
        try:
            expected = _expected_ids(course_gb)
        except Exception:
            raise SystemExit(
                f"The gradebook ({url}) has no assignment '{ASSIGNMENT}': run "
                f"`nbgrader generate_assignment {ASSIGNMENT}` (with the same --db) first."
            )
    if options.download:
        report = intake.sort_into_submitted(options.download, submitted, ASSIGNMENT, {f"{n}.ipynb" for n in expected})
        print(report.report(), file=out)

    state = State(autograded)
    batch = Batch(sandbox=sandbox.status(SandboxLimits(config=worker.course_config(course_dir, settings))))
    print(f"Student code: {batch.sandbox}", file=out)
    _check_versions(batch, out)
    batch.canary = _canary(options, course_dir, settings, expected, out)
    settings["TrustedExecute.canary"] = False  # checked once, here, for every worker
    todo = {}  # {student: (diagnosis, fingerprint)}
    with gradebook.opened(url, course_id) as course_gb:
        known = {s.student.id for s in course_gb.find_assignment(ASSIGNMENT).submissions}
    for folder in sorted(p for p in submitted.iterdir() if p.is_dir()):
        student, work = folder.name, folder / ASSIGNMENT
        print_ = fingerprint(work) if work.is_dir() else "no assignment folder"
        record = state.record(student)
        if not options.regrade and student in known and record and record.get("fingerprint") == print_:
            batch.skipped.append(student)
            continue
        if not state.claim(student):
            batch.claimed_elsewhere.append(student)
            continue
        todo[student] = (diagnose.diagnose(work, expected), print_)

    started = time.monotonic()
    try:
        _grade(options, course_dir, url, course_id, settings, todo, state, autograded, batch)
    finally:  # an interrupted run leaves no claim behind: the next run takes those students up
        for student in todo:
            state.release(student)
    batch.seconds["autograde"] = time.monotonic() - started

    with_notebooks = [s for s in batch.graded if (autograded / s / ASSIGNMENT).is_dir()]
    if options.feedback and with_notebooks:
        started = time.monotonic()
        _feedback(options, course_dir, settings, with_notebooks, coursedir, state)
        batch.seconds["feedback"] = time.monotonic() - started
    started = time.monotonic()
    course.nbgrader("export", f"--db={url}", course_dir=course_dir)
    batch.seconds["export"] = time.monotonic() - started
    _record_versions(url, autograded, batch)

    summary.print_summary(url, course_id, ASSIGNMENT, state, autograded, batch, out)
    return batch


def _canary(options, course_dir, settings, expected, out):
    """The instructor's solutions full marks, the release none, through the pipeline: or stop before grading."""
    if not options.canary or os.environ.get(canary.SKIP) == "1":
        line = "SKIPPED (asked for): the environment was not checked before grading"
    else:
        config = worker.course_config(course_dir, {**settings, "CourseDirectory.assignment_id": ASSIGNMENT})
        started = time.monotonic()
        for notebook in sorted(expected):
            canary.check_notebook(notebook, config)  # GradingEnvironmentError: nobody is graded
        line = (f"passed: the instructor's solutions score full marks and the release none, through this pipeline "
                f"({time.monotonic() - started:.0f} s)")
    print(f"Environment check: {line}", file=out)
    return line


def _check_versions(batch, out):
    """What this run grades with and how it differs from the pins: printed before anyone is graded."""
    batch.versions, batch.drift = versions.check()
    for line in versions.summary_lines(batch.versions, batch.drift):
        print(line, file=out)


def _record_versions(url, autograded, batch):
    """Beside the gradebook, the versions of every run that graded someone (a run that only skipped adds nothing)."""
    if batch.graded:
        path = versions.record_path(url, autograded, STATE_DIR)
        versions.record(path, batch.versions, batch.drift, len(batch.graded))


def _pool(options, state):
    return ProcessPoolExecutor(
        max_workers=max(1, options.workers),
        mp_context=get_context("spawn"),
        initializer=worker.start,
        initargs=(str(state.dir / "workers.log"),),
    )


def _grade(options, course_dir, url, course_id, settings, todo, state, autograded, batch):
    progress = Progress(len(todo), options.progress)
    with tempfile.TemporaryDirectory(prefix="perfaudit-grade-") as scratch_dir:
        template = Path(scratch_dir) / "template.db"
        gradebook.make_template(url, template, course_id)
        with gradebook.opened(url, course_id) as course_gb:
            jobs = {}
            for student, (found, _) in todo.items():
                _remove_tree(Path(autograded) / student / ASSIGNMENT)  # no stale notebook survives a regrade
                if found.gradable:
                    jobs[student] = (ASSIGNMENT, student, found.gradable, str(template), scratch_dir, settings)
                else:
                    gradebook.record_empty(course_gb, ASSIGNMENT, student)
                    _finish(state, student, todo[student], {}, batch, progress, 0)

            def zero(student, why):  # grading this student failed: 0 with the reason, the others go on
                gradebook.record_empty(course_gb, ASSIGNMENT, student)
                _finish(state, student, todo[student], dict.fromkeys(jobs.pop(student)[2], why), batch, progress, 0)

            for attempt in (1, 2):  # a worker that crashed takes the pool down: retry the rest once
                if not jobs:
                    break
                with _pool(options, state) as pool:
                    futures = {pool.submit(worker.autograde, str(course_dir), *job): s for s, job in jobs.items()}
                    for future in as_completed(futures):
                        student = futures[future]
                        try:
                            result = future.result()
                        except BrokenProcessPool:
                            continue
                        except Exception as error:
                            zero(student, f"grading failed: {type(error).__name__}: {error}")
                            continue
                        scratch = result["scratch"]
                        if result["environment"]:  # nothing of this student is recorded: the next run grades them
                            Path(scratch).unlink(missing_ok=True)
                            jobs.pop(student)
                            batch.environment[student] = [f"{nb}: {why}" for nb, why in result["environment"].items()]
                            state.release(student)
                            progress.step(0)
                            continue
                        gradebook.merge_submission(gradebook.sqlite_url(scratch), course_gb, ASSIGNMENT, student)
                        Path(scratch).unlink(missing_ok=True)
                        notebooks = len(jobs.pop(student)[2])
                        _finish(state, student, todo[student], result["failures"], batch, progress, notebooks)
            for student in list(jobs):
                zero(student, "the grading process crashed twice on this submission")


def _finish(state, student, todo_entry, failures, batch, progress, notebooks):
    found, print_ = todo_entry
    reasons = {nb: list(r) for nb, r in found.reasons.items()}
    for nb, why in failures.items():
        reasons.setdefault(nb, []).append(why)
    state.save(student, {"fingerprint": print_, "reasons": reasons, "graded_at": time.time()})
    state.release(student)
    batch.graded.append(student)
    progress.step(notebooks)


def _remove_tree(path):
    import shutil

    if path.exists():
        for sub in [path, *path.rglob("*")]:
            if not sub.is_symlink():  # a student's symlink must not point a chmod at the grader's files
                os.chmod(sub, 0o755 if sub.is_dir() else 0o644)  # nbgrader leaves autograded files read-only
        shutil.rmtree(path)


def _feedback(options, course_dir, settings, students, coursedir, state):
    for student in students:
        _remove_tree(Path(coursedir.format_path(coursedir.feedback_directory, student, ASSIGNMENT)))
    with _pool(options, state) as pool:
        futures = [pool.submit(worker.feedback, str(course_dir), ASSIGNMENT, s, settings) for s in students]
        for future in as_completed(futures):
            result = future.result()
            if result["failure"]:
                record = state.record(result["student"])
                record["feedback_failure"] = result["failure"]
                state.save(result["student"], record)
