"""Whether this account can run what the grading service runs, in one line for the instructor.

The service runs nbgrader in-process, and nbgrader runs the `alembic` command from PATH for a gradebook; it grades in
bubblewrap; it writes the gradebook, autograded/ and feedback/ in the course directory and reads the exchange's
inbound. On a hub it runs as the course's owner, whose rights can differ from root's (a venv whose Python only root
runs: `Permission denied: 'alembic'` on the first submission). `python -m perfaudit.serve --check` runs these as
the account it runs as; make hub runs it as the course's owner before the hub starts (perfaudit/hub/exchange.py),
and the service runs it at each start.
"""

import os
import shutil
import subprocess
from pathlib import Path

from perfaudit.autograde.isolation import sandbox
from perfaudit.bookkeeping.coursedir import venv_first_on_path

COMMANDS = ("alembic", "nbgrader")  # what nbgrader and the instructors' steps run from PATH
COMMAND_TIMEOUT_S = 120  # nbgrader --version imports nbgrader: seconds on a busy machine


def command_problem(name: str) -> str | None:
    """Why `name --version` does not run from PATH for this account, or None."""
    found = shutil.which(name)
    if found is None:
        return f"no `{name}` on PATH ({os.environ.get('PATH', '')})"
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"`{found}` does not run: {error}"
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return f"`{found} --version` failed ({done.returncode}): {said[-1] if said else 'no output'}"
    return None


def folder_problem(path: Path, access: int, what: str) -> str | None:
    """Why this account cannot use path (missing paths are made by the service: their folder counts)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    if os.access(path, access):
        return None
    return f"cannot {what} {path} (owner uid {path.stat().st_uid}, mode {oct(path.stat().st_mode & 0o7777)})"


def problems(course_dir: str | Path, writes: list[Path], inbound: Path, sandboxed: bool = True) -> list[str]:
    """What this account cannot do of the service's work: [] when it can grade."""
    venv_first_on_path()  # the PATH the service grades with
    found = [command_problem(name) for name in COMMANDS]
    found += [folder_problem(Path(course_dir), os.R_OK | os.W_OK | os.X_OK, "write the gradebook in")]
    found += [folder_problem(path, os.R_OK | os.W_OK | os.X_OK, "write in") for path in writes]
    found += [folder_problem(inbound, os.R_OK | os.X_OK, "read the submissions in")]
    usable, why = sandbox.available() if sandboxed else (True, "")
    if not usable and not sandbox.unsandboxed_allowed():
        found.append(f"no sandbox for student code ({why})")
    return [line for line in found if line]


def one_line(account: str, found: list[str]) -> str:
    return f"The grading service cannot grade as {account}: {'; '.join(found)}."
