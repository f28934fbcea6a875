"""python -m perfaudit.grade refuses clearly, before grading anyone, when it cannot grade at all."""

import os
import shutil
import subprocess
import sys

from courses import make_course, uninstalled

from perfaudit import paths
from perfaudit.autograde.isolation import sandbox


def _grade(cwd, within=()):
    return subprocess.run([*within, sys.executable, "-m", "perfaudit.grade", "--no-progress"], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_outside_a_course_directory_it_says_so(tmp_path):
    done = _grade(tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"{tmp_path.resolve()} is not a course directory (it has no nbgrader_config.py): run this "
                           "in the course directory, or name it with --course-dir.\n")
    assert list(tmp_path.iterdir()) == []


def test_a_package_the_grader_needs_missing_is_a_message_not_a_traceback(tmp_path):
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)
    done = _grade(tmp_path, within=uninstalled("distributed", "distributed-*.dist-info"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Grading stopped before it began: this Python cannot import what the grader needs "
                                  "(ModuleNotFoundError: No module named 'distributed')"), done.stderr
    assert "No student was graded" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nbgrader_config.py"]


def _course(tmp_path):
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)
    return tmp_path


def _run(cwd, *args, env=None):
    return subprocess.run([sys.executable, "-m", "perfaudit.grade", "--no-progress", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=env)


def test_a_mistyped_roster_is_one_line_not_a_traceback(tmp_path):
    done = _run(_course(tmp_path), "--export", "canvas", "--roster", "canvas-gradbook.csv")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("No roster at canvas-gradbook.csv: name the file you downloaded from the LMS (Canvas: "
                           "Grades > Export; Moodle: Download grading worksheet). Nothing was exported.\n")


def test_a_mistyped_download_is_one_line(tmp_path):
    done = _run(_course(tmp_path), "--from", "canvs.zip")
    assert done.returncode == 2
    assert done.stderr == "No LMS download at canvs.zip: name the zip or folder the LMS gave you. Nothing was graded.\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nbgrader_config.py"]


def test_without_bubblewrap_grading_says_what_to_install_in_one_line(tmp_path):
    env = {**os.environ, sandbox.BWRAP: str(tmp_path / "no-bwrap")}
    env.pop(sandbox.UNSANDBOXED, None)
    done = _run(_course(tmp_path), env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "sudo apt-get install bubblewrap" in done.stderr, done.stderr


def test_nothing_submitted_is_an_error_with_what_to_do(tmp_path):
    root = make_course(tmp_path / "course")
    done = _run(root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (f"Nothing to grade: {root / 'submitted'} holds no student's folder. Sort an LMS download in "
                           "(make grade FROM=download.zip) or collect from the exchange (nbgrader collect "
                           "performance-audit), then run again. Nothing was graded.\n")
