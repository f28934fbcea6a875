"""The first autograde step: a submission that holds anything but regular files is not graded (submission.py says
what a submission may hold)."""

from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from perfaudit.autograde.isolation.submission import (UnsafeSubmission, course_ignore, describe, problems,
                                                     submitted_folder)


class RefuseUnsafeSubmission(NbGraderPreprocessor):
    """The first autograde step: a submission holding anything but regular files is not graded, with the reason.

    nbgrader has already copied the folder's other files by then (its own step, which follows links); when this
    refuses, nbgrader removes that copy with the failed submission. The batch command refuses at intake, first.
    Names the course ignores (CourseDirectory.ignore: .git, runs/) are neither refused nor counted: nbgrader never
    copies them, and the kernel never gets them.
    """

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        folder = submitted_folder(self.config, resources)
        if folder is not None:
            found = problems(folder, course_ignore(self.config))  # what nbgrader copies and grades
            if found:
                raise UnsafeSubmission(f"not graded: {describe(found)}")
        return nb, resources
