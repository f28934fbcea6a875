"""The course directory the batch and the service work in (perfaudit/grade/coursedir.py)."""

import pytest

from perfaudit.grade import coursedir


def test_a_folder_without_nbgrader_config_is_not_a_course(tmp_path):
    said = coursedir.not_a_course(tmp_path)
    assert said is not None and str(tmp_path.resolve()) in said and "--course-dir" in said
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    assert coursedir.not_a_course(tmp_path) is None


def test_a_failing_nbgrader_command_raises_with_its_own_output(tmp_path):
    with pytest.raises(RuntimeError, match="nbgrader --no-such-flag failed"):
        coursedir.nbgrader("--no-such-flag", course_dir=tmp_path)
