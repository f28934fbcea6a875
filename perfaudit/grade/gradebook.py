"""The one-writer rule: workers grade into scratch gradebooks, the parent alone writes the course's gradebook.

A grading task runs nbgrader's own autograde against a private sqlite copy of the assignment's definition (its
notebooks and cells, no submissions), on whichever machine runs it, so nothing it does can lock the course's
gradebook. It returns that student's results (scores, comments, timestamp, late penalty) as plain data; the
client alone writes them into the course's gradebook, applying SaveAutoGrades' rule for needs_manual_grade
against the manual scores the course gradebook holds.

A notebook refused at intake (perfaudit/grade/refused.py) has no row in the student's submission: nbgrader's
autograde gives every notebook of the assignment a row, a missing file's tests 0, so the writer removes that row
(nbgrader's remove_submission_notebook) and puts it back, as nbgrader's add_submission makes it, once the notebook is
graded. A submission without a row for each notebook of the assignment has no total: that notebook is not graded.
"""

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from nbgrader.api import (Base, Comment, Grade, Gradebook, MissingEntry, SubmittedAssignment,
                          SubmittedNotebook)
from sqlalchemy import create_engine, insert, inspect, select, text

from perfaudit.grade import names

# What a scratch gradebook needs of the course's gradebook: the assignment's definition, no student data.
SUBMISSION_TABLES = {"student", "submitted_assignment", "submitted_notebook", "grade", "comment"}


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{path}"


def make_template(course_url: str, template_path: str | Path, course_id: str) -> None:
    """Write a sqlite gradebook holding the course gradebook's definitions only (any SQLAlchemy URL)."""
    source, target = create_engine(course_url), create_engine(sqlite_url(template_path))
    with source.connect() as read:
        stamp = read.execute(text("SELECT version_num FROM alembic_version")).scalar() \
            if inspect(read).has_table("alembic_version") else None
    if stamp is None:  # a course gradebook never stamped: nbgrader creates the schema and asks alembic for the stamp
        with Gradebook(sqlite_url(template_path), course_id):
            pass
    else:  # the schema, and the course gradebook's own stamp: nbgrader would run the `alembic` command for it (2 s)
        with target.begin() as write:
            Base.metadata.create_all(write)
            write.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            write.execute(text("INSERT INTO alembic_version (version_num) VALUES (:stamp)"), {"stamp": stamp})
    with source.connect() as read, target.begin() as write:
        for table in Base.metadata.sorted_tables:
            if table.name in SUBMISSION_TABLES:
                continue
            rows = [dict(row) for row in read.execute(select(table)).mappings()]
            write.execute(table.delete())
            if rows:
                write.execute(insert(table), rows)
    source.dispose()
    target.dispose()


def copy_template(template_path: str | Path, scratch_path: str | Path) -> None:
    """A consistent file copy through sqlite's backup API."""
    with sqlite3.connect(template_path) as src, sqlite3.connect(scratch_path) as dst:
        src.backup(dst)


@contextmanager
def opened(url: str, course_id: str) -> Iterator[Gradebook]:
    with Gradebook(url, course_id) as gradebook:
        yield gradebook


def read_submission(scratch_url: str, course_id: str, assignment: str, student: str) -> dict[str, Any]:
    """One student's autograde results in a scratch gradebook, as plain data (what a grading task returns).

    {"timestamp": ISO text or None, "notebooks": {notebook: {"late_submission_penalty": x,
    "grades": {grade id: auto score}, "comments": {comment id: auto comment}}}}
    """
    with Gradebook(scratch_url, course_id) as scratch:
        graded = scratch.find_submission(assignment, student)
        return {
            "timestamp": graded.timestamp.isoformat() if graded.timestamp else None,
            "notebooks": {
                nb.name: {
                    "late_submission_penalty": nb.late_submission_penalty,
                    "grades": {grade.name: grade.auto_score for grade in nb.grades},
                    "comments": {comment.name: comment.auto_comment for comment in nb.comments},
                }
                for nb in graded.notebooks
            },
        }


def apply_submission(course_gb: Gradebook, assignment: str, student: str,
                     results: dict[str, Any]) -> SubmittedAssignment:
    """Write one student's results (read_submission's plain data) into the course gradebook."""
    timestamp = datetime.fromisoformat(results["timestamp"]) if results["timestamp"] else None
    course_gb.update_or_create_student(student)
    target = course_gb.update_or_create_submission(assignment, student, timestamp=timestamp)
    for notebook, graded in results["notebooks"].items():
        target_nb = submitted_notebook(course_gb, notebook, assignment, student)
        target_nb.late_submission_penalty = graded["late_submission_penalty"]
        for name, auto_score in graded["grades"].items():
            kept = course_gb.find_grade(name, notebook, assignment, student)
            kept.auto_score = auto_score
            # SaveAutoGrades' rule, against the manual score the course gradebook holds.
            kept.needs_manual_grade = kept.manual_score is not None or kept.auto_score is None
        for name, auto_comment in graded["comments"].items():
            course_gb.find_comment(name, notebook, assignment, student).auto_comment = auto_comment
    course_gb.db.commit()
    return target


def record_empty(course_gb: Gradebook, assignment: str, student: str) -> None:
    """A student with nothing gradable still gets a submission in the gradebook, scored 0."""
    course_gb.update_or_create_student(student)
    submission = course_gb.update_or_create_submission(assignment, student)
    for notebook in submission.assignment.notebooks:  # one withheld before is 0 now: it was not submitted
        submitted_notebook(course_gb, notebook.name, assignment, student)
    for nb in submission.notebooks:
        for grade in nb.grades:
            grade.auto_score = 0
            grade.needs_manual_grade = False
    course_gb.db.commit()


def submitted_notebook(course_gb: Gradebook, notebook: str, assignment: str, student: str) -> SubmittedNotebook:
    """The student's row for a notebook of their submission, put back (as nbgrader's add_submission makes it: a grade
    and comment per cell, no score) where withhold removed it."""
    try:
        return course_gb.find_submission_notebook(notebook, assignment, student)
    except MissingEntry:
        pass
    definition = course_gb.find_notebook(notebook, assignment)
    found = SubmittedNotebook(notebook=definition, assignment=course_gb.find_submission(assignment, student))
    for cell in definition.grade_cells:
        Grade(cell_id=cell.id, notebook=found)
    for cell in definition.solution_cells:
        Comment(cell_id=cell.id, notebook=found)
    for cell in definition.task_cells:
        Comment(cell_id=cell.id, notebook=found)
        Grade(cell_id=cell.id, notebook=found)
    course_gb.db.add(found)
    course_gb.db.commit()
    return found


def withhold(course_gb: Gradebook, assignment: str, student: str, notebooks: list[str]) -> None:
    """No row for these notebooks of the student's submission (refused at intake): no score, not even a 0."""
    for notebook in notebooks:
        try:
            course_gb.remove_submission_notebook(notebook, assignment, student)
        except MissingEntry:
            pass


def withheld(course_gb: Gradebook, assignment: str) -> dict[str, list[str]]:
    """{student: [notebooks of the assignment their submission has no row for]}: not graded, so no total."""
    found = course_gb.find_assignment(assignment)
    every = [nb.name for nb in found.notebooks]
    missing = {sub.student.id: sorted(set(every) - {nb.name for nb in sub.notebooks}) for sub in found.submissions}
    return {student: notebooks for student, notebooks in missing.items() if notebooks}


def maxima(course_gb: Gradebook, assignment: str) -> dict[str, float]:
    """{notebook: its points} for every notebook of the assignment, in name order."""
    return {nb.name: nb.max_score for nb in sorted(course_gb.find_assignment(assignment).notebooks,
                                                   key=lambda nb: nb.name)}


def scores(course_gb: Gradebook, assignment: str) -> dict[str, dict[str, tuple[float, float]]]:
    """{student: {notebook: (score, max_score)}}: the score as the gradebook gives it, manual grades and extra credit
    included, less nbgrader's late penalty (what export.final_grades and the LMS get); a notebook withheld (no row)
    is absent."""
    return {
        sub.student.id: {nb.name: (nb.score - (nb.late_submission_penalty or 0), nb.max_score) for nb in sub.notebooks}
        for sub in course_gb.find_assignment(assignment).submissions
    }


def totals(course_gb: Gradebook, assignment: str) -> dict[str, float | None]:
    """{student: total after the late penalty}, None for a submission with a notebook withheld (not graded)."""
    held = withheld(course_gb, assignment)
    return {student: None if student in held else sum(score for score, _ in found.values())
            for student, found in scores(course_gb, assignment).items()}


def penalties(course_gb: Gradebook, assignment: str) -> dict[str, dict[str, tuple[float, float]]]:
    """{student: {notebook: late penalty taken}} for the notebooks nbgrader's LateSubmissionPlugin took points from."""
    found: dict[str, dict[str, tuple[float, float]]] = {}
    for sub in course_gb.find_assignment(assignment).submissions:
        for nb in sub.notebooks:
            if nb.late_submission_penalty:
                found.setdefault(sub.student.id, {})[nb.name] = (nb.late_submission_penalty, nb.score)
    return found


def pass_counts(course_gb: Gradebook, assignment: str) -> list[tuple[str, str, float, int, int]]:
    """[(notebook, test grade id, points, students who got full points, students graded)] in notebook order."""
    counts = []
    for nb in course_gb.find_assignment(assignment).notebooks:
        for cell in nb.grade_cells:
            if cell.cell_type != "code":
                continue
            grades = [g for g in cell.grades]
            passed = sum(1 for g in grades if (g.score or 0) >= cell.max_score)
            counts.append((nb.name, cell.name, cell.max_score, passed, len(grades)))
    return counts


def name_students(course_gb: Gradebook, lms_record: dict[str, dict[str, Any]]) -> None:
    """Give students the LMS's name (Formgrader lists "last, first"; without one it shows "None, None"). Moodle's
    "Jane Doe" -> Jane / Doe; Canvas's download gives only "doejane", kept as the last name. A name set before (by
    the instructor, in Formgrader) is kept. A name that holds control characters is not taken: that student stays
    unnamed. A comma or a formula is taken as it is: grades.csv quotes it and neutralizes it (grades_csv.py)."""
    for student in course_gb.students:
        said = lms_record.get(student.id)
        if not said or student.first_name or student.last_name:
            continue
        if names.problem(said["name"]):
            continue
        first, _, last = said["name"].partition(" ") if said["lms"] == "moodle" else ("", "", said["name"])
        student.first_name, student.last_name = first or None, last or first
    course_gb.db.commit()
