"""A generate_feedback preprocessor that keeps the hidden tests hidden (nbgrader issue #917).

An autograded notebook holds the instructor's test cells with their hidden part put back, and a failed
test's traceback quotes the failing line. Feedback keeps each test cell's visible part, its score and the
failure message (written for students), and drops the hidden region and every traceback line. Test cells ran
in the grader (perfaudit/autograde/verdicts.py), whose error outputs carry no traceback anyway.
Configured in nbgrader_config.py, so plain `nbgrader generate_feedback` is safe too.
"""

from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests

HIDDEN_NOTE = "# (hidden tests ran here; their code is not shown)"


class HideHiddenTests(ClearHiddenTests):
    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or not (utils.is_grade(cell) or utils.is_locked(cell)):
            return cell, resources
        if self._remove_hidden_test_region(cell):
            cell.source = cell.source.rstrip() + "\n" + HIDDEN_NOTE
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
