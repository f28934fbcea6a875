"""nbgrader's DeduplicateIds as the grader runs it (perfaudit/autograde/plugins/drop_duplicate_ids.py)."""

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from perfaudit.autograde.plugins.drop_duplicate_ids import DropDuplicateIds


def _graded(source, grade_id):
    return new_code_cell(source, metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "grade_id": grade_id, "points": 1, "schema_version": 3}})


def test_the_last_copy_of_a_graded_cell_is_graded_and_the_others_become_plain_cells():
    nb = new_notebook(cells=[_graded("first = 1", "test-a"), new_code_cell("x = 1"), _graded("b = 2", "test-b"),
                             _graded("last = 1", "test-a")])
    nb, _ = DropDuplicateIds().preprocess(nb, {})
    assert [("nbgrader" in cell.metadata, cell.source) for cell in nb.cells] == [
        (False, "first = 1"), (False, "x = 1"), (True, "b = 2"), (True, "last = 1")]
    assert nb.cells[3].metadata.nbgrader["grade_id"] == "test-a"
    nbformat.validate(nb)


def test_a_notebook_without_duplicates_is_left_as_it_was():
    nb = new_notebook(cells=[_graded("a = 1", "test-a"), new_code_cell("x = 1", metadata={"tags": ["mine"]})])
    before = nbformat.writes(nb)
    nb, _ = DropDuplicateIds().preprocess(nb, {})
    assert nbformat.writes(nb) == before
