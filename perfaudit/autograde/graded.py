"""Whose notebook the grader is grading: the gradebook's student id, and so the variant of notebook 5 its tests
check against (perfaudit/variants.py), whatever the notebook claims.

TrustedExecute (plugins/execute.py) sets it for the notebook it grades, from nbgrader's own record of the
submission (the student id it autogrades under: both graders, the grading service and Dask workers alike). The
kernel gets the same id in PERFAUDIT_STUDENT, and so does the grader's own process while it grades: the names the
grader makes of the instructor's cells itself (the setup cell's variant among them) are the student's. Where no
grader set it (the instructor's checker, which runs the hidden tests in the notebook's own process), the tests
take the variant the notebook took.

A process global, not a context variable: nbclient may run a cell's test on a thread of its own, and a process
grades one notebook at a time (nbgrader's autograde is sequential; a Dask task holds a lock while it grades).
"""

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perfaudit import variants
from perfaudit.bookkeeping.coursedir import LMS_RECORD

_student: str | None = None


@contextlib.contextmanager
def grading(student: str | None) -> Iterator[None]:
    """Within: the tests grade `student`'s notebook (None: no student known, the notebook's own variant)."""
    global _student
    before, _student = _student, student
    # and in this process's environment: what the grader makes of the instructor's cells itself (the setup cell's
    # variants.mine(), plugins/verdicts.py) is the graded student's too, as is what the kernel inherits
    env_before = os.environ.get(variants.STUDENT_ENV)
    if student is not None:
        os.environ[variants.STUDENT_ENV] = student
    try:
        yield
    finally:
        _student = before
        if env_before is None:
            os.environ.pop(variants.STUDENT_ENV, None)
        else:
            os.environ[variants.STUDENT_ENV] = env_before


def variant_id(student: str, submitted_dir: str | Path) -> str:
    """The id a student's variant is drawn from: the LMS's own id of a student who came through an LMS download
    (Canvas's user id, Moodle's participant id, as intake recorded them: perfaudit/grade/intake.py), which is what
    the student knows and states in their copy; else the gradebook's id (the hub's login name, nbgrader's exchange)."""
    try:
        record: dict[str, Any] = json.loads((Path(submitted_dir) / LMS_RECORD).read_text())
        lms = record[student]["id"]
    except (OSError, ValueError, KeyError, TypeError):
        return student
    return str(lms) if isinstance(lms, (str, int)) and str(lms) else student


def student() -> str | None:
    """The gradebook's id of the student graded, or None outside grading."""
    return _student


def assignment() -> variants.Assigned:
    """The variant and seed the tests check against: the graded student's, else the notebook's own."""
    return variants.assigned(_student) if _student is not None else variants.mine()
