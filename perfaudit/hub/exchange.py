"""The shared exchange every account of the hub reads and writes, and the course folders students must not read.

Modes as nbgrader's exchange makes them (nbgrader/exchange/default/), so that students meet in one folder without
seeing one another's work:

    <exchange>                    1777  anyone makes their course's folder; nobody removes another's (sticky)
    <exchange>/<course>           0755  owned by the course's owner
      outbound/                   0755  the release: everyone fetches
      inbound/                    2733  everyone submits; nobody but the owner lists it (names hold a random part)
        <student>+<assignment>+.. 0770  each submission: its student's and the course owner's group's (inherited
          files                   0640  from inbound/), nobody else's: perfaudit/hub/submit.py (nbgrader: 0777/0644)
      feedback/                   0711  pages named by a hash of each submission's secret: nobody lists them

The course's folders belong to the course's owner and the owner's own group: a submission, made in the setgid
inbound/, takes that group, which no student is in; the grading service and Formgrader read it through the group.

python -m perfaudit.hub.exchange makes them (make hub runs it) and releases the assignment there if it is not yet.
"""

import grp
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from perfaudit import ASSIGNMENT, paths
from perfaudit.hub import people, preflight, settings, userenv

MODES = {"": 0o755, "outbound": 0o755, "inbound": 0o2733, "feedback": 0o711}
ROOT_MODE = 0o1777
# What of the course directory students' servers need, so all of it every account may read: the venv, the Python
# every account's JupyterLab runs (.hub/accounts-python; the hub's own files there are kept private by
# perfaudit/hub/jupyterhub_config.py) and the package the notebooks import, less its answers
# (paths.ANSWER_FOLDERS). Everything else (source/, .git with every version of it, submitted/, autograded/,
# feedback/, the gradebook, the tests, ...) is the course owner's.
STUDENTS_READ = (".venv", ".hub", "perfaudit")


def prepare(exchange, course_id, owner_uid=None, owner_gid=-1):
    """Make the exchange and the course's folders in it with nbgrader's modes (and mend modes loosened since); the
    course's folders (and the release in outbound/) belong to owner_uid (and owner_gid) when given."""
    exchange = Path(exchange)
    exchange.mkdir(parents=True, exist_ok=True)
    exchange.chmod(ROOT_MODE)
    for name, mode in MODES.items():
        folder = exchange / course_id / name
        folder.mkdir(exist_ok=True)
        if owner_uid is not None:
            os.chown(folder, owner_uid, owner_gid)
        folder.chmod(mode)  # after chown, which clears the setgid bit
    if owner_uid is not None:
        for path in (exchange / course_id / "outbound").rglob("*"):
            os.chown(path, owner_uid, owner_gid, follow_symlinks=False)
    return exchange / course_id


def loosened(exchange, course_id):
    """[(path, found mode, expected mode)] of the exchange's folders whose modes are not nbgrader's."""
    wrong = []
    for path, mode in [(Path(exchange), ROOT_MODE),
                       *[(Path(exchange) / course_id / name, m) for name, m in MODES.items()]]:
        found = stat.S_IMODE(path.stat().st_mode)
        if found != mode:
            wrong.append((str(path), oct(found), oct(mode)))
    return wrong


def protect(course_dir):
    """Take every permission of other accounts off everything in the course directory but what students' servers
    need (STUDENTS_READ), and off the package's answers (the grader's own modules stay readable: student kernels
    import perfaudit.autograde.wire.agent in the sandbox). The course directory itself keeps only other accounts' search
    permission: their servers reach the venv and the package by path, and nobody lists what else is there. A link
    is left as it is (chmod would change what it points to)."""
    course_dir = Path(course_dir)
    course_dir.chmod(stat.S_IMODE(course_dir.stat().st_mode) & ~0o006)
    closed = [entry for entry in course_dir.iterdir() if entry.name not in STUDENTS_READ]
    for path in [*closed, *(course_dir / "perfaudit" / name for name in paths.ANSWER_FOLDERS)]:
        if path.exists() and not path.is_symlink():
            path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o007)


def keep_private(path):
    """A file that is its owner's alone (0600): made so when missing (an empty SQLite file is a new database),
    its mode set when present."""
    path = Path(path)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    path.chmod(0o600)


def released(course_path):
    return (Path(course_path) / "outbound" / ASSIGNMENT).is_dir()


def release(hub):
    """nbgrader release_assignment to the hub's exchange, as the course's owner (nbgrader releases only into a
    course folder its account owns)."""
    python = sys.executable
    as_owner = []
    if os.geteuid() == 0 and hub.owner.pw_uid != 0:
        python = str(userenv.accounts_python(hub.venv_bin, settings.ACCOUNTS_PYTHON))
        as_owner = ["runuser", "-u", hub.owner.pw_name, "--"]
    env = {**os.environ, "PERFAUDIT_EXCHANGE": str(hub.exchange),  # the course's nbgrader_config.py reads it
           "PATH": f"{Path(python).parent}{os.pathsep}{hub.venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([*as_owner, python, "-m", "nbgrader", "release_assignment", ASSIGNMENT], cwd=hub.course,
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"nbgrader release_assignment failed:\n{done.stdout}\n{done.stderr}")


def record_names(hub, python):
    """The students' names in the gradebook, as the course's owner (perfaudit/hub/people.py): Formgrader lists
    people, not "None, None". A failure is said, and the hub starts all the same."""
    try:
        logins = grp.getgrnam(hub.groups()[0]).gr_mem
    except KeyError:
        return
    named = {login: people.name_of(login) for login in logins}
    done = preflight.run_as_owner(hub, python, "perfaudit.hub.people", "--course-dir", str(hub.course),
                                  json.dumps(named))
    print(preflight.last_line(done) if done.returncode == 0 else
          f"the students' names were not written to the gradebook: {preflight.last_line(done)}", file=sys.stderr)


def main():
    hub = settings.from_environment()
    refused = preflight.root_owned(hub)
    if refused:
        raise SystemExit(refused)
    course_path = prepare(hub.exchange, hub.course_id, hub.owner.pw_uid, hub.owner.pw_gid)
    protect(hub.course)
    python = userenv.accounts_python(hub.venv_bin, settings.ACCOUNTS_PYTHON)
    problem = preflight.owner_problem(hub, python)
    if problem:
        raise SystemExit(problem)
    record_names(hub, python)
    if not released(course_path):
        release(hub)
        print(f"released {ASSIGNMENT} to {course_path / 'outbound'}")
    print(f"exchange ready: {course_path} (inbound 2733, feedback 0711, outbound 0755)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
