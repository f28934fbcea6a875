"""The environment check's record (perfaudit/autograde/plugins/envrecord.py): kept for a fingerprint of what it depends
on."""

import json
import shutil

from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader

from perfaudit import ASSIGNMENT
from perfaudit.autograde.plugins import envrecord


def _course(root):
    """A small course: its nbgrader_config.py and one source notebook."""
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    (root / "source" / ASSIGNMENT / "01.ipynb").write_text("{}")
    (root / "nbgrader_config.py").write_text("c = get_config()\nc.Execute.timeout = 30\n")
    return root


def _config(root):
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    return config


def _fingerprint(root, settings=None):
    return envrecord.fingerprint(root, CourseDirectory(config=_config(root)), ASSIGNMENT, settings or {})


def test_the_record_lies_beside_a_sqlite_gradebook_else_in_the_state_folder(tmp_path):
    assert envrecord.record_path(f"sqlite:///{tmp_path}/gradebook.db", None) == (
        tmp_path / "gradebook.db.environment.json")
    assert envrecord.record_path("postgresql://db/gradebook", tmp_path / "autograded") == (
        tmp_path / "autograded" / ".batch-grading" / "environment.json")


def test_the_fingerprint_is_the_course_s_wherever_it_lies_and_changes_with_what_grades(tmp_path, monkeypatch):
    original = _course(tmp_path / "course")
    copy = shutil.copytree(original, tmp_path / "elsewhere" / "renamed")
    first = _fingerprint(original)
    assert _fingerprint(copy) == first
    assert _fingerprint(copy, {"Execute.timeout": 5}) != first
    monkeypatch.setenv("JAX_ENABLE_X64", "1")
    assert _fingerprint(copy) != first
    monkeypatch.delenv("JAX_ENABLE_X64")
    (copy / "source" / ASSIGNMENT / "01.ipynb").write_text('{"changed": 1}')
    assert _fingerprint(copy) != first
    (copy / "source" / ASSIGNMENT / "01.ipynb").write_text("{}")
    (copy / "release" / ASSIGNMENT).mkdir(parents=True)
    (copy / "release" / ASSIGNMENT / "01.ipynb").write_text("{}")
    assert _fingerprint(copy) != first


def test_a_passed_check_is_found_again_for_its_fingerprint_only(tmp_path):
    record = tmp_path / "gradebook.db.environment.json"
    assert envrecord.passed_earlier(record, "abc") is None
    envrecord.save(record, "abc", 61.26)
    found = envrecord.passed_earlier(record, "abc")
    assert (found["fingerprint"], found["passed"], found["seconds"]) == ("abc", True, 61.3)
    assert found["checked_at"].endswith(" UTC") and [p.name for p in tmp_path.iterdir()] == [record.name]
    assert envrecord.passed_earlier(record, "abd") is None
    record.write_text(json.dumps({**found, "passed": False}))
    assert envrecord.passed_earlier(record, "abc") is None
    record.write_text("{not json")
    assert envrecord.passed_earlier(record, "abc") is None


def test_plain_nbgrader_skips_its_check_only_with_the_course_s_own_grading_settings(tmp_path):
    course = _course(tmp_path)
    config = _config(course)
    assert envrecord.earlier_in_this_process(config) is None  # never checked
    envrecord.save(course / "gradebook.db.environment.json", _fingerprint(course), 60)
    assert envrecord.earlier_in_this_process(config)["fingerprint"] == _fingerprint(course)
    changed = _config(course)
    changed.Execute.timeout = 5  # given on nbgrader's command line
    assert envrecord.earlier_in_this_process(changed) is None
    elsewhere = _config(course)
    elsewhere.CourseDirectory.db_url = "postgresql://db/gradebook"
    assert envrecord.earlier_in_this_process(elsewhere) is None
