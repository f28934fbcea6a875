"""grades.csv: nbgrader's export plug-in for this course, used by `nbgrader export` and by the batch alike.

nbgrader_config.py names it (`c.ExportApp.plugin_class`), so plain `nbgrader export` and `python -m perfaudit.grade`
write the same file. The columns are those of nbgrader's own CsvExportPlugin and one more, `not_graded`; unlike
nbgrader's, each row is written by `csv.writer`, so an LMS name such as Canvas's "Doe, Jane" stays in its column, and
a text field a spreadsheet would run as a formula (it starts with = + - @, or has one after a semicolon) gets an
apostrophe, and control characters become spaces.

A student with a notebook not graded (refused at intake, or not graded again since: perfaudit/grade/refused.py) has
no raw_score, late_submission_penalty or score, only the reason, under not_graded. A student without a submission
gets 0, as nbgrader's export gives.
"""

import csv
import re
import unicodedata
from collections.abc import Collection
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.plugins import ExportPlugin

from perfaudit import ASSIGNMENT
from perfaudit.grade import names, refused

NBGRADER_COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                    "raw_score", "late_submission_penalty", "score", "max_score"]  # CsvExportPlugin's, in its order
COLUMNS = [*NBGRADER_COLUMNS, "not_graded"]
TEXT_COLUMNS = {"student_id", "last_name", "first_name", "email"}  # what a student or an LMS chose
# A separator some spreadsheets split a row on (a locale's list separator) that csv.writer leaves unquoted: a
# formula can start right after it ("Jane;=1+1").
UNQUOTED_SEPARATOR = re.compile(r";(?=\s*[=+\-@])")


def neutral(text: str) -> str:
    """text as a spreadsheet shows it and never runs: control characters (a bare CR ends a row for many readers,
    and csv.writer quotes only "\n" here) as spaces; an apostrophe before a formula's first character (names.py)
    at the start, after leading spaces, and after a semicolon."""
    text = "".join(" " if unicodedata.category(char) == "Cc" else char for char in text)
    text = UNQUOTED_SEPARATOR.sub(";'", text)
    return f"'{text}" if text.lstrip(" ").startswith(names.FORMULA_START) else text


def rows(gradebook: Gradebook, not_graded: dict[str, dict[str, str]], students: Collection[str] = (),
         assignments: Collection[str] = ()) -> list[dict[str, str]]:
    """One row a student per assignment, as nbgrader's CSV export gives them, with not_graded ("notebook: why; ...");
    only the students and assignments named, where some are (ExportPlugin's `student` and `assignment`)."""
    found = []
    for assignment in gradebook.assignments:
        if assignments and assignment.name not in assignments:
            continue
        for student in gradebook.students:
            if students and student.id not in students:
                continue
            row: dict[str, Any] = {
                "assignment": assignment.name, "duedate": assignment.duedate, "student_id": student.id,
                "last_name": student.last_name, "first_name": student.first_name, "email": student.email,
                "max_score": assignment.max_score}
            try:
                submission = gradebook.find_submission(assignment.name, student.id)
            except MissingEntry:  # nothing submitted: 0, as nbgrader's export says
                row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0)
            else:
                penalty = submission.late_submission_penalty
                row.update(timestamp=submission.timestamp, raw_score=submission.score,
                           late_submission_penalty=penalty, score=max(0.0, submission.score - penalty))
            why = not_graded.get(student.id, {})
            if why:  # no score at all: a sum of what was graded would read as a grade
                row.update(raw_score="", late_submission_penalty="", score="")
            row["not_graded"] = "; ".join(f"{nb}: {reason}" for nb, reason in sorted(why.items()))
            found.append({key: _text(key, row[key]) for key in COLUMNS})
    return found


def write(gradebook: Gradebook, path: str | Path, submitted: str | Path, assignment: str,
          students: Collection[str] = (), assignments: Collection[str] = ()) -> None:
    """Write grades.csv for the course whose submitted/ folder is `submitted` (refusals: the assignment's)."""
    held = refused.held_back(gradebook, submitted, assignment)
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows(gradebook, held, [str(s) for s in students], [str(a) for a in assignments]))


class GradesCsv(ExportPlugin):
    """grades.csv with nbgrader's columns, quoted as CSV, formulas neutralized, and a not_graded column."""

    def export(self, gradebook: Gradebook) -> None:
        # `nbgrader export` makes the plug-in with itself as parent: its course directory says where submitted/ is
        coursedir = getattr(self.parent, "coursedir", None) or CourseDirectory(config=self.config)
        submitted = coursedir.format_path(coursedir.submitted_directory, ".", ".")
        dest = self.to or "grades.csv"
        self.log.info("Exporting grades to %s", dest)
        write(gradebook, dest, submitted, ASSIGNMENT, students=self.student, assignments=self.assignment)


def _text(key: str, value: Any) -> str:
    text = "" if value is None else str(value)
    return neutral(text) if key in TEXT_COLUMNS else text
