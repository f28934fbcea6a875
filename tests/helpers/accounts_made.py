"""Linux accounts a test makes for itself, as a grading service's owner is made: useradd, with the subordinate ids
the grading sandbox runs as when the grader is not root (perfaudit/autograde/isolation/sandbox.py)."""

import contextlib
import secrets
import subprocess
from pathlib import Path


def give_subordinate_ids(name):
    """useradd gives a new account 65536 subordinate ids where login.defs says so (Debian's does); elsewhere the test
    gives them, past every range given already."""
    for path, flag in (("/etc/subuid", "--add-subuids"), ("/etc/subgid", "--add-subgids")):
        lines = Path(path).read_text().splitlines() if Path(path).exists() else []
        if any(line.split(":")[0] == name for line in lines):
            continue
        start = max([100000] + [int(f[1]) + int(f[2]) for f in (line.split(":") for line in lines) if len(f) == 3])
        subprocess.run(["usermod", flag, f"{start}-{start + 65535}", name], check=True)


@contextlib.contextmanager
def grading_account(prefix="pagrader"):
    """A fresh account with a home and subordinate ids, removed afterwards: its name."""
    name = f"{prefix}{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--create-home", "--user-group", name], check=True)
    try:
        give_subordinate_ids(name)
        yield name
    finally:
        subprocess.run(["userdel", "--remove", name], capture_output=True)
