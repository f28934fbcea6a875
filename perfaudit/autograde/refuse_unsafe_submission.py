"""The first autograde step: a submission that holds anything but regular files is not graded (submission.py says
what a submission may hold)."""

from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from perfaudit.autograde.submission import UnsafeSubmission, describe, problems, submitted_folder


class RefuseUnsafeSubmission(NbGraderPreprocessor):
    """The first autograde step: a submission holding anything but regular files is not graded, with the reason.

    nbgrader has already copied the folder's other files by then (its own step, which follows links); when this
    refuses, nbgrader removes that copy with the failed submission. The batch command refuses at intake, first.
    """

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        folder = submitted_folder(self.config, resources)
        if folder is not None:
            found = problems(folder)
            if found:
                raise UnsafeSubmission(f"not graded: {describe(found)}")
        return nb, resources
