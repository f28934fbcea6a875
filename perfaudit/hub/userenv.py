"""The Python every account's JupyterLab runs: the course's venv, seen through an interpreter each account can run.

A venv's python is a link to the Python it was made from. Debian's /usr/bin/python3.11 every account runs; a
Python installed under root's home (pyenv, a home-built one) only root runs, and each student's server would fail
with "Permission denied". Then the hub makes a thin venv in its folder from the system's Python of the same
version (same ABI: the course venv's compiled packages load), whose site-packages, share/ and etc/ are links to
the course venv's: its packages, editable install and .pth files, JupyterLab's assets, the nbgrader extensions'
settings. (A link, not a .pth adding the folder: the grading sandbox binds the interpreter's site-packages
folder, resolved, and would not see a folder a .pth adds.) The venv's commands (nbgrader, alembic, jupyter...) are
copied into the thin venv's bin with its python in their first line: nbgrader runs `alembic` from PATH, and the
venv's own starts with the Python only root runs.

A fallback, said so in the hub's log: a different patch release of the same Python can differ in its standard
library (under Debian's 3.11.2, soupsieve installed by a 3.11.7 fails to parse `img:not([alt])`, and nbgrader's
generate_feedback with it). Make the course venv from the system's Python (`make PYTHON=/usr/bin/python3.11`) and
every process runs the one interpreter.
"""

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path


def runnable_by_all(path):
    """Whether every account can run `path`: the real file is executable by others and each folder above it is
    searchable by others."""
    real = Path(os.path.realpath(path))
    if not real.is_file() or not real.stat().st_mode & stat.S_IXOTH:
        return False
    return all(parent.stat().st_mode & stat.S_IXOTH for parent in real.parents)


def system_python(version=sys.version_info):
    """The system's Python of this version, if every account can run it."""
    for candidate in (f"/usr/bin/python{version[0]}.{version[1]}", f"/usr/local/bin/python{version[0]}.{version[1]}"):
        if runnable_by_all(candidate):
            return Path(candidate)
    return None


def accounts_python(venv_bin, where):
    """A python every account can run that imports what the course venv holds: the venv's own where it can."""
    venv_python = Path(venv_bin) / "python"
    if runnable_by_all(venv_python):
        return venv_python
    base = system_python()
    if base is None:
        raise SystemExit(f"Every account's JupyterLab runs the course's Python, but only root can run "
                         f"{os.path.realpath(venv_python)}, and there is no system Python "
                         f"{sys.version_info[0]}.{sys.version_info[1]} to use instead: make the venv from one every "
                         f"account runs (rm -rf .venv && make hub PYTHON=/usr/bin/python3.11).")
    print(f"perfaudit.hub: only root can run {os.path.realpath(venv_python)}; each account's JupyterLab runs "
          f"{base} over the course venv's packages instead ({where})", file=sys.stderr)
    where = Path(where)
    site = Path(sysconfig.get_path("purelib"))  # the course venv's site-packages
    thin_site = where / site.relative_to(sys.prefix)
    if not thin_site.is_symlink():
        shutil.rmtree(where, ignore_errors=True)
        subprocess.run([str(base), "-m", "venv", "--without-pip", str(where)], check=True)
        shutil.rmtree(thin_site)
        thin_site.symlink_to(site)
        for shared in ("share", "etc"):
            (where / shared).symlink_to(Path(sys.prefix) / shared)
    copy_commands(venv_python.parent, where / "bin")
    return where / "bin" / "python"


def copy_commands(venv_bin, thin_bin):
    """Each of the venv's console scripts (first line `#!<venv>/bin/python...`) into thin_bin, run by thin_bin's
    python: the same command, through an interpreter every account can run. Written again at each start (a pip
    install since may have added commands)."""
    venv_bin, thin_bin = Path(venv_bin), Path(thin_bin)
    for script in sorted(venv_bin.iterdir()):
        copy = thin_bin / script.name
        if script.name.startswith("python") or not script.is_file() or copy.is_symlink():
            continue
        with open(script, "rb") as read:
            first, rest = read.readline(), read.read()
        interpreter = first.removeprefix(b"#!").strip()
        if not first.startswith(b"#!") or Path(os.fsdecode(interpreter)).parent.resolve() != venv_bin.resolve():
            continue
        copy.unlink(missing_ok=True)
        copy.write_bytes(f"#!{thin_bin / 'python'}\n".encode() + rest)
        copy.chmod(0o755)
