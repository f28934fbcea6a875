"""Fixtures of the hub's tests that make Linux accounts."""

import os
import pwd
import secrets
import subprocess
from types import SimpleNamespace

import psutil
import pytest

from perfaudit.hub import servers


@pytest.fixture
def two_students():
    """Two Linux accounts of their own (the watchdog stops processes: none of another test's, nobody's)."""
    if os.geteuid() != 0:
        pytest.fail("makes Linux accounts: run it as root (CI does)")
    names = [f"pawd{secrets.token_hex(3)}{n}" for n in (1, 2)]
    for name in names:
        subprocess.run(["useradd", "--no-create-home", name], check=True)
    try:
        yield names
    finally:
        for name in names:
            left = servers.processes_of(pwd.getpwnam(name).pw_uid)  # this test's own, each by its id
            for process in left:
                process.kill()
            psutil.wait_procs(left, timeout=10)
            subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture
def hub():
    """This test's process as the hub: what it starts as a student, its own child under the account's uid and group
    (as LocalProcessSpawner starts a server), is that student's server (perfaudit/hub/servers.py)."""
    def start_server(account, argv):
        entry = pwd.getpwnam(account)
        return subprocess.Popen(argv, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd="/",
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    return SimpleNamespace(hub=servers.Hub(os.getpid()), start_server=start_server)
