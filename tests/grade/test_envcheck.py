"""The environment check's record: kept for a fingerprint of what the check's verdict depends on."""

import shutil

from courses import make_course

from perfaudit import ASSIGNMENT
from perfaudit.autograde.plugins import envrecord
from perfaudit.bookkeeping.coursedir import course_directory


def _fingerprint(root, settings=None):
    return envrecord.fingerprint(root, course_directory(root), ASSIGNMENT, settings or {})


def _record(root):
    return root / f"gradebook.db{envrecord.RECORD_SUFFIX}"


def test_a_course_copied_elsewhere_keeps_its_record_and_a_changed_notebook_does_not(tmp_path):
    """The course's files count by their path in the course, not where the course lies: a copy (a backup restored,
    a folder renamed) is the same environment; a changed notebook, configuration or setting is another."""
    original = make_course(tmp_path / "course")
    copy = tmp_path / "elsewhere" / "renamed"
    shutil.copytree(original, copy)
    assert _fingerprint(copy) == _fingerprint(original)
    assert envrecord.passed_earlier(_record(copy), _fingerprint(copy)), "the copy of a checked course keeps its record"
    assert _fingerprint(copy, {"Execute.timeout": 5}) != _fingerprint(original)

    notebook = next((copy / "source" / ASSIGNMENT).glob("*.ipynb"))
    notebook.write_text(notebook.read_text().replace("Importing JAX", "Importing  JAX", 1))
    assert _fingerprint(copy) != _fingerprint(original)
    assert envrecord.passed_earlier(_record(copy), _fingerprint(copy)) is None

    shutil.copytree(original, tmp_path / "third")
    with open(tmp_path / "third" / "nbgrader_config.py", "a") as config:
        config.write("\nc.Execute.timeout = 5\n")
    assert _fingerprint(tmp_path / "third") != _fingerprint(original)
