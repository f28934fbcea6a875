"""What each student wrote in the solution cells of each notebook, read from submitted/ for the similarity page.

Only code a student wrote is compared (similarity.py): the code cells the release marks as solutions (nbgrader
metadata solution: true), found in a submission by their grade_id, in the release's order. The release's own code
(each solution cell's starter and every other code cell) is kept apart as the course's, for copydetect to leave
out. Markdown answers are not read.

A submission is hostile input, read without grading it: a folder whose name is no student id (names.py), a link, a
file that is not JSON or has no cells, a solution cell too long to be anyone's answer. Each is skipped with its
reason, for the page to show; nothing here raises for what a student sent.
"""

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfaudit import ASSIGNMENT
from perfaudit.autograde.isolation.submission import MAX_FILE_BYTES
from perfaudit.grade import names

# One solution cell's characters: the course's longest answer is about 1,500; past this a cell is pasted output or
# generated text, and copydetect's time grows with it.
MAX_CELL_CHARS = 20_000
EVERY_NOTEBOOK = "every notebook"  # a skipped folder's notebook column


@dataclass
class ReleaseNotebook:
    solution_ids: list[str]  # grade_ids of the solution code cells, in the release's order
    # The release's code cells, and its solution cells' starters joined as a student's answers are (solution_code):
    # what no student wrote, a run across two untouched starters included.
    course_code: str


@dataclass
class Submissions:
    release: dict[str, ReleaseNotebook] = field(default_factory=dict)  # {notebook: ...}
    code: dict[str, dict[str, str]] = field(default_factory=dict)  # {notebook: {student: their solution code}}
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # [(student folder, notebook, why)]


class Unreadable(Exception):
    """Why a submitted notebook is skipped."""


def read_release(release_dir: str | Path) -> dict[str, ReleaseNotebook]:
    """{notebook name: its solution cells and code} for every notebook of the release folder (the course's own)."""
    found = {}
    for path in sorted(Path(release_dir).glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
        solution_ids = [_grading(c)["grade_id"] for c in code if _grading(c).get("solution")]
        starters = solution_code(notebook, solution_ids)
        found[path.stem] = ReleaseNotebook(solution_ids, "\n\n".join([*(_source(c) for c in code), starters]))
    return found


def read(submitted_dir: str | Path, release_dir: str | Path) -> Submissions:
    """Every student's solution code per notebook, and what was skipped and why."""
    found = Submissions(release=read_release(release_dir))
    found.code = {notebook: {} for notebook in found.release}
    submitted_dir = Path(submitted_dir)
    folders = sorted(submitted_dir.iterdir()) if submitted_dir.is_dir() else []
    for folder in folders:
        student = folder.name
        if student.startswith(".") or (folder.is_file() and not folder.is_symlink()):
            continue  # intake's record, nbgrader's dot files
        why = names.student_folder_problem(student) or _not_a_folder(folder)
        if why:
            found.skipped.append((student, EVERY_NOTEBOOK, why))
            continue
        for notebook, release in found.release.items():
            path = folder / ASSIGNMENT / f"{notebook}.ipynb"
            if not os.path.lexists(path):
                continue  # not submitted: nothing to compare
            try:
                found.code[notebook][student] = solution_code(_read_notebook(path), release.solution_ids)
            except Unreadable as why_not:
                found.skipped.append((student, notebook, str(why_not)))
    return found


def solution_code(notebook: Any, solution_ids: list[str]) -> str:
    """The code of the notebook's solution cells, in the release's order (a cell the student removed: none)."""
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or not cells:
        raise Unreadable("no cells: not a notebook")
    by_id = {}
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        grade_id = _grading(cell).get("grade_id")
        if isinstance(grade_id, str) and grade_id in solution_ids and grade_id not in by_id:
            source = _source(cell)
            if len(source) > MAX_CELL_CHARS:
                raise Unreadable(f"the solution cell {grade_id} holds {len(source)} characters, over the "
                                 f"{MAX_CELL_CHARS} an answer may have")
            by_id[grade_id] = source
    return "\n\n".join(by_id[i] for i in solution_ids if i in by_id)


def _read_notebook(path):
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise Unreadable("not a regular file")
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise Unreadable(f"cannot be read ({type(error).__name__}: {error.strerror}): a link is not followed")
    if len(data) > MAX_FILE_BYTES:
        raise Unreadable(f"over the {MAX_FILE_BYTES // 2**20} MB a submitted file may have")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as error:  # RecursionError: JSON nested thousands deep
        raise Unreadable(f"not JSON ({type(error).__name__})")


def _not_a_folder(folder):
    for path in (folder, folder / ASSIGNMENT):
        if path.is_symlink():
            return f"{path.name} is a link: not followed"
    return None


def _grading(cell):
    found = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
    return found if isinstance(found, dict) else {}


def _source(cell):
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""
