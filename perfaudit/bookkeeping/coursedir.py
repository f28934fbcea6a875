"""The course directory the batch and the service work in: whether it is one, and plain nbgrader run in it."""

import os
import pwd
import subprocess
import sys
from pathlib import Path


def keep_from_other_accounts() -> None:
    """Nothing this process makes is open to other accounts unless it says so: on a hub, students share the machine.
    The gradebook (every hidden test's source, every grade), grades.csv, autograded/, feedback/, reports/ and exports/
    are born without other accounts' permissions; what students must read is opened on purpose (a released feedback
    page: perfaudit/serve/exchange.py, perfaudit/hub/release_feedback.py)."""
    os.umask(os.umask(0) | 0o007)


def not_a_course(course_dir: str | os.PathLike[str]) -> str | None:
    """Why course_dir is not a course directory, in one line for the instructor; None when it is one."""
    if (Path(course_dir) / "nbgrader_config.py").is_file():
        return None
    return (f"{Path(course_dir).resolve()} is not a course directory (it has no nbgrader_config.py): run this in the "
            "course directory, or name it with --course-dir.")


def root_in_anothers_course(course_dir: str | os.PathLike[str], euid: int | None = None) -> str | None:
    """Why this process must not write in course_dir: it runs as root in a course another account owns (a hub's
    `grader`). What root writes there (feedback/<student>/, autograded/, the gradebook's journal) its owner's grading
    service cannot replace, and grading stops. One line for the instructor; None when it may write."""
    owner = Path(course_dir).stat().st_uid
    if (os.geteuid() if euid is None else euid) != 0 or owner == 0:
        return None
    try:
        name = pwd.getpwuid(owner).pw_name
    except KeyError:
        name = str(owner)
    return (f"Refused: this runs as root in a course directory that {name} owns; what root writes there the course's "
            f"own processes (the grading service) cannot replace. Run it as {name}: sudo -u {name} make ... "
            "(Formgrader's terminal on the hub runs as that account). Nothing was written.")


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
