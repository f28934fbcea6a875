"""The one-writer rule: workers grade into scratch gradebooks, the parent alone writes the course's gradebook.

A worker runs nbgrader's own autograde against a private sqlite copy of the assignment's definition (its
notebooks and cells, no submissions), so nothing it does can lock the course's gradebook. The parent then
copies that student's results (scores, comments, timestamp, late penalty) into the course's gradebook,
applying SaveAutoGrades' rule for needs_manual_grade against the manual scores the course gradebook holds.
"""

import sqlite3
from contextlib import contextmanager

from nbgrader.api import Base, Gradebook
from sqlalchemy import create_engine, insert, select

# What a scratch gradebook needs of the course's gradebook: the assignment's definition, no student data.
SUBMISSION_TABLES = {"student", "submitted_assignment", "submitted_notebook", "grade", "comment"}


def sqlite_url(path):
    return f"sqlite:///{path}"


def make_template(course_url, template_path, course_id):
    """Write a sqlite gradebook holding the course gradebook's definitions only (any SQLAlchemy URL)."""
    with Gradebook(sqlite_url(template_path), course_id):  # creates the schema and stamps its version
        pass
    source, target = create_engine(course_url), create_engine(sqlite_url(template_path))
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


def copy_template(template_path, scratch_path):
    """A consistent file copy through sqlite's backup API."""
    with sqlite3.connect(template_path) as src, sqlite3.connect(scratch_path) as dst:
        src.backup(dst)


@contextmanager
def opened(url, course_id):
    with Gradebook(url, course_id) as gradebook:
        yield gradebook


def merge_submission(scratch_url, course_gb, assignment, student):
    """Copy one student's autograde results from a scratch gradebook into the course gradebook."""
    with Gradebook(scratch_url, course_gb.course_id) as scratch:
        graded = scratch.find_submission(assignment, student)
        course_gb.update_or_create_student(student)
        target = course_gb.update_or_create_submission(assignment, student, timestamp=graded.timestamp)
        for graded_nb in graded.notebooks:
            target_nb = course_gb.find_submission_notebook(graded_nb.name, assignment, student)
            target_nb.late_submission_penalty = graded_nb.late_submission_penalty
            for grade in graded_nb.grades:
                kept = course_gb.find_grade(grade.name, graded_nb.name, assignment, student)
                kept.auto_score = grade.auto_score
                # SaveAutoGrades' rule, against the manual score the course gradebook holds.
                kept.needs_manual_grade = kept.manual_score is not None or kept.auto_score is None
            for comment in graded_nb.comments:
                course_gb.find_comment(comment.name, graded_nb.name, assignment, student).auto_comment = (
                    comment.auto_comment
                )
        course_gb.db.commit()
        return target


def record_empty(course_gb, assignment, student):
    """A student with nothing gradable still gets a submission in the gradebook, scored 0."""
    course_gb.update_or_create_student(student)
    submission = course_gb.update_or_create_submission(assignment, student)
    for nb in submission.notebooks:
        for grade in nb.grades:
            grade.auto_score = 0
            grade.needs_manual_grade = False
    course_gb.db.commit()


def scores(course_gb, assignment):
    """{student: {notebook: (score, max_score)}}."""
    return {
        sub.student.id: {nb.name: (nb.score, nb.max_score) for nb in sub.notebooks}
        for sub in course_gb.find_assignment(assignment).submissions
    }


def pass_counts(course_gb, assignment):
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
