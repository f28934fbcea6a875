"""A notebook's graded cells read (perfaudit/notebooks.py): locked cells put back, each cell's outcome."""

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from perfaudit import notebooks


def _cell(source, outputs=(), cell_type="code", **nbgrader):
    make = new_code_cell if cell_type == "code" else new_markdown_cell
    cell = make(source, metadata={"nbgrader": nbgrader} if nbgrader else {})
    if cell_type == "code":
        cell.outputs = list(outputs)
    return cell


def test_the_instructor_s_locked_cells_are_put_back_and_a_deleted_test_named():
    source = new_notebook(cells=[
        _cell("import jax", grade_id="setup", locked=True),
        _cell("def f(x):\n    ...", grade_id="f", solution=True),
        _cell("assert f(1) == 2\n### BEGIN HIDDEN TESTS\nassert f(2) == 4", grade_id="test_f", grade=True,
              locked=True, points=2),
        _cell("assert True", grade_id="test_g", grade=True, locked=True, points=1),
        _cell("print(f(3))", grade_id="show", locked=True)])  # deleted too, but graded by nothing
    student = new_notebook(cells=[
        _cell("import os  # changed", grade_id="setup", locked=False),
        _cell("def f(x):\n    return 2 * x", grade_id="f", solution=True),
        _cell("assert True  # changed", grade_id="test_f", grade=False)])
    restored, missing = notebooks.restore_locked_cells(student, source)
    assert [c.source for c in restored.cells] == ["import jax", "def f(x):\n    return 2 * x", source.cells[2].source]
    assert restored.cells[2].metadata["nbgrader"] == source.cells[2].metadata["nbgrader"]
    assert missing == ["test_g"]
    assert student.cells[0].source == "import os  # changed"  # the student's notebook is left as it was


def test_each_graded_cell_s_outcome_in_notebook_order():
    failed = new_output("error", ename="AssertionError", evalue="f(2) should be 4", traceback=[])
    bare = new_output("error", ename="AssertionError", evalue="", traceback=[])
    other = new_output("error", ename="NameError", evalue="name 'f' is not defined", traceback=[])
    printed = new_output("stream", name="stdout", text="hi")
    executed = new_notebook(cells=[
        _cell("x", [printed], grade_id="setup"), _cell("", [other], grade_id="f", solution=True),
        _cell("", [printed, failed], grade_id="test_f", grade=True, points=2),
        _cell("", [bare], grade_id="test_g", grade=True, points=1), _cell("", [other]),
        _cell("notes", cell_type="markdown", grade_id="notes")])
    results = notebooks.cell_results(executed)
    assert [(r.grade_id, r.kind, r.points, r.error, r.passed) for r in results] == [
        ("setup", "other", 0.0, None, True), ("f", "solution", 0.0, "NameError: name 'f' is not defined", False),
        ("test_f", "test", 2.0, "f(2) should be 4", False), ("test_g", "test", 1.0, "AssertionError: ", False)]


def test_a_notebook_is_read_as_version_4(tmp_path):
    nbformat.write(new_notebook(cells=[_cell("x = 1")]), tmp_path / "n.ipynb")
    assert notebooks.read(str(tmp_path / "n.ipynb")).nbformat == 4
