"""make hub's checks before the hub starts (perfaudit/hub/preflight.py): a course root owns is refused, and a course
owner who cannot run what the grading service runs is told what, each in one line."""

import os
import pwd
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from accounts_made import grading_account

from perfaudit import paths
from perfaudit.hub import preflight, settings, userenv


def test_a_course_root_owns_is_refused_in_one_line(tmp_path):
    root = SimpleNamespace(owner=pwd.getpwuid(0), course=tmp_path)
    said = preflight.root_owned(root)
    assert said.startswith(f"Refused: root owns the course directory {tmp_path}") and "\n" not in said
    assert preflight.root_owned(SimpleNamespace(owner=pwd.getpwnam("nobody"), course=tmp_path)) is None


def test_the_services_path_puts_the_accounts_python_first_once(tmp_path):
    path = preflight.services_path(tmp_path / "thin" / "bin" / "python", tmp_path / "thin" / "bin")
    assert path.split(os.pathsep)[0] == str(tmp_path / "thin" / "bin")
    assert path.split(os.pathsep).count(str(tmp_path / "thin" / "bin")) == 1


def test_an_owner_who_cannot_write_the_course_is_told_so_in_one_line():
    """The check runs as the course's owner, started as the hub starts the service (own_network.py), with the
    services' environment: here an account of the test's (with the subordinate ids its grading sandbox runs as), in a
    course root keeps (0755): it cannot write the gradebook there."""
    if os.geteuid() != 0:
        pytest.fail("runs the check as another account: run it as root (CI does)")
    with tempfile.TemporaryDirectory(dir="/tmp") as folder, grading_account() as name:
        course = Path(folder) / "course"
        course.mkdir()
        os.chmod(folder, 0o755)
        shutil.copy(paths.ROOT / "nbgrader_config.py", course)
        hub = SimpleNamespace(owner=pwd.getpwnam(name), course=course, exchange=Path(folder) / "exchange",
                              venv_bin=Path(sys.executable).parent, serve_args=())
        said = preflight.owner_problem(hub, userenv.accounts_python(hub.venv_bin, settings.ACCOUNTS_PYTHON))
        assert said == (f"The grading service cannot grade as {name}: cannot make {course / 'autograded'} "
                        "(Permission denied).")
        course.chmod(0o777)  # the same check passes once the owner may write there
        assert preflight.owner_problem(hub, userenv.accounts_python(hub.venv_bin, settings.ACCOUNTS_PYTHON)) is None


def test_the_check_meets_what_the_service_meets_in_the_course_directory():
    """make hub-users run by root once left perfaudit.egg-info root's in the course, and make hub closed it (0750):
    the service, started in the course directory, died on it at every start, while the check, run from /, passed.
    The check runs where the service runs, as it runs: it fails on the same folder, in one line."""
    if os.geteuid() != 0:
        pytest.fail("runs the check as another account: run it as root (CI does)")
    with tempfile.TemporaryDirectory(dir="/tmp") as folder, grading_account() as name:
        course = Path(folder) / "course"
        course.mkdir()
        course.chmod(0o777)  # the owner may write the gradebook there
        os.chmod(folder, 0o755)
        shutil.copy(paths.ROOT / "nbgrader_config.py", course)
        hub = SimpleNamespace(owner=pwd.getpwnam(name), course=course, exchange=Path(folder) / "exchange",
                              venv_bin=Path(sys.executable).parent, serve_args=())
        python = userenv.accounts_python(hub.venv_bin, settings.ACCOUNTS_PYTHON)
        assert preflight.owner_problem(hub, python) is None
        closed = course / "perfaudit.egg-info"  # root's, closed to others as make hub closes what it does not open
        closed.mkdir()
        (closed / "entry_points.txt").write_text("")
        closed.chmod(0o750)
        said = preflight.owner_problem(hub, python)
        assert said is not None and "\n" not in said and "Permission denied" in said, said
        os.chown(closed, hub.owner.pw_uid, -1)  # the course's owner's, as make hub-users now leaves it
        assert preflight.owner_problem(hub, python) is None


def test_the_services_environment_is_the_hub_s_not_root_s(monkeypatch):
    """Students' servers, Formgrader and the service get the course's PATH and the system's, never root's own."""
    monkeypatch.setenv("PATH", "/root/.pyenv/shims:/usr/local/sbin:/usr/sbin:/usr/bin")
    monkeypatch.setenv("ROOTS_OWN", "secret")
    hub = SimpleNamespace(owner=pwd.getpwnam("nobody"), exchange=Path("/srv/x"), venv_bin=Path("/srv/course/.venv/bin"))
    env = preflight.as_the_service_runs(hub, Path("/srv/course/.venv/bin/python"))
    assert env["PATH"] == "/srv/course/.venv/bin:/usr/local/bin:/usr/bin:/bin"
    assert "ROOTS_OWN" not in env and env["HOME"] == hub.owner.pw_dir and env["USER"] == "nobody"


@pytest.mark.parametrize("domain, shared, refused", [
    ("", False, "served from the hub's one origin"),  # a class on one origin: refused, with what to set
    ("", True, None),  # the instructor chose one origin, for people who trust each other
    ("https://hub.example.edu", False, None),
    ("http://hub.localhost:8000", False, None),
    ("hub.example.edu", False, "is not https://<host name>[:port]"),
    ("https://hub.example.edu/path", False, "is not https://<host name>[:port]"),
])
def test_a_class_on_one_origin_is_refused_in_one_line(domain, shared, refused):
    """A held-out attacker's page, served by their own server on the hub's one origin, read a classmate's notebooks
    and Formgrader's answer key when each opened it: make hub serves a class only with a domain per server."""
    said = preflight.shared_origin(SimpleNamespace(domain=domain, shared_origin=shared))
    assert (said is None) if refused is None else (refused in said and "\n" not in said), said
