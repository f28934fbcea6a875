"""Headless Chromium (Debian's, never a downloaded browser) and the Jupyter servers the browser tests open in it.

The fixtures `browser` and `artifacts` are in tests/conftest.py; every browser test starts its server with
started_server (JupyterLab as `make lab` starts it, Formgrader, a student's machine).
"""

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

CHROMIUM = Path(os.environ.get("PERFAUDIT_CHROMIUM", "/usr/bin/chromium"))
# A closed network: nothing in the background, no updates, no first-run or sync; a fresh profile per run.
CHROMIUM_ARGS = [
    "--no-sandbox",  # needed when running as root (CI)
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
# Generous: two cores shared with other work; a notebook run includes a kernel start and JAX compiles.
STARTUP_S = 120
UI_MS = 60_000

# JupyterLab settings for the test: every cell stays in the page (no windowing), timings are recorded in the
# saved notebook, and no "Jupyter news" prompt covers the notebook.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none", "recordTiming": True},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False,
    },
}


@dataclass
class Lab:
    url: str
    token: str
    root: Path  # the server's root: work/ of the temporary course for `make lab`'s
    said: str | None = None  # what `make lab` told the student before JupyterLab started

    def api(self, method, path):
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _still_running(process) -> psutil.Process | None:
    """process as psutil sees it, or None where it has already gone (it may go between any two looks)."""
    try:
        return psutil.Process(process.pid)
    except psutil.NoSuchProcess:
        return None


def stop_process_tree(process):
    """Terminate JupyterLab and everything it started (kernels run in their own sessions)."""
    try:
        tree = [process, *psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for p in tree:
        try:
            p.terminate()
        except (psutil.NoSuchProcess, ProcessLookupError):
            pass
    _, alive = psutil.wait_procs([q for q in map(_still_running, tree) if q is not None], timeout=20)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # anything left in JupyterLab's own process group
    except ProcessLookupError:
        pass
    process.wait(timeout=20)


@contextlib.contextmanager
def started_server(argv, env, cwd, home, root, said=None):
    """A Jupyter server, argv (`jupyter lab ...`) with loopback, a free port and a token added (as root,
    --allow-root), run in cwd with env; JupyterLab's settings (LAB_SETTINGS), workspaces and runtime files in home.
    Yields a Lab once the server answers; stops it and everything it started (kernels) after."""
    for name, settings in LAB_SETTINGS.items():
        (home / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
        (home / "settings" / name).write_text(json.dumps(settings))

    port, token = free_port(), secrets.token_hex(24)
    argv = [*argv, "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0"]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    env = {
        **env,
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
    }
    log_path = home / "jupyterlab.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    running = Lab(f"http://127.0.0.1:{port}", token, Path(root), said)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                running.api("GET", "/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer within {STARTUP_S} s:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.25)
        yield running
    finally:
        stop_process_tree(process)
