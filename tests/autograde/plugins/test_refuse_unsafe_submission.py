"""The first autograde step (perfaudit/autograde/plugins/refuse_unsafe_submission.py): only regular files are graded."""

import os

import pytest
from nbformat.v4 import new_notebook
from traitlets.config import Config

from perfaudit.autograde.plugins.refuse_unsafe_submission import RefuseUnsafeSubmission
from perfaudit.autograde.isolation.submission import UnsafeSubmission

RESOURCES = {"nbgrader": {"student": "ada", "assignment": "performance-audit"}}


def _step(course):
    config = Config()
    config.CourseDirectory.root = str(course)
    return RefuseUnsafeSubmission(config=config)


def _submitted(course):
    folder = course / "submitted" / "ada" / "performance-audit"
    folder.mkdir(parents=True)
    (folder / "01-timing.ipynb").write_text("{}")
    return folder


def test_a_submission_of_regular_files_goes_on_unchanged(tmp_path):
    _submitted(tmp_path)
    nb = new_notebook()
    assert _step(tmp_path).preprocess(nb, RESOURCES) == (nb, RESOURCES)


def test_a_submission_holding_a_link_is_refused_with_the_entry_and_why(tmp_path):
    (_submitted(tmp_path) / "evidence").symlink_to("/etc")
    with pytest.raises(UnsafeSubmission, match="^not graded: 'evidence' is a symbolic link: submissions may hold "
                                               "regular files only$"):
        _step(tmp_path).preprocess(new_notebook(), RESOURCES)


def test_outside_autograde_or_without_a_submitted_folder_nothing_is_looked_at(tmp_path):
    os.mkfifo(_submitted(tmp_path) / "pipe")
    nb = new_notebook()
    assert _step(tmp_path).preprocess(nb, {}) == (nb, {})
    other = {"nbgrader": {"student": "grace", "assignment": "performance-audit"}}
    assert _step(tmp_path).preprocess(nb, other) == (nb, other)
