"""The course directory every grading command works in: its configuration (nbgrader_config.py, loaded here and
nowhere else), whether it is one, who may write in it, plain nbgrader run in it, and its graded folders removed."""

import logging
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

if TYPE_CHECKING:
    from nbgrader.coursedir import CourseDirectory

# Under submitted/: what intake recorded of each student an LMS download named (perfaudit/grade/intake.py); a file,
# so nbgrader's student globs and the batch skip it. Graders read it for a student's LMS id (autograde/graded.py).
LMS_RECORD = ".lms-intake.json"


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


def course_config(course_dir: str | os.PathLike[str], settings: dict[str, Any] | None = None) -> Config:
    """The course's nbgrader_config.py, with this run's settings on top ({"Section.trait": value})."""
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course_dir)).load_config()
    config.CourseDirectory.root = str(course_dir)
    for key, value in (settings or {}).items():
        section, trait = key.split(".")
        config[section][trait] = value
    return config


def course_directory(course_dir: str | os.PathLike[str], settings: dict[str, Any] | None = None,
                     db_url: str | None = None) -> "CourseDirectory":
    """nbgrader's CourseDirectory of the course (its folders, course id, gradebook URL), as course_config reads it;
    db_url, when given, in place of the configured gradebook."""
    from nbgrader.coursedir import CourseDirectory  # seconds to import: only the commands that grade pay them

    config = course_config(course_dir, settings)
    if db_url:
        config.CourseDirectory.db_url = db_url
    return CourseDirectory(config=config)


def venv_first_on_path() -> None:
    """nbgrader calls the `alembic` command: the one beside this Python must come first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    logging.getLogger("traitlets").setLevel(logging.WARNING)


def make_writable(folder: str | os.PathLike[str]) -> None:
    """Give back the write permission nbgrader took from autograded files; a link is never chmod'ed through."""
    for path in [Path(folder), *Path(folder).rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove a graded folder, which nbgrader leaves read-only."""
    if Path(path).exists():
        make_writable(path)
        shutil.rmtree(path)
