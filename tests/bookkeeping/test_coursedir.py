"""The course directory the batch and the service work in (perfaudit/bookkeeping/coursedir.py)."""

import os
import subprocess
import sys

import pytest

from perfaudit import paths
from perfaudit.bookkeeping import coursedir


def test_a_folder_without_nbgrader_config_is_not_a_course(tmp_path):
    said = coursedir.not_a_course(tmp_path)
    assert said is not None and str(tmp_path.resolve()) in said and "--course-dir" in said
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    assert coursedir.not_a_course(tmp_path) is None


def test_a_failing_nbgrader_command_raises_with_its_own_output(tmp_path):
    with pytest.raises(RuntimeError, match="nbgrader --no-such-flag failed"):
        coursedir.nbgrader("--no-such-flag", course_dir=tmp_path)


def test_root_is_refused_in_a_course_another_account_owns_and_writes_nothing(tmp_path):
    # make feedback as root in a hub's course (owned by `grader`) left feedback/<student>/ root's, and the grading
    # service stopped on the next submission with PermissionError.
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text((paths.ROOT / "nbgrader_config.py").read_text())
    if os.geteuid() == 0:
        os.chown(course, 65534, -1)  # nobody's, as /srv/course is grader's
    owner = course.stat().st_uid
    said = coursedir.root_in_anothers_course(course, euid=0)
    assert said is not None and said.startswith("Refused: this runs as root in a course directory that ")
    assert "sudo -u" in said and said.endswith("Nothing was written.")
    assert coursedir.root_in_anothers_course(course, euid=owner) is None, "its owner may write"
    assert coursedir.root_in_anothers_course(paths.ROOT, euid=paths.ROOT.stat().st_uid) is None
    if os.geteuid() == 0:  # the command itself, as make feedback runs it
        done = subprocess.run([sys.executable, "-m", "perfaudit.grade", "--feedback-only", "--course-dir",
                               str(course)], capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr.startswith("Refused: this runs as root"), done.stderr
        assert sorted(p.name for p in course.iterdir()) == ["nbgrader_config.py"]
