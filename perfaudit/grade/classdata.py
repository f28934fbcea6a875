"""The class as data: every student's score on every test, and the message of every failed test.

What the class report (classreport.py) and the regrade diff (regrade.py) read, from the gradebook (one SQL query, so
1,000 students cost one round trip, not one per grade) and the autograded notebooks (each failed test cell holds
the one error the grader wrote: its message for the student). A notebook with no autograded copy was not graded:
its tests' message is the reason the batch recorded in its state folder (perfaudit/bookkeeping/statefolder.py),
"missing: ...". A notebook whose row the gradebook does not hold (refused at intake: perfaudit/grade/refused.py) is
withheld: no score, not a 0, so it counts in no distribution, pass count or total.
Messages come from submissions (a student's exception can say anything): whoever shows one escapes it.
"""

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbgrader.api import (Assignment, Grade, GradeCell, MissingEntry, Notebook, Student, SubmittedAssignment,
                          SubmittedNotebook)
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from perfaudit.bookkeeping import statefolder

MESSAGE_CHARS = 400  # one failure message as the report shows it; the rest is cut
# Every number, signed or not, in a name too (float32 -> float#): what differs between two students' messages for
# the same cause ("a random 31x31 matrix", "expected -0.313795 at [6, 6]"); stripped from all messages alike. A
# notebook's number stays ("no 02-retracing.ipynb"): it names the notebook, it is no measurement.
NUMBER = re.compile(r"(?:(?<![\w.])[-+])?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\d|-[A-Za-z])")


@dataclass(frozen=True)
class GradedCell:
    notebook: str
    name: str  # the grade cell's grade id
    points: float

    @property
    def key(self) -> str:
        return f"{self.notebook}/{self.name}"


@dataclass
class ClassData:
    tests: list[GradedCell] = field(default_factory=list)  # [GradedCell] in notebook order
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # {student: {test key: score}}
    # {student: {test key: message}}, failed tests only
    messages: dict[str, dict[str, str]] = field(default_factory=dict)
    # {student: {notebook: reason}}: no autograded notebook
    not_graded: dict[str, dict[str, str]] = field(default_factory=dict)
    # {student: {notebook: nbgrader's late penalty}}, where one was taken
    penalties: dict[str, dict[str, float]] = field(default_factory=dict)
    # {student: {notebook: reason}}: no row in the gradebook (refused at intake), so no score and no total
    withheld: dict[str, dict[str, str]] = field(default_factory=dict)

    def notebooks(self) -> dict[str, float]:
        """{notebook: maximum} in notebook order."""
        found: dict[str, float] = {}
        for test in self.tests:
            found[test.notebook] = found.get(test.notebook, 0) + test.points
        return found

    def notebook_score(self, student: str, notebook: str) -> float:
        return sum(self.scores[student].get(t.key, 0) for t in self.tests if t.notebook == notebook)

    def total(self, student: str) -> float:
        return sum(self.scores[student].get(t.key, 0) for t in self.tests)

    def final_score(self, student: str, notebook: str) -> float:
        """The notebook's score less nbgrader's late penalty: the grade the summary, grades.csv and the LMS show."""
        return self.notebook_score(student, notebook) - self.penalties.get(student, {}).get(notebook, 0)

    def final_total(self, student: str) -> float:
        return sum(self.final_score(student, notebook) for notebook in self.notebooks())

    def graded(self, student: str, notebook: str) -> bool:
        """Whether the gradebook holds the student's notebook (not withheld)."""
        return notebook not in self.withheld.get(student, {})

    def complete(self, student: str) -> bool:
        """Whether every notebook of the student is held (graded): only then has the student a total."""
        return not self.withheld.get(student)


def cause(message: str) -> str:
    """The message with its numbers stripped: students failing for the same reason share it."""
    return NUMBER.sub("#", message)


def read(url: str, course_id: str, assignment: str, autograded: str | Path,
         students: Iterable[str] | None = None) -> ClassData:
    """ClassData for every student with a submission (or only `students`) of the assignment (course_id: unused,
    nbgrader keeps one course per gradebook)."""
    autograded = Path(autograded)
    data = ClassData()
    engine = create_engine(url)  # read with nbgrader's tables, not its Gradebook: that runs `alembic` each time
    try:
        with Session(engine) as db:
            found = db.query(Assignment).filter(Assignment.name == assignment).one_or_none()
            if found is None:
                raise MissingEntry(f"No such assignment: {assignment}")
            for nb in found.notebooks:
                data.tests += [GradedCell(nb.name, cell.name, cell.max_score) for cell in nb.grade_cells
                               if cell.cell_type == "code"]
            rows = (
                db.query(Student.id, Notebook.name, GradeCell.name, Grade.score)
                .select_from(Grade)
                .join(GradeCell, Grade.cell_id == GradeCell.id)
                .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .join(Student, SubmittedAssignment.student_id == Student.id)
                .filter(Assignment.name == assignment, GradeCell.cell_type == "code")
                .all()
            )
            held = (
                db.query(Student.id, Notebook.name)
                .select_from(SubmittedNotebook)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .join(Student, SubmittedAssignment.student_id == Student.id)
                .filter(Assignment.name == assignment)
                .all()
            )
            penalties = (
                db.query(Student.id, Notebook.name, SubmittedNotebook.late_submission_penalty)
                .select_from(SubmittedNotebook)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .join(Student, SubmittedAssignment.student_id == Student.id)
                .filter(Assignment.name == assignment, SubmittedNotebook.late_submission_penalty > 0)
                .all()
            )
    finally:
        engine.dispose()
    wanted = None if students is None else set(students)
    for student, notebook, test, score in rows:
        if wanted is None or student in wanted:
            data.scores.setdefault(student, {})[f"{notebook}/{test}"] = float(score or 0)
    for student, notebook, penalty in penalties:
        if student in data.scores:
            data.penalties.setdefault(student, {})[notebook] = float(penalty)
    state = statefolder.State(autograded)
    rows_held: dict[str, set[str]] = {}
    for student, notebook in held:
        rows_held.setdefault(student, set()).add(notebook)
    for student in data.scores:
        for notebook in sorted(set(data.notebooks()) - rows_held.get(student, set())):
            data.withheld.setdefault(student, {})[notebook] = _reason(state, student, notebook)
    for student in data.scores:
        data.messages[student], worth = {}, {}
        for notebook in data.notebooks():
            path = autograded / student / assignment / f"{notebook}.ipynb"
            if not data.graded(student, notebook):
                continue
            if path.is_file():
                failures, worth_then = _failures(path, notebook)
                data.messages[student].update(failures)
                worth.update(worth_then)
            else:
                data.not_graded.setdefault(student, {})[notebook] = _reason(state, student, notebook)
        for test in data.tests:  # a failed test with no error shown: the message says so
            if not data.graded(student, test.notebook):
                continue
            score = data.scores[student].get(test.key, 0)
            if score < test.points and test.key not in data.messages[student]:
                data.messages[student][test.key] = data.not_graded.get(student, {}).get(
                    test.notebook, _no_error(score, test.points, worth.get(test.key, test.points)))
    return data


def _no_error(score, points, points_then):
    """A test below its points with no error shown, against the points it had when graded: a full score of an older
    version of the test is said to be one, not "1 of 2 points"."""
    if points_then == points:
        return f"no error shown; {score:g} of {points:g} points"
    return f"no error shown; {score:g} of {points_then:g} points when graded (the test is worth {points:g} now)"


def _failures(path, notebook):
    """({test key: the error the grader wrote in that test cell}, {test key: its points when graded}) for one
    autograded notebook."""
    found, worth = {}, {}
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade") or cell.get("cell_type") != "code":
            continue
        if isinstance(meta.get("points"), (int, float)):
            worth[f"{notebook}/{meta.get('grade_id')}"] = float(meta["points"])
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found[f"{notebook}/{meta.get('grade_id')}"] = one_message(output)
                break
    return found, worth


def one_message(output: dict[str, Any]) -> str:
    """'AssertionError: workload(A) should be ...': the error's name and first line, cut to MESSAGE_CHARS."""
    value = (output.get("evalue") or "").strip().splitlines()
    text = f"{output.get('ename') or 'Error'}: {value[0]}" if value else str(output.get("ename") or "Error")
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " ..."


def _reason(state, student, notebook):
    try:
        reasons = (state.record(student) or {}).get("reasons", {}).get(notebook) or []
    except (OSError, ValueError):
        reasons = []
    return "; ".join(reasons) or "not graded: no autograded notebook"
