"""A hub a test started (make hub's jupyterhub, or docs/hub.md's `sudo make hub`): waiting until its API answers,
and, once it is stopped, whether it left a port listening."""

import time
import urllib.request

import psutil
import pytest


def wait_for_hub(url, process, log, timeout_s, what="jupyterhub"):
    """Until the hub at url answers on its API; the test fails with the end of its log when `process` exits first
    or timeout_s pass."""
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}/hub/api", timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"the hub did not answer within {timeout_s} s:\n{log.read_text()[-4000:]}")
            time.sleep(1)


def left_listening(port, the_hub_s):
    """Whether a process the hub started still listens on port: the_hub_s(process) says which are (the test's
    accounts, the hub's environment). The ports were free ones of the ephemeral range, so another test's process
    (a Dask scheduler, a kernel's) may take one once the hub let it go: that is no process the hub left. A socket the
    table shows with no process counts as the hub's: nothing tells it apart."""
    for connection in psutil.net_connections("tcp"):
        if not (connection.laddr and connection.laddr.port == port and connection.status == psutil.CONN_LISTEN):
            continue
        if connection.pid is None:
            return True
        try:
            if the_hub_s(psutil.Process(connection.pid)):
                return True
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return False
