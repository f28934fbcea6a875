"""Fixtures of the grading tests: a real PostgreSQL server for a gradebook elsewhere.

Debian's postgresql package provides the server (.ci/run installs it). The server runs from a temporary
data directory on a free port, as the `postgres` user when the tests run as root (initdb refuses root).
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile

import pytest


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_server_user(args):
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture(scope="module")
def postgres_url():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    assert found, "PostgreSQL server binaries not found: install Debian's postgresql package (see .ci/run)"
    bin_dir = os.path.dirname(found[-1])
    data = tempfile.mkdtemp(prefix="perfaudit-pg-")
    if os.geteuid() == 0:
        shutil.chown(data, "postgres")
    port = _free_port()
    subprocess.run(
        _as_server_user([f"{bin_dir}/initdb", "-D", data, "-A", "trust", "-U", "postgres"]),
        check=True, capture_output=True,
    )
    subprocess.run(_as_server_user([
        f"{bin_dir}/pg_ctl", "-D", data, "-l", f"{data}/server.log", "-w", "start",
        "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1",
    ]), check=True, capture_output=True)
    try:
        subprocess.run(
            [f"{bin_dir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "gradebook"],
            check=True, capture_output=True,
        )
        yield f"postgresql://postgres@127.0.0.1:{port}/gradebook"
    finally:
        stop = [f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]
        subprocess.run(_as_server_user(stop), capture_output=True)
        shutil.rmtree(data, ignore_errors=True)
