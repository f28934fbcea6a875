"""A course directory for the instructor's tools and tests: plain nbgrader run in it (bookkeeping/coursedir.py, which
the batch and the service use themselves), and its sqlite gradebook read."""

from pathlib import Path

from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT
from perfaudit.bookkeeping.coursedir import make_writable, nbgrader, not_a_course
from perfaudit.grade import gradebook

__all__ = ["make_writable", "nbgrader", "not_a_course", "scores", "totals"]


def _read_gradebook(course_dir, reader):
    """reader(gradebook, assignment) on the course's sqlite gradebook."""
    with Gradebook(f"sqlite:///{Path(course_dir) / 'gradebook.db'}") as course_gradebook:
        return reader(course_gradebook, ASSIGNMENT)


def scores(course_dir):
    """{student: {notebook: (score, max_score)}} for the assignment, from the course's sqlite gradebook."""
    return _read_gradebook(course_dir, gradebook.scores)


def totals(course_dir):
    """{student: points over every notebook, less the late penalty} for the assignment, from the course's sqlite
    gradebook."""
    return _read_gradebook(course_dir, gradebook.totals)
