"""Who audits which variant of notebook 5: `python -m perfaudit.grade --variants` (make variants).

Every student in the gradebook or in submitted/, with the id their variant is drawn from (the LMS's id for a
student who came through an LMS download: perfaudit/autograde/graded.py), their variant and the seed of their
data (perfaudit/variants.py), sorted by student. A student the instructor adds before anyone submits (nbgrader db
student add) is listed too, so the list can be handed out at the start of a term.
"""

from pathlib import Path

from perfaudit import variants
from perfaudit.autograde import graded
from perfaudit.bookkeeping.coursedir import course_directory, venv_first_on_path
from perfaudit.grade.escape import one_line
from perfaudit.grade.gradebook import opened


def students(course_dir: str | Path, db_url: str | None = None) -> tuple[list[str], Path]:
    """(the gradebook's students and submitted/'s folders, sorted; submitted/)."""
    venv_first_on_path()  # nbgrader's Gradebook calls the `alembic` command: the venv's, unactivated or not
    coursedir = course_directory(course_dir, db_url=db_url)
    submitted = Path(coursedir.root) / coursedir.submitted_directory
    found = {entry.name for entry in submitted.iterdir() if entry.is_dir() and not entry.is_symlink()
             and not entry.name.startswith(".")} if submitted.is_dir() else set()
    with opened(coursedir.db_url, coursedir.course_id) as gradebook:
        found |= {student.id for student in gradebook.students}
    return sorted(found), submitted


def lines(course_dir: str | Path, db_url: str | None = None) -> list[str]:
    """The listing: a header (the term's value), then one line per student."""
    found, submitted = students(course_dir, db_url)
    out = [f"Notebook 5's variants this term (TERM {variants.TERM!r} in perfaudit/variants.py): {len(found)} "
           "student(s)", f"  {'student':<30} {'variant drawn from':<22} variant  data seed"]
    for student in found:
        key = graded.variant_id(student, submitted)
        assigned = variants.assigned(key)
        out.append(f"  {one_line(student):<30} {one_line(key):<22} {assigned.variant:<8} {assigned.seed}")
    return out
