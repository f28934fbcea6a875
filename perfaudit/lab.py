"""python -m perfaudit.lab: JupyterLab on the student notebooks, with nbgrader's Validate button working.

    python -m perfaudit.lab                       # the course in the current directory
    python -m perfaudit.lab --course DIR -- --no-browser --port 8890   # anything after -- goes to jupyter lab

JupyterLab shows only notebooks/performance-audit/, so no solutions are in sight. nbgrader's server
extensions (Validate, Assignments) read nbgrader_config.py from the server's working directory and from
JUPYTER_CONFIG_PATH, never from JupyterLab's root: the server therefore starts in the course directory, with
that directory also on JUPYTER_CONFIG_PATH so that extensions which change directory still find it. The
Assignments view lists the local exchange that nbgrader_config.py names (exchange/), made here when missing.
student_lab/ (also on JUPYTER_CONFIG_PATH) turns off nbgrader's instructor tools (Formgrader, Courses, Create
Assignment): they need JupyterLab rooted at the course directory and would only show students errors.
"""

import argparse
import os
import sys
from pathlib import Path

from perfaudit import ASSIGNMENT

STUDENT_CONFIG = Path(__file__).with_name("student_lab")  # Jupyter config for the students' JupyterLab


def lab_command(course_dir, extra_args=()):
    """(argv, env, cwd) that start JupyterLab on the course's released notebooks; makes the local exchange."""
    course_dir = Path(course_dir).resolve()
    (course_dir / "exchange").mkdir(exist_ok=True)  # nbgrader lists an exchange only if it exists
    argv = [
        sys.executable, "-m", "jupyter", "lab",
        f"--ServerApp.root_dir={course_dir / 'notebooks' / ASSIGNMENT}",
        *extra_args,
    ]
    config_path = [str(course_dir), str(STUDENT_CONFIG), *filter(None, os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep))]
    env = {**os.environ, "JUPYTER_CONFIG_PATH": os.pathsep.join(config_path)}
    return argv, env, course_dir


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course", default=".", help="the course directory (holds nbgrader_config.py)")
    parser.add_argument("lab_args", nargs="*", help="arguments for jupyter lab, after --")
    args = parser.parse_args(argv)
    command, env, cwd = lab_command(args.course, args.lab_args)
    if not (cwd / "nbgrader_config.py").is_file():
        sys.exit(f"{cwd} has no nbgrader_config.py: run this from the course directory or pass --course.")
    os.chdir(cwd)
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    main()
