"""A generate_feedback preprocessor that keeps the hidden tests hidden (nbgrader issue #917).

An autograded notebook holds the instructor's test cells with their hidden part put back, and a failed
test's traceback quotes the failing line. Feedback keeps each test cell's visible part, its score and the
failure message (written for students), and drops the hidden region and every traceback line. Test cells ran
in the grader (perfaudit/autograde/plugins/verdicts.py), whose error outputs carry no traceback anyway.
Every output shows the student's own paths (relative to their notebook's folder), never the sandbox's.
Configured in nbgrader_config.py, so plain `nbgrader generate_feedback` is safe too.
"""

from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests

from perfaudit.autograde.isolation.sandbox import SCRATCH, SUBMISSION

HIDDEN_NOTE = "# (hidden tests ran here; their code is not shown)"


# Where the sandbox ran the notebook (perfaudit/autograde/isolation/sandbox.py): a student's paths are relative to their
# own notebook's folder, so "/home/student/work/runs/performance-audit" reads "runs/performance-audit" in feedback.
SANDBOX_FOLDERS = (SCRATCH + "/", SUBMISSION + "/", SCRATCH, SUBMISSION)


def student_paths(text: str) -> str:
    """text with the sandbox's folders taken out of every path, leaving the part under the notebook's folder."""
    for folder in SANDBOX_FOLDERS:
        text = text.replace(folder, "" if folder.endswith("/") else ".")
    return text


def _show_student_paths(cell):
    for output in cell.get("outputs", []):
        if "text" in output:
            output.text = student_paths(output.text)
        for key in ("text/plain", "text/html", "text/markdown"):
            if key in output.get("data", {}):
                value = output.data[key]
                output.data[key] = ([student_paths(v) for v in value] if isinstance(value, list)
                                    else student_paths(value))
        if output.get("output_type") == "error":
            output.evalue = student_paths(output.evalue)
            output.traceback = [student_paths(line) for line in output.traceback]


class HideHiddenTests(ClearHiddenTests):
    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any],
                        index: int) -> tuple[NotebookNode, dict[str, Any]]:
        if cell.cell_type == "code":
            _show_student_paths(cell)
        if cell.cell_type != "code" or not (utils.is_grade(cell) or utils.is_locked(cell)):
            return cell, resources
        if self._remove_hidden_test_region(cell):
            cell.source = cell.source.rstrip() + "\n" + HIDDEN_NOTE
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
