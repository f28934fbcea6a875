"""python -m perfaudit.grade refuses clearly, before grading anyone, when it cannot grade at all."""

import shutil
import subprocess
import sys

from conftest import uninstalled

from perfaudit import paths


def _grade(cwd, within=()):
    return subprocess.run([*within, sys.executable, "-m", "perfaudit.grade", "--no-progress"], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_outside_a_course_directory_it_says_so(tmp_path):
    done = _grade(tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"{tmp_path.resolve()} is not a course directory (it has no nbgrader_config.py): run this in "
                           "the course directory, or name it with --course-dir.\n")
    assert list(tmp_path.iterdir()) == []


def test_a_package_the_grader_needs_missing_is_a_message_not_a_traceback(tmp_path):
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)
    done = _grade(tmp_path, within=uninstalled("distributed", "distributed-*.dist-info"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Grading stopped before it began: this Python cannot import what the grader needs "
                                  "(ModuleNotFoundError: No module named 'distributed')"), done.stderr
    assert "No student was graded" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nbgrader_config.py"]
