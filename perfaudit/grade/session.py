"""One grading session: what the batch (run.py) and the service (perfaudit/serve/service.py) both set up to grade.

A session holds the course's configuration and directory with the run's settings on top, the sandbox limits, the
assignment's grade ids (recorded from source/ first where the gradebook lacks them), its definition
(perfaudit/grade/task.py's, from a template gradebook made in a scratch folder), the Dask cluster
(perfaudit/grade/engine.py) with the definition held on it, the record behind every grade
(perfaudit/grade/records.py) and the line saying how student code runs: here, or on each of a cluster's workers,
where a worker without a sandbox refuses grading. Each grading task goes through `submit`, so the batch and the
service grade a student the same way; what a finished task means is perfaudit/grade/outcome.py's to say.
"""

import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from distributed import Client, Future
from nbgrader.coursedir import CourseDirectory
from sqlalchemy.exc import SAWarning
from traitlets.config import Config

from perfaudit import ASSIGNMENT
from perfaudit.autograde import graded
from perfaudit.autograde.isolation import sandbox
from perfaudit.autograde.isolation.limits import SandboxLimits
from perfaudit.bookkeeping.coursedir import course_config, nbgrader, venv_first_on_path
from perfaudit.grade import engine, gradebook, records, task
from perfaudit.grade.definition import out_of_step
from perfaudit.grade.errors import NothingToGrade

if TYPE_CHECKING:
    from nbgrader.api import Gradebook


class Output(Protocol):
    """Where a grading command's lines go: a terminal, a StringIO, or a terminal and a log file together."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


def prepare_this_process() -> None:
    """This process runs nbgrader: its alembic is found from a venv that is not activated, and its own submission
    bookkeeping's warning about its session, on every new submission, is not shown (not ours to fix)."""
    warnings.filterwarnings("ignore", category=SAWarning, module="nbgrader")
    venv_first_on_path()


def workers_sandbox(client: Client, limits: SandboxLimits) -> str:
    """The line saying how each of the cluster's workers runs student code; SandboxUnavailable when one of them has no
    sandbox (and was not started with PERFAUDIT_UNSANDBOXED=1): then nobody is graded there."""
    values = {name: getattr(limits, name) for name in limits.trait_names(config=True)}
    found = client.run(task.sandbox_status, values)
    for worker_address, (refusal, _) in sorted(found.items()):
        if refusal:
            raise sandbox.SandboxUnavailable(f"On the Dask worker {worker_address}: {refusal}")
    return "; ".join(sorted({line for _, line in found.values()}))


class GradingSession:
    """The course, the assignment's definition and the cluster that grade it, for one run of the batch or the service.

    settings: {"Section.trait": value} on top of nbgrader_config.py for every task (the batch's command-line
    options, the environment check's verdict); never the gradebook's URL, which may hold a password."""

    def __init__(self, course_dir: str | Path, settings: dict[str, Any] | None = None, db_url: str | None = None,
                 scheduler: str | None = None) -> None:
        self.course_dir = Path(course_dir).resolve()
        self.scheduler = scheduler  # a Dask scheduler's address or file, or None: a local cluster
        self.settings: dict[str, Any] = {} if settings is None else settings
        self.config = course_config(self.course_dir)  # the course's own, without the settings
        if db_url:
            self.config.CourseDirectory.db_url = db_url
        self.coursedir = CourseDirectory(config=self.config)
        self.url, self.course_id = self.coursedir.db_url, self.coursedir.course_id
        self.autograded = Path(self.coursedir.format_path(self.coursedir.autograded_directory, ".", ".")).resolve()
        self.submitted = Path(self.coursedir.format_path(self.coursedir.submitted_directory, ".", ".")).resolve()
        self.source = self.course_dir / self.coursedir.source_directory / ASSIGNMENT
        self.limits = SandboxLimits(config=self.task_config())
        self.expected: dict[str, list[str]] = {}  # {notebook: grade ids}: record_assignment's
        self.spec: dict[str, Any] | None = None  # the definition, once made
        self.sandbox = ""  # how student code runs: sandbox.status() here, or the workers' once connected
        self.sandbox_checked = False  # sandbox_of_workers() ran: no task is submitted before
        self.client: Client | None = None  # while the cluster runs
        self.definition_future: Future | None = None  # the definition, held on the cluster while it runs
        self.recorder: records.Recorder | None = None  # the record behind each grade, once the definition is made

    def record_assignment(self, out: Output) -> datetime | None:
        """expected ({notebook: grade ids}) read from the gradebook; returns the due date, or None. A gradebook without
        the assignment (the first grading after `make release`, which writes no gradebook) gets it from source/, as
        nbgrader generate_assignment records it, into a scratch release: the class's notebooks/ is left as it is. So
        does a gradebook whose tests or points differ from source/ (a hidden test edited, then `make release`): nobody
        is graded, or graded again, against tests source/ no longer has (perfaudit/grade/definition.py). The batch and
        the service both start with it."""
        with gradebook.opened(self.url, self.course_id) as course_gb:
            missing = not any(a.name == ASSIGNMENT and a.notebooks for a in course_gb.assignments)
            changed = [] if missing else out_of_step(course_gb.find_assignment(ASSIGNMENT), self.source)
        if missing or changed:
            with tempfile.TemporaryDirectory(prefix="perfaudit-release-") as scratch:
                try:
                    nbgrader("generate_assignment", ASSIGNMENT, "--force", f"--db={self.url}",
                             f"--CourseDirectory.release_directory={scratch}", course_dir=self.course_dir)
                except RuntimeError as refusal:
                    if not changed:
                        raise
                    said = [line for line in str(refusal).splitlines() if "Cannot" in line] or [str(refusal)]
                    raise NothingToGrade(f"source/ differs from the assignment the gradebook holds "
                                         f"({'; '.join(changed)}) and nbgrader would not record it again: "
                                         f"{said[0].strip()}. Once it holds submissions, nbgrader takes a cell's new "
                                         "code or points, never a cell added or removed: put those cells back and run "
                                         "again. Nothing was graded.") from refusal
        if missing:
            print(f"The gradebook had no assignment '{ASSIGNMENT}': recorded it from source/ (nbgrader "
                  "generate_assignment; notebooks/ untouched).", file=out)
        elif changed:
            print(f"source/ changed since the gradebook recorded '{ASSIGNMENT}' ({'; '.join(changed)}): recorded it "
                  "again from source/ (nbgrader generate_assignment; notebooks/ untouched); grades made before are "
                  "graded again.", file=out)
        with gradebook.opened(self.url, self.course_id) as course_gb:
            self.expected = {nb.name: [cell.name for cell in nb.source_cells]
                             for nb in course_gb.find_assignment(ASSIGNMENT).notebooks}
            return course_gb.find_assignment(ASSIGNMENT).duedate

    def folder(self, kind: str, student: str) -> Path:
        """<course>/<kind>/<student>/<assignment> as nbgrader's CourseDirectory names it."""
        return Path(self.coursedir.format_path(kind, student, ASSIGNMENT))

    def task_config(self) -> Config:
        """The course's configuration with the settings on top, as a grading task reads it."""
        return course_config(self.course_dir, self.settings)

    def sandbox_here(self) -> str:
        """How student code runs on this machine (where a local cluster's workers run)."""
        self.sandbox = sandbox.status(self.limits)
        return self.sandbox

    def make_definition(self) -> dict[str, Any]:
        """The assignment's definition for the workers, from a template gradebook (the course's, without a student)."""
        with tempfile.TemporaryDirectory(prefix="perfaudit-definition-") as scratch:
            template = Path(scratch) / "template.db"
            gradebook.make_template(self.url, template, self.course_id)
            self.spec = task.definition(self.course_dir, ASSIGNMENT, self.expected, template)
        return self.spec

    @contextmanager
    def cluster(self, workers: int, log: Path) -> Iterator[Client]:
        """engine.cluster() with the definition held on it; then sandbox_of_workers(), before any submit().
        make_definition() first."""
        assert self.spec is not None, "make_definition() before the cluster"
        with engine.cluster(self.scheduler, workers, log=log) as client:
            self.client = client
            try:
                self.definition_future = client.submit(task.hold, self.spec, pure=False,
                                                       key=f"definition-{self.spec['digest'][:16]}")
                yield client
            finally:
                self.client = self.definition_future = None
                self.sandbox_checked = False

    def sandbox_of_workers(self) -> str:
        """How the cluster's workers run student code (inside cluster()): a cluster's, each worker's own, and
        SandboxUnavailable when one has no sandbox; a local cluster's, this machine's."""
        assert self.client is not None, "sandbox_of_workers() inside cluster()"
        if self.scheduler:
            self.sandbox = workers_sandbox(self.client, self.limits)
        elif not self.sandbox:
            self.sandbox_here()
        self.sandbox_checked = True
        return self.sandbox

    def start_recording(self, course_gb: "Gradebook | None" = None) -> records.Recorder:
        """The record behind each grade (records.recorder): the same limits, sandbox, tests and versions for the batch
        and the service. course_gb: the course's gradebook, when the caller holds it open."""
        assert self.spec is not None, "make_definition() first"
        if course_gb is None:
            with gradebook.opened(self.url, self.course_id) as opened:
                return self.start_recording(opened)
        self.recorder = records.recorder(self.autograded, self.spec, course_gb, self.coursedir.source_directory,
                                         self.limits, self.sandbox, self.task_config())
        return self.recorder

    def submit(self, student: str, files: dict[str, bytes], notebooks: list[str], feedback: bool,
               key_prefix: str) -> Future:
        """One student's grading task (task.grade) on the cluster; its key `<key_prefix>-<student>-<random>`."""
        assert self.client is not None and self.definition_future is not None, "submit() inside cluster()"
        assert self.sandbox_checked, "sandbox_of_workers() before the first task"
        drawn_from = graded.variant_id(student, self.submitted)  # the LMS's id, where intake recorded one
        return self.client.submit(task.grade, self.definition_future, student, files, notebooks, self.settings,
                                  feedback, drawn_from if drawn_from != student else None,
                                  key=f"{key_prefix}-{student}-{uuid.uuid4().hex[:8]}", pure=False)
