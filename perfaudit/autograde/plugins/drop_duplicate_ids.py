"""nbgrader's DeduplicateIds, fixed so a duplicated or split graded cell no longer aborts the notebook.

DeduplicateIds keeps the last cell with a grade id and empties the metadata of the other copies to `{}`;
nbgrader's metadata check then reads that empty dict as a cell in an old metadata format and fails the whole
submission ("One or more notebooks in the assignment use an old version"). Here the extra copies become
plain cells, as nbgrader intends: the last copy is graded, the others run as ordinary code.
"""

from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import DeduplicateIds


class DropDuplicateIds(DeduplicateIds):
    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any],
                        index: int) -> tuple[NotebookNode, dict[str, Any]]:
        cell, resources = super().preprocess_cell(cell, resources, index)
        if cell.get("metadata", {}).get("nbgrader", None) == {}:
            del cell.metadata["nbgrader"]
        return cell, resources
