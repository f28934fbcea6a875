"""The one writer of a grading result, for the batch command and the service alike.

A grading task (perfaudit/grade/task.py) returns a GradingResult of plain data; the process that owns the course
writes it: the scores into the course's gradebook, the autograded notebooks and feedback pages into autograded/
and feedback/, the record behind each notebook's grade (perfaudit/grade/records.py) and the student's state in
the batch state folder (the fingerprint of the files graded, the reasons), so the batch's next run skips a student
whose submission is unchanged, whoever graded it. A student with nothing graded gets 0 and the reasons; a notebook
refused at intake gets no row at all (not graded, never a 0).
"""

import time
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory

from perfaudit.bookkeeping.coursedir import remove_tree
from perfaudit.bookkeeping.statefolder import State
from perfaudit.grade import feedback as feedback_pages, gradebook, task
from perfaudit.grade.diagnose import Diagnosis
from perfaudit.grade.records import Recorder


class ResultWriter:
    """Writes grading results into one course: its open gradebook, its folders, its records, its batch state."""

    def __init__(self, course_gb: Gradebook, coursedir: CourseDirectory, assignment: str, state: State,
                 recorder: Recorder | None = None) -> None:
        self.course_gb, self.coursedir, self.assignment = course_gb, coursedir, assignment
        self.state, self.recorder = state, recorder  # statefolder.State; records.Recorder (None: nothing graded yet)

    def folder(self, kind: str, student: str) -> Path:
        return Path(self.coursedir.format_path(kind, student, self.assignment))

    def write_result(self, student: str, diagnosis: Diagnosis, fingerprint: str,
                     result: task.GradingResult | None = None, failures: dict[str, str] | None = None,
                     **marks: Any) -> dict[str, list[str]]:
        """Write one student's grading; return {notebook: [reasons]}.

        diagnosis: what perfaudit/grade/diagnose.py found in the submission; fingerprint: of the files graded;
        result: the task's GradingResult, None when nothing was graded (a 0); failures: {notebook: why} beside the
        result's own; marks: kept in the student's state as they are (who graded it).
        """
        autograded = self.folder(self.coursedir.autograded_directory, student)
        feedback = self.folder(self.coursedir.feedback_directory, student)
        remove_tree(autograded)  # no notebook or page of an earlier grading survives this one
        remove_tree(feedback)
        reasons = {nb: list(why) for nb, why in diagnosis.reasons.items()}
        for nb, why in {**(result.failures if result else {}), **(failures or {})}.items():
            reasons.setdefault(nb, []).append(why)
        if result is not None and result.results is not None:
            gradebook.apply_submission(self.course_gb, self.assignment, student, result.results)
            if self.recorder is not None:
                self.recorder.append(result)
            task.write_tree(result.autograded, autograded)
            task.write_tree(result.feedback, feedback)
            # the submission's timestamp beside the feedback, as nbgrader's release_feedback needs it
            feedback_pages.stamp_for_release(self.folder(self.coursedir.submitted_directory, student), autograded,
                                             feedback)
        else:
            gradebook.record_empty(self.course_gb, self.assignment, student)
        gradebook.withhold(self.course_gb, self.assignment, student, diagnosis.withheld)
        kept = {"fingerprint": fingerprint, "reasons": reasons, "graded_at": time.time(), **marks}
        if result is not None and result.feedback_failure:
            kept["feedback_failure"] = result.feedback_failure
        self.state.save(student, kept)
        return reasons
