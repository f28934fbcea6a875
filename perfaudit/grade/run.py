"""The batch: intake, diagnose, grade on a Dask cluster, write as the one gradebook writer, export, summary.

run() is its stages, one function each, filling the Batch it returns (summary.py renders it): _refuse_early,
_intake, _setting, _select, _check_environment, _grade, _export, _report. Each student is one self-contained task
(perfaudit/grade/task.py) run by a Dask worker (perfaudit/grade/engine.py: a local cluster by default, or
--scheduler), submitted through the GradingSession the grading service uses too (perfaudit/grade/session.py); what
its end means is perfaudit/grade/outcome.py's to say. A task returns plain data, and this process alone writes the
gradebook, autograded/ and feedback/ (perfaudit/grade/writer.py). A student counts as graded when the gradebook
holds their submission and their state in the batch state folder (perfaudit/bookkeeping/statefolder.py) was made from
the same submitted files; re-running grades only the others (or everyone, with regrade=True).
"""

import hashlib
import os
import stat
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from distributed import as_completed
from nbgrader.coursedir import CourseDirectory

from perfaudit import ASSIGNMENT
from perfaudit.autograde.isolation import sandbox
from perfaudit.autograde.isolation import submission
from perfaudit.autograde.plugins import canary, envrecord
from perfaudit.bookkeeping import statefolder, versions
from perfaudit.bookkeeping.coursedir import remove_tree
from perfaudit.grade import (classreport, diagnose, engine, envcheck, gradebook, grades_csv, intake, names, outcome,
                             regrade, summary, task)
from perfaudit.grade import refused as refusals
from perfaudit.grade.classdata import ClassData
from perfaudit.grade.diagnose import Diagnosis
from perfaudit.grade.errors import NothingToGrade
from perfaudit.grade.outcome import Kind
from perfaudit.grade.session import GradingSession, prepare_this_process
from perfaudit.grade.writer import ResultWriter


@dataclass
class Options:
    course_dir: Path
    download: Path | None = None  # an LMS zip or folder to sort into submitted/ first
    workers: int = os.cpu_count() or 1  # worker processes of the local cluster (without scheduler)
    scheduler: str | None = None  # a Dask scheduler's address (tcp://host:8786) or scheduler file: grade there
    regrade: bool = False
    db_url: str | None = None  # default: nbgrader_config.py's, else sqlite gradebook.db in the course
    cell_timeout: int | None = None  # default: nbgrader_config.py's Execute.timeout
    notebook_timeout: int | None = None  # default: nbgrader_config.py's TrustedExecute.notebook_timeout
    # default: nbgrader_config.py's SandboxLimits.memory_mb (a submission's processes together)
    memory_mb: int | None = None
    feedback: bool = True
    progress: bool = True
    canary: bool = True  # grade the instructor's solutions and the release first; a broken environment stops here


@dataclass
class Batch:
    """The run's report, filled stage by stage (run()); summary.py renders it, classreport.py keeps part of it."""

    # the setting, said before anyone is graded
    sandbox: str = ""  # how student code ran: perfaudit.autograde.isolation.sandbox.status(), or the workers'
    versions: dict[str, str | None] = field(default_factory=dict)  # what it graded with: versions.graded_with()
    drift: list[str] = field(default_factory=list)  # how that differs from requirements-cpu.txt, one sentence each
    canary: str = ""  # what the canary found before grading, or that it was skipped
    said: set[str] = field(default_factory=set)  # lines of the run's setting printed so far (summary.say)
    # who was selected, and who was not
    skipped: list[str] = field(default_factory=list)  # graded before, unchanged
    stale: dict[str, list[str]] = field(default_factory=dict)  # {student: [notebooks whose source changed]}: regraded
    refused: dict[str, str] = field(default_factory=dict)  # {folder of submitted/: why its name cannot be a student id}
    needs_you: dict[str, dict[str, str]] = field(default_factory=dict)  # {student: {notebook: "not graded: why"}}
    against: dict[str, str | None] = field(default_factory=dict)  # {notebook: sha256 of its source}: graded with
    # the grading
    graded: list[str] = field(default_factory=list)
    environment: dict[str, list[str]] = field(default_factory=dict)  # {student: [why]}: not graded, not their fault
    engine: str = ""  # where grading ran: perfaudit.grade.engine.describe()
    task_seconds: float = 0.0  # the tasks' own time on the workers, all together (the rest is the engine's)
    seconds: dict[str, float] = field(default_factory=dict)  # {"autograde": s, "feedback": s, "export": s}
    # after it: {student: (total before, total now, resubmitted)} of those graded before
    again: dict[str, tuple[float | None, float | None, bool]] = field(default_factory=dict)


class Progress:
    """One line on stderr: counts, elapsed, ETA."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.notebooks, self.enabled = total, 0, 0, enabled and total > 0
        self.started = time.monotonic()

    def step(self, notebooks: int) -> None:
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


def fingerprint(folder: str | Path, ignore: Sequence[str] = ()) -> str:
    """A digest of the submitted files; entries that are not regular files count by name and kind, never read.

    ignore: the course's CourseDirectory.ignore: what every copy leaves out (submission.left_out), and all under
    it, is left out as nbgrader leaves it out of what it grades (a commit in .git, a new file in runs/ regrades no
    one); what autograde would copy all the same (`.x.pyc`, under `a[1]/`) counts. Walked and ordered as before
    anything was left out, so a folder holding none of it keeps the digest it had: an upgrade regrades no one."""
    digest = hashlib.sha256()
    walked = []
    for root, dirs, files in os.walk(folder):  # never follows a linked folder
        kept = [name for name in dirs + files if not submission.left_out(os.path.join(root, name), ignore)]
        dirs[:] = [name for name in dirs if name in kept]  # what is left out is not walked into
        walked.append((root, dirs, [name for name in files if name in kept]))
    for root, dirs, files in sorted(walked):
        for name in sorted(dirs + files):
            path = Path(root) / name
            info = path.lstat()
            digest.update(os.fsencode(path.relative_to(folder)) + b"\0" + str(info.st_mode).encode())
            if stat.S_ISREG(info.st_mode) and info.st_size <= submission.MAX_FILE_BYTES:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as handle:
                    digest.update(handle.read())
            digest.update(b"\0")
    return digest.hexdigest()


NEXT = ("\nNext: review or change grades in Formgrader, then `make feedback` (feedback and each LMS export "
        "again); grades back to the LMS: python -m perfaudit.grade --export canvas|moodle --roster <the LMS's file>")



def run(options: Options, out: TextIO = sys.stdout) -> Batch:
    """Grade every submission in the course directory; print the summary; return the Batch.

    Without a working sandbox (here, or on a cluster's workers) this raises SandboxUnavailable before it grades
    anyone (PERFAUDIT_UNSANDBOXED=1: grades all the same, and says so first thing and in the summary); a
    --scheduler that does not answer raises engine.SchedulerUnreachable at once. The stages, in order: refuse
    early, intake, the run's setting, select who to grade, the environment check, grade, export, report.
    """
    _refuse_early(options)
    prepare_this_process()
    session = GradingSession(options.course_dir, _settings(options), options.db_url, options.scheduler)
    due = session.record_assignment(out)
    resubmitted = _intake(options, session, due, out)
    state = statefolder.State(session.autograded)
    batch = _setting(options, session, out)
    chosen = _select(options, session, state, batch)
    when = regrade.stamp()  # the scores of those graded again are kept first: the regrade diff compares with them
    before_regrade = regrade.snapshot(session.url, session.course_id, ASSIGNMENT, session.autograded,
                                      sorted(set(chosen.todo) & chosen.known), when)
    _check_environment(options, session, chosen.todo, batch, out)
    started = time.monotonic()
    _grade(options, session, chosen.todo, state, batch, out)
    batch.seconds["autograde"] = time.monotonic() - started
    _export(session, batch, chosen.before, resubmitted)
    _report(session, state, batch, before_regrade, when, out)
    return batch


def _refuse_early(options: Options) -> None:
    """Before anything is read or written: a --scheduler that does not answer, or no sandbox here for a local
    cluster's workers."""
    if options.scheduler:
        engine.probe(engine.scheduler_address(options.scheduler))
    else:
        sandbox.require()  # the local cluster's workers run here


def _settings(options: Options) -> dict[str, Any]:
    """The command line's settings on top of nbgrader_config.py, for every task."""
    settings: dict[str, Any] = {}
    if options.cell_timeout:
        settings["Execute.timeout"] = options.cell_timeout
    if options.notebook_timeout:
        settings["TrustedExecute.notebook_timeout"] = options.notebook_timeout
    if options.memory_mb:
        settings["SandboxLimits.memory_mb"] = options.memory_mb
    return settings


def _intake(options: Options, session: GradingSession, due: datetime | None,
            out: TextIO) -> dict[str, tuple[str, str]]:
    """An LMS download sorted into submitted/ (returned: {student: (older file, kept)} of those who resubmitted);
    NothingToGrade when submitted/ holds no student's folder."""
    resubmitted: dict[str, tuple[str, str]] = {}
    if options.download:
        if not Path(options.download).exists():
            raise NothingToGrade(f"No such LMS download: {options.download}. Name the zip or folder the LMS gave you "
                                 "(make grade FROM=path/to/download.zip). Nothing was graded.")
        report = intake.sort_into_submitted(options.download, session.submitted, ASSIGNMENT,
                                            {f"{n}.ipynb" for n in session.expected}, due=due)
        print(report.report(), file=out)
        resubmitted = report.resubmitted
    submitted = session.submitted
    if not submitted.is_dir() or not any(p.is_dir() for p in submitted.iterdir()):
        raise NothingToGrade(f"Nothing to grade: {submitted} holds no student's folder. Sort an LMS download in "
                             f"(make grade FROM=download.zip) or collect from the exchange (nbgrader collect "
                             f"{ASSIGNMENT}), then run again. Nothing was graded.")
    return resubmitted


def _setting(options: Options, session: GradingSession, out: TextIO) -> Batch:
    """The run's setting, said before anyone is graded: how student code runs, the versions, a skipped check."""
    batch = Batch(sandbox=session.sandbox_here())
    if not options.scheduler:  # a cluster's workers say it themselves, once connected
        summary.say(batch, f"Student code: {batch.sandbox}", out)
    _check_versions(batch, out)
    if not options.canary or os.environ.get(canary.SKIP) == "1":
        batch.canary = "SKIPPED (asked for): the environment was not checked before grading"
        session.settings["TrustedExecute.canary"] = False
        summary.say(batch, f"Environment check: {batch.canary}", out)
    return batch


@dataclass
class Selection:
    """Who this run grades, and what the gradebook held before it."""

    todo: dict[str, tuple[Diagnosis, str]]  # {student: (diagnosis, fingerprint)}: graded by this run
    known: set[str]  # students with a submission in the gradebook
    before: dict[str, float | None]  # {student: total}: before this run


def _select(options: Options, session: GradingSession, state: statefolder.State, batch: Batch) -> Selection:
    """Each folder of submitted/: refused by its name, skipped (graded before, unchanged), or diagnosed to grade."""
    coursedir, submitted = session.coursedir, session.submitted
    todo = {}
    with gradebook.opened(session.url, session.course_id) as course_gb:
        known = {s.student.id for s in course_gb.find_assignment(ASSIGNMENT).submissions}
        before = gradebook.totals(course_gb, ASSIGNMENT)
    said = intake.lms_record(submitted)
    against = batch.against = source_digests(session.course_dir, coursedir, session.expected)
    for folder in sorted(p for p in submitted.iterdir() if p.is_dir()):
        student, work = folder.name, folder / ASSIGNMENT
        refused = names.student_folder_problem(student)
        if refused:  # not a student id nbgrader can keep: said in the summary; the others are graded
            batch.refused[student] = refused
            continue
        withheld = refusals.unresolved(work, said.get(student))  # refused at intake: never a score
        if withheld:
            batch.needs_you[student] = withheld
        print_ = fingerprint(work, coursedir.ignore) if work.is_dir() else "no assignment folder"
        record = state.record(student)
        if not options.regrade and student in known and record and record.get("fingerprint") == print_:
            changed = changed_since(record, against)
            if not changed:
                batch.skipped.append(student)
                continue
            batch.stale[student] = changed  # graded against another source notebook: graded again
        found = diagnose.diagnose(work, session.expected, coursedir.ignore)
        refusals.withhold(found, withheld)
        todo[student] = (found, print_)
    for student, withheld in refusals.needs_you(submitted, said, ASSIGNMENT).items():
        batch.needs_you.setdefault(student, withheld)  # nothing placed for them (no folder): they need you all the same
    return Selection(todo, known, before)


def _check_environment(options: Options, session: GradingSession, todo: dict[str, tuple[Diagnosis, str]],
                       batch: Batch, out: TextIO) -> None:
    """The environment check (the canary), once per environment, before a local cluster grades anyone; a cluster's
    workers run theirs before their first student (perfaudit/grade/envcheck.py)."""
    settings = session.settings
    gradable = any(found.gradable for found, _ in todo.values())
    if "TrustedExecute.canary" not in settings and not options.scheduler and gradable:
        started = time.monotonic()  # once per environment: a record beside the gradebook
        record = envrecord.record_path(session.url, session.autograded)
        batch.canary = envcheck.once(session.course_dir, session.coursedir, ASSIGNMENT, session.expected, settings,
                                     record)
        settings["TrustedExecute.canary"] = False
        batch.seconds["environment check"] = time.monotonic() - started
        summary.say(batch, f"Environment check: {batch.canary}", out)
    elif not batch.canary and not gradable:
        batch.canary = "not run: no notebook to grade"  # said, never skipped silently


def _export(session: GradingSession, batch: Batch, before: dict[str, float | None],
            resubmitted: dict[str, tuple[str, str]]) -> None:
    """grades.csv as `nbgrader export` writes it, the versions graded with, and who was graded again."""
    with gradebook.opened(session.url, session.course_id) as course_gb:
        after = gradebook.totals(course_gb, ASSIGNMENT)
        gradebook.name_students(course_gb, intake.lms_record(session.submitted))  # first: grades.csv carries names
        started = time.monotonic()
        grades_csv.write(course_gb, session.course_dir / "grades.csv", session.submitted, ASSIGNMENT)
    batch.seconds["export"] = time.monotonic() - started
    _record_versions(session.url, session.autograded, batch)
    batch.again = {student: (before[student], after[student], student in resubmitted)
                   for student in batch.graded if student in before and student in after}


def _report(session: GradingSession, state: statefolder.State, batch: Batch, before_regrade: ClassData | None,
            when: str, out: TextIO) -> None:
    """The terminal summary of the Batch, the class report and the regrade diff, and what to do next."""
    summary.print_summary(session.url, session.course_id, ASSIGNMENT, state, session.autograded, batch, out)
    release = Path(session.coursedir.format_path(session.coursedir.release_directory, ".", ASSIGNMENT))
    classreport.after_run(session.course_dir, session.url, session.course_id, session.autograded, batch,
                          before_regrade, when, out, session.submitted, release)
    print(NEXT, file=out)


def source_digests(course_dir: str | Path, coursedir: CourseDirectory,
                   expected: Iterable[str]) -> dict[str, str | None]:
    """{notebook: sha256 of source/<assignment>/<notebook>.ipynb}: its tests, hidden ones included, and points."""
    folder = Path(course_dir) / coursedir.source_directory / ASSIGNMENT
    return {nb: hashlib.sha256((folder / f"{nb}.ipynb").read_bytes()).hexdigest() if (folder / f"{nb}.ipynb").is_file()
            else None for nb in sorted(expected)}


def changed_since(record: dict[str, Any], against: dict[str, str | None]) -> list[str]:
    """The notebooks whose source notebook is not the one the student's grade was made against (all of them for a
    grade from before grades recorded it)."""
    before = record.get("against") or {}
    return sorted(nb for nb, digest in against.items() if before.get(nb) != digest)


def _check_versions(batch, out):
    """What this run grades with and how it differs from the pins: printed before anyone is graded."""
    batch.versions, batch.drift = versions.check()
    summary.print_versions(batch, out)


def _record_versions(url, autograded, batch):
    """Beside the gradebook, the versions of every run that graded someone (a run that only skipped adds nothing)."""
    if batch.graded:
        path = versions.record_path(url, autograded)
        versions.record(path, batch.versions, batch.drift, len(batch.graded))


def _grade(options: Options, session: GradingSession, todo: dict[str, tuple[Diagnosis, str]],
           state: statefolder.State, batch: Batch, out: TextIO) -> None:
    """Grade the students in todo: each gradable one as a task on the cluster, the client writing every result."""
    progress = Progress(len(todo), options.progress)
    with gradebook.opened(session.url, session.course_id) as course_gb:
        results = ResultWriter(course_gb, session.coursedir, ASSIGNMENT, state)
        jobs = {}  # {student: notebooks to grade}
        for student, (found, print_) in todo.items():
            remove_tree(session.autograded / student / ASSIGNMENT)  # no stale notebook survives a regrade
            remove_tree(session.folder(session.coursedir.feedback_directory, student))
            if found.gradable:
                jobs[student] = found.gradable
            else:
                results.write_result(student, found, print_, against=batch.against)
                _finish(student, batch, progress, 0)
        if not jobs:
            return
        session.make_definition()
        # A local cluster starts no more workers than there are submissions: a worker that would wait idle costs
        # its start (seconds of imports) all the same.
        with session.cluster(min(options.workers, len(jobs)), log=state.dir / "workers.log") as client:
            batch.engine = engine.describe(client)
            print(f"Grading on: {batch.engine}", file=out)
            batch.sandbox = session.sandbox_of_workers()  # a worker without a sandbox refuses: nobody graded
            if options.scheduler:
                summary.say(batch, f"Student code (on the workers): {batch.sandbox}", out)
            results.recorder = session.start_recording(course_gb)
            writer = _Writer(results, todo, batch, progress)
            broken = _run_tasks(session, jobs, options.feedback, writer)
    if broken:
        raise canary.GradingEnvironmentError(broken)
    if "TrustedExecute.canary" not in session.settings:
        graders = len(writer.processes)
        batch.canary = (f"passed in each of the {graders} grading process(es) before its first student: the "
                        "instructor's solutions score full marks and the release none, through this pipeline"
                        if graders else "not confirmed: no grading process got as far as a student")


def _run_tasks(session: GradingSession, jobs: dict[str, list[str]], feedback: bool, writer: "_Writer") -> str | None:
    """Submit a window of tasks at a time, act on each one's outcome (perfaudit/grade/outcome.py) as it comes; the
    canary's failure message, or None. A stop cancels the rest: a full disk is raised, the canary's failure
    returned."""
    client = session.client
    assert client is not None, "inside session.cluster()"
    pending = iter(sorted(jobs))
    window = max(8, 2 * sum(client.nthreads().values()))
    futures = {}

    def submit_next():
        student = next(pending, None)
        if student is None:
            return None
        files = task.submitted_files(writer.submitted_folder(student), session.coursedir.ignore)
        future = session.submit(student, files, jobs[student], feedback, key_prefix="grade")
        futures[future] = student
        return future

    running = as_completed([f for f in (submit_next() for _ in range(window)) if f is not None], loop=client.loop)
    for future in running:
        student = futures.pop(future)
        done = outcome.of_future(future, jobs[student])
        if done.kind is Kind.STOP:  # the environment is broken: grade nobody more
            client.cancel(list(futures))
            if done.error is not None:
                raise done.error
            return done.whys[outcome.EVERY_NOTEBOOK]
        if done.kind is Kind.ZERO:
            writer.zero(student, done.whys)
        elif done.kind is Kind.NOT_GRADED:
            writer.not_graded(student, done.whys, done.result)
        else:
            writer.graded(done.result, jobs[student])
        future.release()
        following = submit_next()
        if following is not None:
            running.add(following)
    return None


class _Writer:
    """The batch's side of writing: the one writer (perfaudit/grade/writer.py) and the run's counts and progress."""

    def __init__(self, results: ResultWriter, todo: dict[str, tuple[Diagnosis, str]], batch: Batch,
                 progress: Progress) -> None:
        self.results, self.todo, self.batch, self.progress = results, todo, batch, progress
        self.processes: set[tuple[str, int]] = set()  # (host, pid) of every process that graded a student

    def submitted_folder(self, student: str) -> Path:
        return self.results.folder(self.results.coursedir.submitted_directory, student)

    def zero(self, student: str, failures: dict[str, str]) -> None:
        """Grading this student failed ({notebook: why}): 0 with the reasons; the others go on."""
        self.results.write_result(student, *self.todo[student], failures=failures, against=self.batch.against)
        _finish(student, self.batch, self.progress, 0)

    def not_graded(self, student: str, whys: dict[str, str], result: task.GradingResult | None = None) -> None:
        """The environment or the grader failed, not the student ({notebook: why}): nothing of theirs is recorded,
        the run exits non-zero, the next run grades them. result: what the task returned, if it did."""
        if result is not None:
            self._count(result)
        self.batch.environment[student] = [f"{nb}: {why}" for nb, why in whys.items()]
        self.progress.step(0)

    def graded(self, result: task.GradingResult | None, notebooks: list[str]) -> None:
        assert result is not None, "a graded outcome holds its result"
        self._count(result)
        student = result.student
        self.results.write_result(student, *self.todo[student], result, against=self.batch.against)
        _finish(student, self.batch, self.progress, 0 if result.results is None else len(notebooks))

    def _count(self, result: task.GradingResult) -> None:
        """A process that got as far as a student (its canary passed), and the task's own seconds."""
        self.processes.add((result.host, result.pid))
        self.batch.task_seconds += result.seconds


def _finish(student, batch, progress, notebooks):
    batch.graded.append(student)
    progress.step(notebooks)
