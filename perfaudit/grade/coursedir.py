"""The course directory the batch and the service work in: whether it is one, and plain nbgrader run in it."""

import os
import subprocess
import sys
from pathlib import Path


def not_a_course(course_dir: str | os.PathLike[str]) -> str | None:
    """Why course_dir is not a course directory, in one line for the instructor; None when it is one."""
    if (Path(course_dir) / "nbgrader_config.py").is_file():
        return None
    return (f"{Path(course_dir).resolve()} is not a course directory (it has no nbgrader_config.py): run this in the "
            "course directory, or name it with --course-dir.")


def nbgrader(*args: str, course_dir: str | os.PathLike[str]) -> str:
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
