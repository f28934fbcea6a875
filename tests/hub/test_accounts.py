"""The roster make hub-users reads: one `name role` a line; a name that is no Linux account name is refused."""

import os
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from perfaudit.hub import accounts, people, servers


def test_a_roster_lists_names_and_roles(tmp_path):
    roster = tmp_path / "roster.txt"
    roster.write_text("# course 101\nalovelace instructor Ada Lovelace\ns2403117  student\ns-24_03118\n\n")
    assert accounts.read_roster(roster) == [("alovelace", "instructor", "Ada Lovelace"), ("s2403117", "student", ""),
                                            ("s-24_03118", "student", "")]


@pytest.mark.parametrize("line", ["Ada student", "ada teacher", "ada/../root student", "ada;rm student",
                                  "-oroot student", "2403117 student",
                                  "ada student Ada,Lovelace", "ada student Ada:Lovelace",
                                  "jax-performance-audit--service student"])
def test_a_roster_line_that_is_not_an_account_is_refused(tmp_path, line):
    roster = tmp_path / "roster.txt"
    roster.write_text(f"{line}\n")
    with pytest.raises(SystemExit, match="roster.txt:1: expected"):
        accounts.read_roster(roster)


def test_a_name_for_the_gradebook_is_the_account_s_full_name_else_its_login(monkeypatch):
    entries = {"alovelace": "Ada King Lovelace,,,", "s2403117": "", "cher": "Cher"}
    monkeypatch.setattr(people.pwd, "getpwnam", lambda login: SimpleNamespace(pw_gecos=entries[login]))
    assert {login: people.name_of(login) for login in entries} == {
        "alovelace": ("Ada King", "Lovelace"), "s2403117": ("", "s2403117"), "cher": ("", "Cher")}


def _subordinate_lines(name):
    return [line for path in ("/etc/subuid", "/etc/subgid")
            for line in open(path).read().splitlines() if line.split(":")[0] == name]


def test_a_student_keeps_no_subordinate_ids():
    """useradd gives each new account 65536 subordinate uids; with newuidmap (setuid) a student ran a process as
    one of them and held 2.2 GB in /dev/shm that the hub's limits service counted for nobody."""
    if os.geteuid() != 0:
        pytest.fail("makes a Linux account: run it as root (CI does)")
    name = f"pasub{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--no-create-home", name], check=True)
    try:
        assert _subordinate_lines(name), "useradd gave it none: nothing to take away here"
        accounts.drop_subordinate_ids(name)
        assert _subordinate_lines(name) == []
        accounts.drop_subordinate_ids(name)  # none left: nothing to do, no error
    finally:
        subprocess.run(["userdel", name], check=True)


SHM_MADE = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget(0, 1 << 20, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT: left behind, attached by nobody
print(shmid)
"""


def test_a_removed_account_leaves_nothing_a_later_one_with_its_uid_would_own():
    """A held-out attacker's account, removed, left files in /tmp, /dev/shm, /run/lock and the exchange's root and a
    System V segment, owned by its uid, which the next account given that uid owns; and a zombie (an ended process
    its parent never reaped) made userdel refuse. Each is gone, a link among them removed and not followed, and what
    other accounts own stays."""
    if os.geteuid() != 0:
        pytest.fail("makes a Linux account: run it as root (CI does)")
    name = f"paleft{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--create-home", name], check=True)
    reachable = Path(tempfile.mkdtemp(prefix="perfaudit-leftovers-"))  # tmp_path's folders are root's alone
    reachable.chmod(0o755)
    exchange_root = reachable / "exchange"
    exchange_root.mkdir()
    exchange_root.chmod(0o1777)
    precious = reachable / "precious"
    precious.write_text("kept")
    as_student = ["runuser", "-u", name, "--"]
    made = [Path(f"/tmp/{name}-file"), Path(f"/dev/shm/{name}-file"), Path(f"/var/tmp/{name}-folder"),
            exchange_root / "folder", exchange_root / "link", Path(f"/run/lock/{name}-left")]
    subprocess.run([*as_student, "sh", "-c", f"touch {made[0]} {made[1]} {made[5]} && mkdir -p {made[2]}/deep "
                    f"{made[3]} && touch {made[2]}/deep/x && ln -s {precious} {made[4]}"], check=True)
    others = exchange_root / "a classmate's"
    others.write_text("kept")
    shmid = int(subprocess.run([*as_student, "/usr/bin/python3", "-c", SHM_MADE], capture_output=True, text=True,
                               check=True).stdout)
    # A zombie: `sleep 0` ends, and its parent, exec'd into `sleep 300`, never waits for it.
    holder = subprocess.Popen([*as_student, "sh", "-c", "sleep 0 & exec sleep 300"])
    try:
        left = accounts.remove([(name,)], hub=SimpleNamespace(groups=lambda: [], exchange=exchange_root))
        assert left == []
        assert [path for path in made if os.path.lexists(path)] == []
        assert precious.read_text() == "kept" and others.read_text() == "kept"
        assert str(shmid) not in [line.split()[1] for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]]
    finally:
        holder.kill()
        holder.wait()
        subprocess.run(["userdel", "--force", "--remove", name], capture_output=True)
        shutil.rmtree(reachable)


def test_an_account_whose_processes_fork_and_exit_as_fast_as_they_can_is_removed():
    """A held-out attacker's loop, `while true; do /bin/true; done`, made the removal stop with a traceback: a
    process listed was gone when it was killed by its id, and the account stayed. Its processes, one detached from
    every terminal too (setsid), are all ended, and the account removed."""
    if os.geteuid() != 0:
        pytest.fail("makes a Linux account: run it as root (CI does)")
    name = f"paloop{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--create-home", name], check=True)
    try:
        uid = int(subprocess.run(["id", "-u", name], capture_output=True, text=True, check=True).stdout)
        as_student = ["runuser", "-u", name, "--"]
        loops = [subprocess.Popen([*as_student, "sh", "-c", "while true; do /bin/true; done"]) for _ in range(3)]
        subprocess.run([*as_student, "setsid", "-f", "sleep", "300"], check=True)
        time.sleep(1)
        left = accounts.remove([(name,)], hub=SimpleNamespace(groups=lambda: [], exchange=Path("/nonexistent")))
        assert left == [] and not accounts.exists(name)
        assert servers.end_processes(uid) == []
        for loop in loops:
            loop.wait(timeout=10)
    finally:
        subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
        subprocess.run(["userdel", "--force", "--remove", name], capture_output=True)
