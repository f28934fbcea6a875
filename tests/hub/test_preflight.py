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
    """The check runs as the course's owner (runuser), with the services' environment: here `nobody`, in a course
    root keeps (0755): it cannot write the gradebook there."""
    if os.geteuid() != 0:
        pytest.fail("runs the check as another account: run it as root (CI does)")
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        course = Path(folder) / "course"
        course.mkdir()
        os.chmod(folder, 0o755)
        shutil.copy(paths.ROOT / "nbgrader_config.py", course)
        nobody = pwd.getpwnam("nobody")
        hub = SimpleNamespace(owner=nobody, course=course, exchange=Path(folder) / "exchange",
                              venv_bin=Path(sys.executable).parent)
        said = preflight.owner_problem(hub, userenv.accounts_python(hub.venv_bin, settings.ACCOUNTS_PYTHON))
        assert said == (f"The grading service cannot grade as nobody: cannot make {course / 'autograded'} "
                        "(Permission denied).")
        course.chmod(0o777)  # the same check passes once nobody may write there
        assert preflight.owner_problem(hub, userenv.accounts_python(hub.venv_bin, settings.ACCOUNTS_PYTHON)) is None
