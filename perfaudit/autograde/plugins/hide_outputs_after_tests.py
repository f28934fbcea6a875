"""A generate_feedback preprocessor: no output of a cell that ran after the notebook's first test reaches feedback.

A test hands the student's code what the grader keeps to itself: inputs and evidence made up for that run, results
it holds back for delays it chose (which the student's clock then reads), a static argument at calls it picks. The
kernel keeps running after the test, so a later cell (or a thread, or an exception's message) can print any of it,
transformed as it likes: no list of values to scrub would find them all. So feedback keeps, of every code cell after
the first test cell, a note instead of its outputs and execution count; test cells keep theirs (the grader writes
them, never naming what it keeps to itself), and so does every cell before the first test, when the kernel held
nothing of the grader's yet. TrustedExecute (execute.py) stops the kernel rewriting an earlier cell's display after
a test. The autograded notebook keeps everything, for the instructor (Formgrader, the batch summary).

Test cells are those autograded/ holds as tests: the grader ran exactly those, where they stand (a cell with forged
test metadata ran as student code, its metadata removed). Configured in nbgrader_config.py.
"""

from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from perfaudit.autograde.plugins import verdicts

OUTPUT_HIDDEN = ("[not shown in feedback: this cell ran after the notebook's first test, which handed your code "
                 "inputs and timings the grader keeps to itself; your own notebook shows what it printed]\n")


class HideOutputsAfterTests(NbGraderPreprocessor):
    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        tested = False
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            if verdicts.is_test(cell):
                tested = True
            elif tested:
                cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=OUTPUT_HIDDEN)]
                cell.execution_count = None
                cell.metadata.pop("execution", None)
        return nb, resources
