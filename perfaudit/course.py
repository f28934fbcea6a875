"""Running plain nbgrader on a course directory and reading its gradebook."""

import os
import subprocess
import sys
from pathlib import Path

from perfaudit import ASSIGNMENT


def not_a_course(course_dir):
    """Why course_dir is not a course directory, in one line for the instructor; None when it is one."""
    if (Path(course_dir) / "nbgrader_config.py").is_file():
        return None
    return (f"{Path(course_dir).resolve()} is not a course directory (it has no nbgrader_config.py): run this in the "
            "course directory, or name it with --course-dir.")


def nbgrader(*args, course_dir):
    """Run `nbgrader ARGS` in course_dir; raise with nbgrader's own output when it fails."""
    env = dict(os.environ)
    # nbgrader calls the `alembic` command: it must find the one beside this Python.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def _read_gradebook(course_dir, reader):
    """reader(gradebook, assignment) on the course's sqlite gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{Path(course_dir) / 'gradebook.db'}") as course_gradebook:
        return reader(course_gradebook, ASSIGNMENT)


def scores(course_dir):
    """{student: {notebook: (score, max_score)}} for the assignment, from the course's sqlite gradebook."""
    from perfaudit.grade import gradebook

    return _read_gradebook(course_dir, gradebook.scores)


def totals(course_dir):
    """{student: points over every notebook, less the late penalty} for the assignment, from the course's sqlite
    gradebook."""
    from perfaudit.grade import gradebook

    return _read_gradebook(course_dir, gradebook.totals)


def make_writable(folder):
    """Give back write permission nbgrader took from autograded files, so the folder can be removed."""
    for path in [Path(folder), *Path(folder).rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
