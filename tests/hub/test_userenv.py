"""The Python every account's JupyterLab runs (perfaudit/hub/userenv.py): the venv's own where every account can."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from perfaudit import paths
from perfaudit.hub import userenv


def _program(path, mode):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


@pytest.fixture
def open_folder():
    """A folder every account may search, under /tmp (pytest's own temporary folders are their owner's alone)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        os.chmod(folder, 0o755)
        yield Path(folder)


def test_a_program_runs_for_all_when_it_and_every_folder_above_it_let_others_in(open_folder):
    tmp_path = open_folder
    assert userenv.runnable_by_all(_program(tmp_path / "open" / "python", 0o755))
    assert not userenv.runnable_by_all(_program(tmp_path / "mine" / "python", 0o750))
    closed = _program(tmp_path / "closed" / "python", 0o755)
    closed.parent.chmod(0o750)
    assert not userenv.runnable_by_all(closed)
    (tmp_path / "open" / "python3").symlink_to(closed)  # the folders above the link's target count
    assert not userenv.runnable_by_all(tmp_path / "open" / "python3")
    assert not userenv.runnable_by_all(tmp_path / "absent")
    assert not userenv.runnable_by_all(tmp_path)  # a folder is not a program


def test_the_system_python_is_the_one_of_the_version_asked_for(monkeypatch):
    monkeypatch.setattr(userenv, "runnable_by_all", lambda path: path == "/usr/local/bin/python3.99")
    assert userenv.system_python((3, 99)) == Path("/usr/local/bin/python3.99")
    assert userenv.system_python((3, 98)) is None


def test_the_course_venv_s_python_is_used_when_every_account_can_run_it(tmp_path, monkeypatch):
    monkeypatch.setattr(userenv, "runnable_by_all", lambda path: True)
    assert userenv.accounts_python(tmp_path / "bin", tmp_path / "thin") == tmp_path / "bin" / "python"
    assert not (tmp_path / "thin").exists()


def test_without_a_python_every_account_runs_the_hub_refuses_to_start(tmp_path, monkeypatch):
    monkeypatch.setattr(userenv, "runnable_by_all", lambda path: False)
    with pytest.raises(SystemExit, match=f"only root can run {os.path.realpath(sys.executable)}"):
        userenv.accounts_python(Path(sys.executable).parent, tmp_path / "thin")


def test_the_venv_s_commands_run_through_the_thin_venv_s_python(tmp_path):
    """nbgrader runs `alembic` from PATH: the venv's own names a Python only root may run, the copy the thin one."""
    venv_bin, thin_bin = tmp_path / "venv" / "bin", tmp_path / "thin" / "bin"
    venv_bin.mkdir(parents=True)
    thin_bin.mkdir(parents=True)
    _program(venv_bin / "python", 0o755)
    body = "import sys\nfrom alembic.config import main\n"
    (venv_bin / "alembic").write_text(f"#!{venv_bin / 'python'}\n{body}")
    (venv_bin / "activate").write_text("# not a command\n")
    (venv_bin / "other").write_text("#!/bin/sh\necho elsewhere\n")
    userenv.copy_commands(venv_bin, thin_bin)
    assert sorted(p.name for p in thin_bin.iterdir()) == ["alembic"]
    assert (thin_bin / "alembic").read_text() == f"#!{thin_bin / 'python'}\n{body}"
    assert os.access(thin_bin / "alembic", os.X_OK)


def _make_variable(folder, name, *as_account):
    done = subprocess.run([*as_account, "make", "-C", str(folder), "-pn", "help"], capture_output=True, text=True)
    return next(line.split(":=", 1)[1].strip() for line in done.stdout.splitlines() if line.startswith(f"{name} :="))


def test_make_runs_the_thin_venv_for_an_account_that_may_not_run_the_venv_s_python(open_folder):
    """The course's owner runs make feedback (Formgrader's terminal, sudo -u grader) where the venv's Python is
    root's alone: the Makefile's commands then run through .hub/accounts-python."""
    if os.geteuid() != 0:
        pytest.fail("runs make as another account: run it as root (CI does)")
    shutil.copy(paths.ROOT / "Makefile", open_folder / "Makefile")
    private = _program(open_folder / "private" / "python", 0o755)
    private.parent.chmod(0o700)  # as /root/.pyenv is
    (open_folder / ".venv" / "bin").mkdir(parents=True)
    (open_folder / ".venv" / "bin" / "python").symlink_to(private)
    _program(open_folder / ".hub" / "accounts-python" / "bin" / "python", 0o755)
    assert _make_variable(open_folder, "BIN") == str(open_folder / ".venv" / "bin")  # root runs the venv's own
    thin = str(open_folder / ".hub" / "accounts-python" / "bin")
    assert _make_variable(open_folder, "BIN", "runuser", "-u", "nobody", "--") == thin
