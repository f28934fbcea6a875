"""The assignment as the gradebook holds it, against source/: what nbgrader grades with is what source/ says.

nbgrader grades with the cells and points the gradebook recorded when the assignment was generated into it: the
tests (hidden ones included) it puts back into every submission, and the points of each. `make release` writes
no gradebook, so after a hidden test or its points change in source/ the gradebook still holds the old ones, and
a regrade made with them would be a grade made against a test that no longer exists. `out_of_step` names what
differs; the batch then records the assignment again from source/ before anyone is graded (perfaudit/grade/run.py).
"""

from pathlib import Path
from typing import Any

import nbformat
from nbgrader import utils


def out_of_step(assignment: Any, source_folder: str | Path) -> list[str]:
    """["<notebook>: <grade id>, ..."] for each notebook whose graded, locked or task cells in source/ differ from
    the gradebook's `assignment` (nbgrader's Assignment): a cell added or removed, a test's or locked cell's code,
    a cell's points. Solution cells are left out: nbgrader keeps their stub, not the instructor's code."""
    found: list[str] = []
    for notebook in sorted(assignment.notebooks, key=lambda nb: nb.name):
        path = Path(source_folder) / f"{notebook.name}.ipynb"
        if not path.is_file():
            continue
        held = {cell.name: cell for cell in notebook.source_cells}
        points = {cell.name: cell.max_score for cell in [*notebook.grade_cells, *notebook.task_cells]}
        differs = set()
        cells = [cell for cell in nbformat.read(path, as_version=4).cells
                 if utils.is_grade(cell) or utils.is_solution(cell) or utils.is_locked(cell) or utils.is_task(cell)]
        for cell in cells:
            name = cell.metadata["nbgrader"].get("grade_id")
            if name not in held:
                differs.add(name)
            elif not utils.is_solution(cell) and held[name].source != cell.source:
                differs.add(name)
            elif (utils.is_grade(cell) or utils.is_task(cell)) and points.get(name) != float(
                    cell.metadata["nbgrader"].get("points", 0)):
                differs.add(name)
        differs |= set(held) - {cell.metadata["nbgrader"].get("grade_id") for cell in cells}
        if differs:
            found.append(f"{notebook.name}: {', '.join(sorted(map(str, differs)))}")
    return found
