"""What the gradebook grades with, against source/: an edited test or its points is found, a solution is not."""

import shutil
from types import SimpleNamespace

import nbformat
import pytest
from nbgrader import utils

from perfaudit import notebooks, paths
from perfaudit.grade.definition import out_of_step

STAGE = 1
NAME = paths.STAGES[STAGE].removesuffix(".ipynb")


def _held(path):
    """The assignment as nbgrader generate_assignment records it from the notebook at path (solutions stubbed)."""
    cells = [c for c in nbformat.read(path, as_version=4).cells
             if utils.is_grade(c) or utils.is_solution(c) or utils.is_locked(c) or utils.is_task(c)]
    notebook = SimpleNamespace(
        name=NAME, task_cells=[],
        source_cells=[SimpleNamespace(name=notebooks.nbgrader_meta(c)["grade_id"],
                                      source="raise NotImplementedError()" if utils.is_solution(c) else c.source)
                      for c in cells],
        grade_cells=[SimpleNamespace(name=notebooks.nbgrader_meta(c)["grade_id"],
                                     max_score=float(notebooks.nbgrader_meta(c)["points"]))
                     for c in cells if utils.is_grade(c)])
    return SimpleNamespace(notebooks=[notebook])


def _edit(path, grade_id, change):
    nb = nbformat.read(path, as_version=4)
    change(next(c for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == grade_id), nb)
    nbformat.write(nb, path)


def _points(cell, _):
    cell.metadata["nbgrader"]["points"] = 2


def _hidden_check(cell, _):
    cell.source = cell.source.replace("### END HIDDEN TESTS", "assert True\n### END HIDDEN TESTS")


def _solution(cell, _):
    cell.source += "\n# the instructor's solution, tidied"


def _removed(cell, nb):
    nb.cells.remove(cell)


@pytest.mark.parametrize("grade_id, change, expected", [
    ("correct_summary", _points, [f"{NAME}: correct_summary"]),
    ("correct_summary", _hidden_check, [f"{NAME}: correct_summary"]),
    ("summarize", _solution, []),
    ("selfcheck_summarize", _removed, [f"{NAME}: selfcheck_summarize"]),
])
def test_what_differs_from_the_gradebook_is_named(tmp_path, grade_id, change, expected):
    source = tmp_path / paths.STAGES[STAGE]
    shutil.copy(paths.SOURCE / paths.STAGES[STAGE], source)
    held = _held(source)
    assert out_of_step(held, tmp_path) == []
    _edit(source, grade_id, change)
    assert out_of_step(held, tmp_path) == expected
