"""python -m perfaudit.hub.accounts: the class's local accounts, one per person, from a roster (make hub-users).

    python -m perfaudit.hub.accounts add roster.txt      # new accounts get a password, listed in .hub/passwords.txt
    python -m perfaudit.hub.accounts remove roster.txt   # the accounts, their homes, the course's groups: end of term

A roster has one person a line, `name role [full name]`, role `student` or `instructor` (# starts a comment); the
full name goes to the account's comment field, and make hub gives it to the gradebook (Formgrader's student list:
perfaudit/hub/people.py). Each person gets
a Linux account with a private home (0700: nobody else reads it, and each one's server runs as its owner), in the
students' or the instructors' group of the course (nbgrader-<course>, formgrade-<course>): the hub lets in these
two groups and nobody else, and only the instructors' group reaches Formgrader. Needs root (useradd).
"""

import argparse
import grp
import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from perfaudit.hub import exchange, held_memory, person_groups, servers, settings

ROLES = ("student", "instructor")
# Where every account may leave files (sticky, world-writable), which a later account with a removed one's uid would own
SHARED_FOLDERS = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/run/lock"))
# Never taken for an option of useradd; and no "--": JupyterHub names a service's domain <service>--service.<domain>,
# and a person's <login>.<domain>, so a login ending in "--service" would be a service's origin.
ACCOUNT_NAME = re.compile(r"(?!.*--)[a-z_][a-z0-9_-]{0,31}")
FULL_NAME = re.compile(r"[^,:=\x00-\x1f\x7f]*")  # the comment field: no field separators, no control characters


def read_roster(path):
    """[(name, role, full name or "")] of a roster file."""
    people = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, *rest = line.split()
        role, full_name = (rest[0] if rest else "student"), " ".join(rest[1:])
        if role not in ROLES or not ACCOUNT_NAME.fullmatch(name) or not FULL_NAME.fullmatch(full_name):
            raise SystemExit(f"{path}:{number}: expected `name student` or `name instructor` (then, if you like, "
                             "the full name), the name a Linux account name (lowercase letters, digits, - and _, a "
                             f"letter first, no '--'); found {line!r}")
        people.append((name, role, full_name))
    return people


def exists(name, database=pwd.getpwnam):
    try:
        database(name)
        return True
    except KeyError:
        return False


def ensure_group(name):
    if not exists(name, grp.getgrnam):
        subprocess.run(["groupadd", name], check=True)


def drop_subordinate_ids(name):
    """Take away the account's subordinate ids (/etc/subuid, /etc/subgid), which useradd gives every new account:
    with them a student runs processes as uids of their own range (newuidmap is setuid), whose memory, processes and
    files the hub's limits service counts for nobody. Only the course's owner needs them (its grading sandbox)."""
    for path, flag in (("/etc/subuid", "--del-subuids"), ("/etc/subgid", "--del-subgids")):
        try:
            lines = Path(path).read_text().splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.strip().split(":")
            if len(fields) == 3 and fields[0] == name and fields[1].isdigit() and fields[2].isdigit():
                start, count = int(fields[1]), int(fields[2])
                subprocess.run(["usermod", flag, f"{start}-{start + count - 1}", name], check=True)


def add(people, hub=None):
    """Create each missing account with a random password; put everyone in their role's group. Returns
    {name: password} of the accounts created now (an existing account keeps its password)."""
    hub = hub or settings.from_environment()
    students, instructors = hub.groups()
    for group in (students, instructors):
        ensure_group(group)
    created = {}
    for name, role, *full_name in people:
        group = instructors if role == "instructor" else students
        if not exists(name):
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group",
                            "-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0", name], check=True)
            created[name] = secrets.token_urlsafe(12)
        drop_subordinate_ids(name)
        comment = ["--comment", full_name[0]] if full_name and full_name[0] else []
        subprocess.run(["usermod", "--append", "--groups", group, *comment, name], check=True)
        Path(pwd.getpwnam(name).pw_dir).chmod(0o700)  # whatever useradd's HOME_MODE: a home is its owner's alone
    if created:
        subprocess.run(["chpasswd"], input="".join(f"{n}:{p}\n" for n, p in created.items()), text=True, check=True)
    return created


def remove(people, hub=None):
    """Remove each account and its home; the account's processes (its server, kernels) are ended first
    (servers.end_processes). Then the course's two groups, once nobody is left in them (add made them). Returns the
    names that could not be removed."""
    hub = hub or settings.from_environment()
    left = []
    for name, *_ in people:
        if not exists(name):
            continue
        uid = pwd.getpwnam(name).pw_uid
        # Ended processes whose parent never reaps them (an init that does not, in a container) stay as zombies,
        # which hold nothing but make userdel refuse: --force, where nothing else of the account runs.
        force = [] if servers.end_processes(uid) else ["--force"]
        subprocess.run(["userdel", *force, "--remove", name], capture_output=True)
        if exists(name):
            left.append(name)
        else:
            person_groups.remove(name)
            remove_leftovers(uid, (*SHARED_FOLDERS, hub.exchange))
    for group in hub.groups():
        if exists(group, grp.getgrnam) and not grp.getgrnam(group).gr_mem:
            subprocess.run(["groupdel", group], capture_output=True)
    return left


def remove_leftovers(uid, folders, table=held_memory.SYSV_SHM):
    """What a removed account left where every account may write, which an account made later with the same uid
    would own: each entry of folders it owned (removed by its name in the opened folder, no link followed; a folder
    with what is in it), and the System V segments it made. Returns what was removed."""
    removed = []
    for folder in folders:
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            for name in os.listdir(fd):
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if info.st_uid != uid:
                        continue
                    if stat.S_ISDIR(info.st_mode):
                        shutil.rmtree(name, dir_fd=fd)  # by descriptors: no link on the way is followed
                    else:
                        os.unlink(name, dir_fd=fd)
                except FileNotFoundError:
                    continue
                removed.append(os.path.join(folder, name))
        finally:
            os.close(fd)
    for segment in held_memory.segments(table):
        if segment.creator == uid and held_memory.remove_detached(segment, table):
            removed.append(f"System V segment {segment.id}")
    return removed


def save_passwords(created, hub):
    """Append the new accounts' first passwords to <state>/passwords.txt, readable by root alone."""
    hub.state.mkdir(parents=True, exist_ok=True)
    path = hub.state / "passwords.txt"
    exchange.keep_private(path)
    with open(path, "a") as out:
        out.writelines(f"{name} {password}\n" for name, password in created.items())
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m perfaudit.hub.accounts", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("add", "remove"))
    parser.add_argument("roster", type=Path)
    args = parser.parse_args(argv)
    people = read_roster(args.roster)
    hub = settings.from_environment()
    if args.action == "remove":
        present = [person for person in people if exists(person[0])]
        left = remove(present, hub)
        print(f"removed {len(present) - len(left)} account(s)" + (f"; not removed: {', '.join(left)}" if left else "")
              + (f"; {len(people) - len(present)} had none" if len(present) < len(people) else ""))
        return 1 if left else 0
    created = add(people, hub)
    where = save_passwords(created, hub) if created else None
    print(f"{len(people)} account(s) in {' and '.join(hub.groups())}; {len(created)} new"
          + (f": their first passwords are in {where} (hand each out, then delete the file)" if where else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
