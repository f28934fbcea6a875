"""The roster make hub-users reads: one `name role` a line; a name that is no Linux account name is refused."""

import os
import secrets
import subprocess
from types import SimpleNamespace

import pytest

from perfaudit.hub import accounts, people


def test_a_roster_lists_names_and_roles(tmp_path):
    roster = tmp_path / "roster.txt"
    roster.write_text("# course 101\nalovelace instructor Ada Lovelace\ns2403117  student\ns-24_03118\n\n")
    assert accounts.read_roster(roster) == [("alovelace", "instructor", "Ada Lovelace"), ("s2403117", "student", ""),
                                            ("s-24_03118", "student", "")]


@pytest.mark.parametrize("line", ["Ada student", "ada teacher", "ada/../root student", "ada;rm student",
                                  "-oroot student", "2403117 student",
                                  "ada student Ada,Lovelace", "ada student Ada:Lovelace"])
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
