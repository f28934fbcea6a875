"""The class's names in the gradebook (perfaudit/hub/people.py), so that Formgrader lists people, not "None, None"."""

import pwd
from types import SimpleNamespace

from courses import make_course
from nbgrader.api import Gradebook

from perfaudit.hub import people


def test_a_name_is_the_account_s_full_name_else_its_login(monkeypatch):
    accounts = {"ada": "Ada Lovelace,,,", "cher": "Cher", "root": ""}
    monkeypatch.setattr(pwd, "getpwnam", lambda login: SimpleNamespace(pw_gecos=accounts[login]))  # the fields read
    assert people.name_of("ada") == ("Ada", "Lovelace")
    assert people.name_of("cher") == ("", "Cher")
    assert people.name_of("root") == ("", "root")  # no full name: the login, as last name
    monkeypatch.undo()
    assert people.name_of("no-such-account-here") == ("", "no-such-account-here")


def test_names_are_written_once_and_a_name_already_there_is_kept(tmp_path):
    course = make_course(tmp_path / "course")
    roster = {"ada": ("Ada", "Lovelace"), "grace": ("", "grace")}
    assert people.record(course, roster) == ["ada", "grace"]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_student("grace", first_name="Grace", last_name="Hopper")  # Manage Students
    assert people.record(course, {**roster, "alan": ("Alan", "Turing")}) == ["alan"]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        found = {s.id: (s.first_name, s.last_name) for s in gradebook.students}
    assert found == {"ada": ("Ada", "Lovelace"), "grace": ("Grace", "Hopper"), "alan": ("Alan", "Turing")}
