"""python -m perfaudit.lab: JupyterLab on the student's working copy, with nbgrader's Validate button working.

    python -m perfaudit.lab                       # the course in the current directory
    python -m perfaudit.lab --course DIR -- --no-browser --port 8890   # anything after -- goes to jupyter lab
    python -m perfaudit.lab --allow-root          # as root (a container): JupyterLab refuses otherwise

JupyterLab's root is work/, holding the working copy work/performance-audit/ (perfaudit/workcopy.py): made from
the release in notebooks/ on first use and never overwritten, so Validate's saves and the student's edits never
touch the committed release. Where the course's exchange releases the assignment, nbgrader's Fetch makes the
working copy instead, from the instructor's current release, and nothing is copied from notebooks/
(nbgrader_config.py sets Exchange.assignment_dir to work/); Submit sends that folder: the notebooks the student
worked on, and Fetch Feedback puts feedback in its feedback/. nbgrader's server extensions (Validate,
Assignments) read nbgrader_config.py from the server's working directory and from JUPYTER_CONFIG_PATH, never
from JupyterLab's root: the server therefore starts in the course directory, with that directory also on
JUPYTER_CONFIG_PATH so that extensions which change directory still find it. The
Assignments view lists the local exchange that nbgrader_config.py names (exchange/), made here when missing.
student_lab/ (also on JUPYTER_CONFIG_PATH) turns off nbgrader's instructor tools (Formgrader, Courses, Create
Assignment): they need JupyterLab rooted at the course directory and would only show students errors.
"""

import argparse
import os
import sys
from pathlib import Path

from perfaudit import ASSIGNMENT, workcopy

STUDENT_CONFIG = Path(__file__).with_name("student_lab")  # Jupyter config for the students' JupyterLab
ROOT_REFUSED = ("JupyterLab does not run as root unless asked: run `make lab` as an ordinary user, or, in a "
                "container where root is all there is, `make lab ALLOW_ROOT=1` (python -m perfaudit.lab --allow-root).")


def lab_command(course_dir, extra_args=()):
    """(argv, env, cwd) that start JupyterLab rooted at work/; makes it and the local exchange when missing."""
    course_dir = Path(course_dir).resolve()
    (course_dir / "exchange").mkdir(exist_ok=True)  # nbgrader lists an exchange only if it exists
    (course_dir / workcopy.WORK_DIR).mkdir(exist_ok=True)
    argv = [
        sys.executable, "-m", "jupyter", "lab",
        f"--ServerApp.root_dir={course_dir / workcopy.WORK_DIR}",
        *extra_args,
    ]
    config_path = [str(course_dir), str(STUDENT_CONFIG),
                   *filter(None, os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep))]
    env = {**os.environ, "JUPYTER_CONFIG_PATH": os.pathsep.join(config_path)}
    return argv, env, course_dir


def exchange_releases(env):
    """Whether the exchange that the Assignments view lists has released the assignment. nbgrader's config is read
    as JupyterLab's server reads it: JUPYTER_CONFIG_PATH in env first (the course directory), then the user's
    and the system's (where a course server sets Exchange.root)."""
    # nbgrader (seconds) only when the lab starts: the hub's config imports this module for STUDENT_CONFIG alone
    from jupyter_core.paths import jupyter_config_path
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default import Exchange
    from traitlets.config import Application

    app = Application()
    app.load_config_file("nbgrader_config", path=[*env["JUPYTER_CONFIG_PATH"].split(os.pathsep),
                                                  *jupyter_config_path()])
    course_id = CourseDirectory(config=app.config).course_id
    # Looked up, not listed with nbgrader: listing creates a missing exchange root.
    outbound = Path(Exchange(config=app.config).root) / course_id / "outbound" / ASSIGNMENT
    return bool(course_id) and outbound.is_dir()


def working_copy(course_dir, env):
    """Make the working copy from notebooks/ unless the exchange releases the assignment (then Fetch makes it);
    returns what to tell the student, or None."""
    if exchange_releases(env):
        if not workcopy.assignment_dir(course_dir).exists():
            return (f"Your course releases {ASSIGNMENT} through its exchange: in JupyterLab, Nbgrader > Assignment "
                    f"List > Fetch makes your working copy {workcopy.WORK_DIR}/{ASSIGNMENT}/.")
        return None
    work, copied = workcopy.ensure(course_dir)
    if copied:
        return (f"Your working copy: {work.relative_to(course_dir)}/ (copied from the release: {', '.join(copied)}). "
                "It is never overwritten; delete a notebook there to start it again.")
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course", default=".", help="the course directory (holds nbgrader_config.py)")
    parser.add_argument("--allow-root", action="store_true", help="start even as root (JupyterLab's --allow-root)")
    parser.add_argument("lab_args", nargs="*", help="arguments for jupyter lab, after --")
    args = parser.parse_args(argv)
    course_dir = Path(args.course).resolve()
    if not (course_dir / "nbgrader_config.py").is_file():
        sys.exit(f"{course_dir} has no nbgrader_config.py: run this from the course directory or pass --course.")
    if os.geteuid() == 0 and not args.allow_root:
        sys.exit(ROOT_REFUSED)
    command, env, cwd = lab_command(course_dir, [*(["--allow-root"] if args.allow_root else []), *args.lab_args])
    message = working_copy(course_dir, env)
    if message:
        print(message, flush=True)
    os.chdir(cwd)
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    main()
