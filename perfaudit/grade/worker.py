"""What a grading task runs (perfaudit/grade/task.py): nbgrader's own autograde and generate_feedback, one student.

Everything nbgrader_config.py sets (preprocessor lists, Execute's settings, a kernel manager) applies here
exactly as it does to plain `nbgrader autograde`, the sandbox's limits (SandboxLimits) included.
"""

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nbgrader.converters import Autograde, GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import capture_log

from perfaudit.autograde.plugins import canary
from perfaudit.bookkeeping.coursedir import course_config
from perfaudit.grade import gradebook


def output_to_log(log_path: str | Path) -> None:
    """Kernels write their own warnings to the stderr they inherit: into the log, not over the progress bar."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)


def _failure(result):
    """The last line of nbgrader's traceback: what went wrong, in one line."""
    lines = [line for line in (result.get("error") or result.get("log") or "").splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "Exception" in line]
    return (errors or lines or ["nbgrader failed without a message"])[-1].strip()


class _Autograde(Autograde):
    """nbgrader's Autograde, keeping each exception a conversion raised (`raised`): the worker tells the environment's
    failure from the submission's by the exception itself, never by words in nbgrader's log, which quotes the
    student's cells."""

    raised: list[BaseException]

    def init_assignment(self, assignment_id: str, student_id: str) -> None:
        try:
            super().init_assignment(assignment_id, student_id)
        except BaseException as error:
            self.raised.append(error)
            raise

    def convert_single_notebook(self, notebook_filename: str) -> None:
        try:
            super().convert_single_notebook(notebook_filename)
        except BaseException as error:
            self.raised.append(error)
            raise


def _convert(converter_class, config):
    """One conversion, as `nbgrader <command>` runs it: nbgrader's result, with `raised`, the exceptions it raised. A
    kernel that never started or was killed from outside is run once more by TrustedExecute itself
    (perfaudit/autograde/isolation/kernel_fate.py), for plain nbgrader too."""
    converter = converter_class(coursedir=CourseDirectory(config=config), config=config)
    converter.force = True
    converter.raised = []
    return {**capture_log(converter), "raised": converter.raised}


def autograde(course_dir: str | Path, assignment: str, student: str, notebooks: Iterable[str], template: str | Path,
              scratch_dir: str | Path, settings: dict[str, Any]) -> dict[str, Any]:
    """Autograde the given notebooks of one student into a fresh scratch gradebook; return what happened.

    Each notebook is a conversion of its own, so one that fails does not take the others with it.
    """
    started = time.monotonic()
    scratch = Path(scratch_dir) / f"{student}.db"
    gradebook.copy_template(template, scratch)
    failures: dict[str, str]
    environment: dict[str, str]
    failures, environment = {}, {}  # environment: not graded, the grading environment's fault, not the student's
    seconds: dict[str, float] = {}  # {notebook: its conversion's wall time}: the record behind its grade keeps it
    for notebook in notebooks:
        notebook_started = time.monotonic()
        config = course_config(
            course_dir,
            {
                **settings,
                "CourseDirectory.db_url": gradebook.sqlite_url(scratch),
                "CourseDirectory.assignment_id": assignment,
                "CourseDirectory.student_id": student,
                "CourseDirectory.notebook_id": notebook,
                # one time limit for the submission's notebooks together, each a conversion of its own
                "TrustedExecute.submission_started": started,
            },
        )
        result = _convert(_Autograde, config)
        raised = result.get("raised", [])
        broken = next((found for error in raised if (found := canary.environment_failure(error))), None)
        if not result["success"] and broken is not None:
            environment[notebook] = (str(broken).strip().splitlines() or [type(broken).__name__])[0]
        elif not result["success"] and any(canary.disk_full(error) for error in raised):
            environment[notebook] = f"not graded: environment: the disk is full ({_failure(result)})"
        elif not result["success"]:
            failures[notebook] = f"nbgrader could not grade it: {_failure(result)}"
        seconds[notebook] = time.monotonic() - notebook_started
    return {"student": student, "scratch": str(scratch), "failures": failures, "environment": environment,
            "seconds": time.monotonic() - started, "notebook_seconds": seconds}


def feedback(course_dir: str | Path, assignment: str, student: str, settings: dict[str, Any]) -> dict[str, Any]:
    """nbgrader generate_feedback for one student (reads the gradebook, writes feedback/<student>/)."""
    config = course_config(
        course_dir, {**settings, "CourseDirectory.assignment_id": assignment, "CourseDirectory.student_id": student}
    )
    converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
    converter.force = True
    result = capture_log(converter)
    return {"student": student, "failure": None if result["success"] else _failure(result)}
