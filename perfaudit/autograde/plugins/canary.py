"""A broken grading environment stops grading; it never scores students 0 as if they had failed.

Two guards, both through the very pipeline students are graded by (TrustedExecute: sandbox, limits, tests in the
grader):
- The canary: the instructor's solution of a notebook (from source/) must score full marks, and the untouched
  release none. `python -m perfaudit.grade` runs it on every notebook before it grades anyone; plain
  `nbgrader autograde` runs it once per process and notebook, before the first student's copy of that notebook,
  unless the batch command's check passed for this very environment (perfaudit/autograde/plugins/envrecord.py).
- An error the student cannot have caused marks the notebook "not graded: environment" (GradingEnvironmentError)
  instead of scoring it: the kernel cannot start, or an instructor's locked cell fails before any student cell
  ran (the setup cell's imports of JAX and of the course's checks).

The pipeline is handed in (`pipeline`: TrustedExecute, by execute.py itself and by the batch grader's task): the
preprocessor runs the canary, so the canary does not import the preprocessor back.
"""

import errno
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
from nbgrader import utils
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from perfaudit import paths, variants
from perfaudit.autograde.errors import GradingEnvironmentError, SolutionFailsItsTest
from perfaudit.autograde.plugins import envrecord

SKIP = "PERFAUDIT_SKIP_CANARY"  # "1": grade without the canary (the summary says so)


DISK_FULL = ("No space left on device", "Disk quota exceeded", "database or disk is full")  # what each says
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_SQLITE_FULL = "database or disk is full"


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    """error, then each exception it was raised from (its cause, else its context), each once."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def disk_full(error: BaseException | None) -> bool:
    """Whether error, or an exception it was raised from, is the grader's disk being full: an OSError ENOSPC or
    EDQUOT, or SQLite's own "database or disk is full" (sqlite3's, or SQLAlchemy's around it). Decided by the
    exception's kind and number, never by words in a message, which can quote a submission (a cell's source, a file's
    name): a student cannot make their own failure the environment's."""
    for raised in _chain(error):
        for found in (raised, getattr(raised, "orig", None)):  # orig: the DB-API error SQLAlchemy wraps
            if isinstance(found, OSError) and found.errno in _FULL_ERRNOS:
                return True
            if isinstance(found, sqlite3.OperationalError) and str(found) == _SQLITE_FULL:
                return True
    return False


def environment_failure(error: BaseException | None) -> "GradingEnvironmentError | None":
    """The GradingEnvironmentError that error is, or was raised from; None when the failure is not the
    environment's."""
    return next((raised for raised in _chain(error) if isinstance(raised, GradingEnvironmentError)), None)


def failing_test(nb: NotebookNode) -> tuple[str, str] | None:
    """(grade id, 'ename: evalue') when the first error of a graded notebook is raised in a test cell, or None."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                if not (utils.is_grade(cell) and not utils.is_solution(cell) and cell.cell_type == "code"):
                    return None
                message = (output.get("evalue") or "").strip().splitlines()
                return (cell["metadata"]["nbgrader"]["grade_id"],
                        f"{output.get('ename')}: {message[0] if message else ''}")
    return None


def first_error(nb: NotebookNode) -> tuple[str, str] | None:
    """(grade id or cell number, 'ename: evalue') of the first cell with an error, or None."""
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"cell {index + 1}"
                return name, f"{output.get('ename')}: {output.get('evalue')}"
    return None


def scores(nb: NotebookNode) -> tuple[float, float]:
    """(points earned, points possible) of a graded notebook's test cells, as nbgrader scores them."""
    earned = possible = 0.0
    for cell in nb.cells:
        if utils.is_grade(cell) and not utils.is_solution(cell) and cell.cell_type == "code":
            score, max_score = utils.determine_grade(cell)
            earned, possible = earned + (score or 0), possible + max_score
    return earned, possible


# Who the canary grades as: notebook 5 hands out a variant per student id (perfaudit/variants.py), and the
# instructor's solution must pass in any; this id's variant is the one checked here.
STUDENT = variants.INSTRUCTOR


def _graded(path, config, pipeline):
    """The notebook at path, graded through the pipeline. The grader failing on the instructor's own notebook (a
    package it cannot import, say) is the environment's fault too: GradingEnvironmentError, never a traceback."""
    try:
        with tempfile.TemporaryDirectory(prefix="perfaudit-canary-") as folder:
            for sibling in path.parent.glob("*.ipynb"):  # as a submission holds them: notebook 4 reads notebook 3
                shutil.copy(sibling, folder)
            # the solution's own time, never what is left of a submission's that it is graded beside
            execute = pipeline(config=config, canary=False, submission_started=0.0)
            nb, _ = execute.preprocess(nbformat.read(path, as_version=4),
                                       {"metadata": {"path": folder}, "nbgrader": {"student": STUDENT}})
    except Exception as error:  # noqa: BLE001 - whatever it is, it is not a student's doing
        if disk_full(error):  # said as such by the graders: exit 3, "the disk is full"
            raise
        raise GradingEnvironmentError(
            f"the grading environment is broken: the grader itself failed on {'/'.join(path.parts[-3:])} "
            f"({type(error).__name__}: {error}). No student was graded with it. Fix the environment and grade again "
            f"(or skip this check: {SKIP}=1, or --skip-canary)."
        ) from error
    return nb


def check_notebook(name: str, config: Config, pipeline: Callable[..., Any]) -> None:
    """Raise GradingEnvironmentError unless the instructor's solution of notebook `name` scores full marks through the
    pipeline (the Execute preprocessor students are graded by) and its release (when there is one) scores none."""
    coursedir = CourseDirectory(config=config)
    assignment = coursedir.assignment_id if coursedir.assignment_id not in ("", "*") else None
    source = _find(coursedir.source_directory, coursedir, assignment, name)
    if source is None:
        return
    nb = _graded(source, config, pipeline)
    earned, possible = scores(nb)
    test = failing_test(nb) if earned != possible else None
    if test:
        stage = next((n for n, filename in paths.STAGES.items() if filename == f"{name}.ipynb"), "N")
        relative = source.relative_to(Path(coursedir.root)) if source.is_relative_to(Path(coursedir.root)) else source
        raise SolutionFailsItsTest(
            f"the instructor's solution of {name} fails its own test '{test[0]}' ({test[1]}): the error is raised in "
            f"that test's cell, after every cell above it ran clean, so the test is at fault, not the environment. "
            f"No student was graded. Fix the test in {relative} (its hidden part included) and grade again; "
            f"make check STAGE={stage} IMPLEMENTATION=solution runs the solution's tests."
        )
    if earned != possible:
        where, error = first_error(nb) or ("?", "no error shown")
        raise GradingEnvironmentError(
            f"the grading environment is broken: the instructor's solution of {name} scores {earned:g}/{possible:g} "
            f"through the grading pipeline; the first failing cell is '{where}' ({error}). No student was graded "
            f"with it. Fix the environment and grade again (or skip this check: {SKIP}=1, or --skip-canary)."
        )
    release = _find(coursedir.release_directory, coursedir, assignment, name)
    if release is not None:
        earned, _ = scores(_graded(release, config, pipeline))
        if earned:
            raise GradingEnvironmentError(f"the untouched release of {name} scores {earned:g}: its tests pass "
                                          "without an answer. No student was graded; fix the tests in source/ and "
                                          "release again.")


def _find(directory, coursedir, assignment, name):
    root = Path(coursedir.root) / directory
    for path in sorted(root.glob(f"{assignment or '*'}/{name}.ipynb")):
        return path
    return None


# (source folder, notebook) -> None when the canary passed, else why it failed
_verdicts: dict[tuple[str, str], str | None] = {}
# course folder -> the batch command's record of a passed check for this environment, or None
_records: dict[str, dict[str, Any] | None] = {}


def check_once_per_process(name: str, config: Config, pipeline: Callable[..., Any]) -> str | None:
    """check_notebook, at most once per process and notebook (plain nbgrader grades many students in one), and not
    at all where the batch command's environment check passed for this very environment (envrecord). Returns the
    sentence to log when it was skipped for that reason, the first time."""
    root = str(Path(CourseDirectory(config=config).root).resolve())
    key = (root, name)
    said = None
    if key not in _verdicts:
        if root not in _records:  # one fingerprint per course and process, not one per notebook
            _records[root] = envrecord.earlier_in_this_process(config)
        earlier = _records[root]
        if earlier:
            _verdicts[key] = None
            said = (f"environment check for {name}: passed earlier for this environment (checked "
                    f"{earlier['checked_at']}); it runs again when the course package, source/, the release, "
                    "nbgrader_config.py, the requirements or the sandbox change")
        else:
            try:
                check_notebook(name, config, pipeline)
                _verdicts[key] = None
            except GradingEnvironmentError as error:
                _verdicts[key] = str(error)
    if _verdicts[key]:
        raise GradingEnvironmentError(_verdicts[key])
    return said


def still_sound(name: str, config: Config, pipeline: Callable[..., Any]) -> bool:
    """Run the canary again now (a fault may have appeared mid-run, a full disk): True when it passes."""
    try:
        check_notebook(name, config, pipeline)
    except GradingEnvironmentError:
        return False
    return True
