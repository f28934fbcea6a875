"""The student's working copy: work/performance-audit/, made from the release on first use, never overwritten.

`make lab` opens it and `python -m perfaudit.check --stage N` checks it, so Validate's saves and a student's edits
never land in notebooks/, the committed release an instructor ships again. A notebook the working copy lacks (a
new one in a later release) is copied in; one that is there is the student's and is left as it is.
"""

import shutil
from pathlib import Path

from perfaudit import ASSIGNMENT

WORK_DIR = "work"  # JupyterLab's root in `make lab`; nbgrader's Fetch puts an assignment here too


def release_dir(course_dir):
    return Path(course_dir) / "notebooks" / ASSIGNMENT


def assignment_dir(course_dir):
    return Path(course_dir) / WORK_DIR / ASSIGNMENT


def ensure(course_dir):
    """The working copy's folder, with every released notebook it lacks copied in; (folder, names copied)."""
    work = assignment_dir(course_dir)
    work.mkdir(parents=True, exist_ok=True)
    copied = []
    for notebook in sorted(release_dir(course_dir).glob("*.ipynb")):
        target = work / notebook.name
        if not target.exists():
            shutil.copyfile(notebook, target)
            copied.append(notebook.name)
    return work, copied
