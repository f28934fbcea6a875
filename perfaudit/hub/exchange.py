"""The shared exchange every account of the hub reads and writes, and the course folders students must not read.

Modes as nbgrader's exchange makes them (nbgrader/exchange/default/), so that students meet in one folder without
seeing one another's work:

    <exchange>                    1777  anyone makes their course's folder; nobody removes another's (sticky)
    <exchange>/<course>           0755  owned by the course's owner
      outbound/                   0755  the release: everyone fetches
      inbound/                    3733  everyone submits; nobody but the owner lists it (names hold a random part),
                                        and nobody renames or removes another's submission (sticky)
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
import pwd
import stat
import subprocess
import sys
from pathlib import Path

from perfaudit import ASSIGNMENT, paths
from perfaudit.hub import people, preflight, servers, settings, userenv

MODES = {"": 0o755, "outbound": 0o755, "inbound": 0o3733, "feedback": 0o711}
ROOT_MODE = 0o1777
# What of the course directory students' servers need, so all of it every account may read: the venv, the Python
# every account's JupyterLab runs (.hub/accounts-python; the hub's own files there are kept private by
# perfaudit/hub/jupyterhub_config.py) and the package the notebooks import, less its answers
# (paths.ANSWER_FOLDERS). Everything else (source/, .git with every version of it, submitted/, autograded/,
# feedback/, the gradebook, the tests, ...) is the course owner's.
STUDENTS_READ = (".venv", ".hub", "perfaudit")


class Refused(RuntimeError):
    """The exchange cannot be set up safely as it is (a link where a folder should be, a course folder another
    account made): one line for the administrator, and nothing was changed through it."""


NO_FOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def prepare(exchange, course_id, owner_uid=None, owner_gid=-1):
    """Make the exchange and the course's folders in it with nbgrader's modes (and mend modes loosened since); the
    course's folders (and the release in outbound/) belong to owner_uid (and owner_gid) when given.

    Run as root in a folder every account writes (the exchange is 1777), so no step follows a link: each folder is
    made and opened by name in its opened parent (mkdir and open with dir_fd, O_NOFOLLOW), and its owner and mode are
    set on that open folder (fchown, fchmod). A link anywhere on the way, or a course folder another account made
    before the course's first set-up, is refused with one line (Refused), before anything is changed through it."""
    exchange = Path(exchange).absolute()
    exchange.parent.mkdir(parents=True, exist_ok=True)
    root = _open_path(exchange)
    try:
        _owned_by(root, exchange, {0, os.geteuid()})
        os.fchmod(root, ROOT_MODE)
        course = _make_in(root, course_id, exchange)
        try:
            _owned_by(course, exchange / course_id, {0, os.geteuid(), owner_uid})
            for name, mode in MODES.items():
                folder = course if not name else _make_in(course, name, exchange / course_id)
                try:
                    if owner_uid is not None:
                        os.fchown(folder, owner_uid, owner_gid)
                    os.fchmod(folder, mode)  # after chown, which clears the setgid bit
                    if name == "outbound" and owner_uid is not None:
                        _chown_tree(folder, owner_uid, owner_gid)
                finally:
                    if folder != course:
                        os.close(folder)
        finally:
            os.close(course)
    finally:
        os.close(root)
    return exchange / course_id


def _open_path(path):
    """An open folder at the absolute path, each of its parts opened in the one before without following a link."""
    parent = os.open("/", NO_FOLLOW_DIR)
    walked = Path("/")
    try:
        for part in path.parts[1:]:
            walked = walked / part
            made = _make_in(parent, part, walked.parent) if walked == path else _open_in(parent, part, walked.parent)
            os.close(parent)
            parent = made
    except BaseException:
        os.close(parent)
        raise
    return parent


def _open_in(parent_fd, name, parent_path):
    try:
        return os.open(name, NO_FOLLOW_DIR, dir_fd=parent_fd)
    except OSError as error:
        raise Refused(_not_a_folder(parent_fd, name, parent_path, error)) from error


def _make_in(parent_fd, name, parent_path):
    """The folder `name` in the open folder parent_fd, made when missing (0700 until its mode is set): its fd."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    except FileExistsError:
        pass
    return _open_in(parent_fd, name, parent_path)


def _not_a_folder(parent_fd, name, parent_path, error):
    try:
        found = os.lstat(name, dir_fd=parent_fd)
    except OSError:
        return f"cannot open {parent_path / name} ({error.strerror}): nothing was changed"
    if stat.S_ISLNK(found.st_mode):
        target = os.readlink(name, dir_fd=parent_fd)
        return (f"refused: {parent_path / name} is a link (to {target}, made by {_account(found.st_uid)}), not a "
                "folder; remove it, or name the real path: the exchange's set-up follows no link")
    return (f"refused: {parent_path / name} is not a folder (made by {_account(found.st_uid)}); remove it: the "
            "exchange's set-up follows no link and changes nothing it did not make")


def _owned_by(fd, path, owners):
    found = os.fstat(fd).st_uid
    if found not in owners:
        raise Refused(f"refused: {path} belongs to {_account(found)}, not to root or the course's owner (an account "
                      "made it before the course's set-up); remove it: the exchange's set-up changes nothing another "
                      "account made")


def _chown_tree(folder_fd, uid, gid):
    """Everything under the open folder to uid:gid, no link followed (the release: root's when root released it)."""
    for _, dirs, files, where in os.fwalk(dir_fd=folder_fd, follow_symlinks=False):
        for name in dirs + files:
            os.chown(name, uid, gid, dir_fd=where, follow_symlinks=False)


def _account(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def loosened(exchange, course_id):
    """[(path, found mode, expected mode)] of the exchange's folders whose modes are not nbgrader's (a link is
    never nbgrader's: its mode is shown as the link's)."""
    wrong = []
    for path, mode in [(Path(exchange), ROOT_MODE),
                       *[(Path(exchange) / course_id / name, m) for name, m in MODES.items()]]:
        found = path.lstat().st_mode
        if stat.S_IMODE(found) != mode or not stat.S_ISDIR(found):
            wrong.append((str(path), oct(stat.S_IMODE(found)), oct(mode)))
    return wrong


def protect(course_dir):
    """Take every permission of other accounts off everything in the course directory but what students' servers
    need (STUDENTS_READ), and off the package's answers (the grader's own modules stay readable: student kernels
    import perfaudit.autograde.wire.agent in the sandbox). The course directory itself keeps only other accounts' search
    permission: their servers reach the venv and the package by path, and nobody lists what else is there. What the
    package's public part needs to be imported is opened to them (read, and search on folders).

    Run as root in a folder the course's owner writes: no link is followed (a link is left as it is, a folder
    reached through a link is not changed), each entry opened in its opened folder and its mode set on it (fchmod)."""
    course = os.open(Path(course_dir), NO_FOLLOW_DIR)
    try:
        os.fchmod(course, stat.S_IMODE(os.fstat(course).st_mode) & ~0o006 | 0o001)
        for name in os.listdir(course):
            if name not in STUDENTS_READ:
                _close_to_others(course, name)
        try:
            package = os.open("perfaudit", NO_FOLLOW_DIR, dir_fd=course)
        except OSError:
            return  # no package, or a link to one: nothing of it is changed
        try:
            _open_to_others(package, skip=paths.ANSWER_FOLDERS)
            for name in paths.ANSWER_FOLDERS:
                _close_to_others(package, name)
        finally:
            os.close(package)
    finally:
        os.close(course)


def _open_to_others(package_fd, skip):
    """What students' kernels import, readable by every account: each folder and file of the package but the
    folders named in skip (a clone made under umask 077 leaves its modules 0600, and a student's import fails).
    Read (and search, where its owner has it) added on each entry opened without following a link."""
    os.fchmod(package_fd, stat.S_IMODE(os.fstat(package_fd).st_mode) | 0o055)
    for _, dirs, files, where in os.fwalk(dir_fd=package_fd, follow_symlinks=False):
        dirs[:] = [name for name in dirs if name not in skip]  # the answers stay closed, and all under them
        for name in dirs + files:
            try:
                entry = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=where)
            except OSError:
                continue  # a link, a socket, gone since listed: left as it is
            try:
                found = stat.S_IMODE(os.fstat(entry).st_mode)
                os.fchmod(entry, found | 0o044 | (0o011 if found & 0o100 else 0))
            finally:
                os.close(entry)
        files.clear()


def _close_to_others(folder_fd, name):
    """Other accounts' permissions off the entry `name` of the open folder, unless it is a link (or gone)."""
    try:
        entry = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError:
        return  # a link (ELOOP), a socket, gone since listed: left as it is
    try:
        os.fchmod(entry, stat.S_IMODE(os.fstat(entry).st_mode) & ~0o007)
    finally:
        os.close(entry)


def state_problem(folder):
    """Why root should not keep the hub's own files in folder (its database with every user's tokens, the cookie
    secret, the first passwords, the Python every account runs), in one line; None when it is root's. It sits in
    the course directory, which the course's owner writes: a .hub/ they made, or may write, could hold a link where
    root writes next."""
    try:
        found = os.lstat(folder)
    except FileNotFoundError:
        return None  # made by root now
    if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode):
        return f"refused: the hub's state folder {folder} is not a folder (a link?); remove it: root makes it"
    if found.st_uid != os.geteuid() or found.st_mode & 0o022:
        return (f"refused: the hub's state folder {folder} belongs to {_account(found.st_uid)} (mode "
                f"{oct(stat.S_IMODE(found.st_mode))}); root keeps the hub's database and passwords there, so only "
                f"root may write in it: chown root: {folder} && chmod go-w {folder}, or remove it")
    return None


def keep_private(path):
    """A file that is its owner's alone (0600): made so when missing (an empty SQLite file is a new database),
    its mode set when present; a link there is refused (Refused), not followed."""
    try:
        handle = os.open(Path(path), os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    except OSError as error:
        raise Refused(f"refused: {path} cannot be opened without following a link ({error.strerror}); remove it: "
                      "the hub's database is made where it is named") from error
    try:
        os.fchmod(handle, 0o600)
    finally:
        os.close(handle)


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


def end_leftovers(hub):
    """End every process of the course's students and instructors (the owner's aside) before the hub starts: a held-out
    attacker's process, started from a terminal with setsid, outlived the hub, took its ports as it restarted (the
    start failed) and answered the logins on the public one with a page of its own. Their servers and kernels stop
    with the hub anyway, and with the hub down they have no way to start another. Returns how many there were."""
    if os.geteuid() != 0:
        return 0  # only root may end another account's processes (and only root starts a hub with accounts)
    ended = 0
    people = {person for group in hub.groups() for person in servers.members(group)} - {hub.owner.pw_name}
    for _, uid, running in servers.each_account(sorted(people)):
        ended += len(running)
        servers.end_processes(uid)
    return ended


def main():
    hub = settings.from_environment()
    refused = preflight.root_owned(hub) or preflight.shared_origin(hub)
    if refused:
        raise SystemExit(refused)
    try:
        course_path = prepare(hub.exchange, hub.course_id, hub.owner.pw_uid, hub.owner.pw_gid)
    except Refused as refusal:
        raise SystemExit(str(refusal)) from None
    protect(hub.course)
    python = userenv.accounts_python(hub.venv_bin, settings.ACCOUNTS_PYTHON)
    problem = preflight.owner_problem(hub, python)
    if problem:
        raise SystemExit(problem)
    ended = end_leftovers(hub)
    if ended:
        print(f"ended {ended} process(es) the course's people left running", file=sys.stderr)
    record_names(hub, python)
    if not released(course_path):
        release(hub)
        print(f"released {ASSIGNMENT} to {course_path / 'outbound'}")
    print(f"exchange ready: {course_path} (inbound 3733, feedback 0711, outbound 0755)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
