"""Waiting for a hub a test started (make hub's jupyterhub, or docs/hub.md's `sudo make hub`): its API answers."""

import time
import urllib.request

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
