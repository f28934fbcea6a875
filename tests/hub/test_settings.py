"""Where the hub's parts are (perfaudit/hub/settings.py): defaults for a class on this machine, the environment's."""

import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from traitlets.config.loader import PyFileConfigLoader

from perfaudit import paths
from perfaudit.hub import settings
from perfaudit.hub.server_limits import Limits


def test_with_nothing_set_every_part_has_its_default():
    hub = settings.from_environment({})
    assert (hub.course, hub.state, hub.exchange, hub.url) == (
        paths.ROOT.resolve(), (paths.ROOT / ".hub").resolve(), Path("/srv/nbgrader/exchange"), "http://:8000")
    assert (hub.hub_port, hub.proxy_api_port, hub.formgrader_port) == (8081, 8001, 9999)
    assert hub.serve_args == () and hub.grading is True and hub.venv_bin == Path(sys.executable).parent
    assert hub.limits == Limits(memory_bytes=2 * 2**30, processes=512)


def test_the_environment_changes_each_part(tmp_path):
    (tmp_path / "course").mkdir()
    (tmp_path / "state").symlink_to(tmp_path / "course")
    hub = settings.from_environment({
        "PERFAUDIT_HUB_COURSE": str(tmp_path / "course"), "PERFAUDIT_HUB_STATE": str(tmp_path / "state"),
        "PERFAUDIT_EXCHANGE": str(tmp_path / "exchange"), "PERFAUDIT_HUB_URL": "http://127.0.0.1:18000",
        "PERFAUDIT_HUB_PORTS": "18081,18001,19999", "PERFAUDIT_SERVE_ARGS": "--workers 2 --note 'two words'",
        "PERFAUDIT_HUB_GRADING": "off", "PERFAUDIT_HUB_MEMORY": "3G", "PERFAUDIT_HUB_PROCESSES": "100",
        "PERFAUDIT_HUB_EXCHANGE_SHARE": "300M", "PERFAUDIT_HUB_CPUS": "1.5"})
    assert hub.course == tmp_path / "course" and hub.state == tmp_path / "course"  # resolved
    assert (hub.exchange, hub.url) == (tmp_path / "exchange", "http://127.0.0.1:18000")
    assert (hub.hub_port, hub.proxy_api_port, hub.formgrader_port) == (18081, 18001, 19999)
    assert hub.serve_args == ("--workers", "2", "--note", "two words") and hub.grading is False
    assert hub.limits == Limits(memory_bytes=3 * 2**30, processes=100, exchange_bytes=300 * 2**20, cpus=1.5)


def test_grading_is_off_only_when_it_says_off():
    assert settings.from_environment({"PERFAUDIT_HUB_GRADING": "no"}).grading is True


def test_the_course_s_id_names_the_groups_and_its_folder_s_owner_runs_the_course():
    hub = settings.from_environment({})
    assert hub.course_id == "jax-performance-audit"
    assert hub.groups() == ("nbgrader-jax-performance-audit", "formgrade-jax-performance-audit")
    assert hub.owner == pwd.getpwuid(os.stat(paths.ROOT).st_uid)


def test_the_hubs_own_files_are_in_its_state_folder_never_the_course_directory(tmp_path, monkeypatch):
    # make hub starts jupyterhub in the course directory: a file left there by default (the proxy's pid) is
    # untracked clutter in the instructor's repository.
    monkeypatch.setenv("PERFAUDIT_HUB_STATE", str(tmp_path / "state"))
    config = PyFileConfigLoader("jupyterhub_config.py", path=str(paths.ROOT / "perfaudit" / "hub")).load_config()
    own_files = [config.JupyterHub.pid_file, config.ConfigurableHTTPProxy.pid_file,
                 config.JupyterHub.cookie_secret_file, config.JupyterHub.db_url.removeprefix("sqlite:///")]
    assert [Path(f).parent for f in own_files] == [tmp_path / "state"] * 4
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    # The database is the hub's alone, even in a state folder make hub-users made open (0755) before the hub ran.
    database = tmp_path / "state" / "jupyterhub.sqlite"
    database.chmod(0o644)
    (tmp_path / "state").chmod(0o755)
    PyFileConfigLoader("jupyterhub_config.py", path=str(paths.ROOT / "perfaudit" / "hub")).load_config()
    assert stat.S_IMODE(database.stat().st_mode) == 0o600


def test_each_person_s_server_starts_under_the_limits(monkeypatch):
    """What the hub spawns for each person: their server under prlimit and nice, everything it starts inheriting."""
    monkeypatch.setenv("PERFAUDIT_HUB_MEMORY", "1G")
    monkeypatch.setenv("PERFAUDIT_HUB_CPUS", "0.5")
    config = PyFileConfigLoader("jupyterhub_config.py", path=str(paths.ROOT / "perfaudit" / "hub")).load_config()
    command = config.Spawner.cmd
    assert command[:4] == [shutil.which("prlimit"), f"--as={2**30}", "--nproc=512", "--"], command
    assert command[4:7] == [shutil.which("nice"), "-n", "10"] and command[-2:] == ["-m", "jupyterhub.singleuser"]
    assert config.Spawner.mem_limit == 2**30 and config.Spawner.cpu_limit == 0.5  # the person's cgroups' limits


def test_the_limits_service_keeps_each_student_s_share_of_the_exchange(monkeypatch, tmp_path):
    """The hub's limits service (as root) watches the exchange with each student's share of it."""
    monkeypatch.setenv("PERFAUDIT_HUB_EXCHANGE_SHARE", "500M")
    monkeypatch.setenv("PERFAUDIT_EXCHANGE", str(tmp_path / "exchange"))
    config = PyFileConfigLoader("jupyterhub_config.py", path=str(paths.ROOT / "perfaudit" / "hub")).load_config()
    limits = next(service for service in config.JupyterHub.services if service["name"] == "limits")
    command = limits["command"]
    assert command[command.index("--exchange"):][:4] == ["--exchange", str(tmp_path / "exchange"), "--disk",
                                                         str(500 * 2**20)]
    # The config runs in the hub's process: the servers are that process's children (perfaudit/hub/servers.py).
    assert command[command.index("--hub-pid") + 1] == str(os.getpid())
    grading = next(service for service in config.JupyterHub.services if service["name"] == "grading")
    notes = command[command.index("--limits-notes") + 1]  # where the stops are left, and read for the students
    assert grading["command"][grading["command"].index("--limits-notes") + 1] == notes
    assert "user" not in limits  # root's: it stops other accounts' processes


def test_the_hub_refuses_a_state_folder_another_account_may_write(tmp_path, monkeypatch):
    state = tmp_path / "state"
    state.mkdir()
    os.chown(state, pwd.getpwnam("nobody").pw_uid, -1)  # the course's owner's, say: a link there, and root writes
    monkeypatch.setenv("PERFAUDIT_HUB_STATE", str(state))
    with pytest.raises(SystemExit, match=f"refused: the hub's state folder {state} belongs to nobody"):
        PyFileConfigLoader("jupyterhub_config.py", path=str(paths.ROOT / "perfaudit" / "hub")).load_config()
    assert list(state.iterdir()) == []


def _server(tmp_path, args):
    """A Jupyter server as the hub starts a person's (its limits on request bodies given or not), and its port."""
    from chromium import free_port  # a test helper's, as the browser tests find a port

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "jupyter_server", f"--ServerApp.port={port}",
                               "--ServerApp.token=the-owner-s", "--ServerApp.open_browser=False",
                               f"--ServerApp.root_dir={tmp_path}", "--allow-root", *args],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, port
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise AssertionError("the server did not listen")


def _upload_without_a_token(port, size):
    """Bytes of a `size`-byte body the server took before it answered or closed the connection."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(f"PUT /api/contents/big.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {size}\r\n"
                           "Content-Type: application/json\r\n\r\n".encode())
        chunk = b"x" * 2**20
        try:
            while sent < size:
                connection.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass  # closed on us
    return sent


@pytest.mark.parametrize("bounded", [True, False], ids=["the hub's limit", "tornado's default"])
def test_a_classmate_s_request_body_is_refused_before_it_is_held(tmp_path, bounded):
    """An unauthenticated 256 MiB upload to a person's server: the server held it whole before it read the token
    (a classmate's took a server to 1.5 GB, memory its owner is charged with). With the hub's limit the server closes
    the connection first: what it takes is far below the body."""
    size = 256 * 2**20
    server, port = _server(tmp_path, settings.BOUNDED_REQUESTS if bounded else [])
    try:
        taken = _upload_without_a_token(port, size)
    finally:
        server.kill()
        server.wait()
    assert (taken < size // 2) is bounded, f"{taken} of {size} bytes sent before the server closed"


def test_the_hub_serves_https_with_the_certificate_named_and_per_person_domains(monkeypatch):
    """A held-out walk served HTTPS by editing jupyterhub_config.py, a file of the course's repository that a later
    git pull conflicts with: PERFAUDIT_HUB_TLS names the certificate and its key instead."""
    monkeypatch.setenv("PERFAUDIT_HUB_TLS", "/etc/ssl/hub/cert.pem, /etc/ssl/hub/key.pem")
    monkeypatch.setenv("PERFAUDIT_HUB_DOMAIN", "https://hub.example.edu")
    config = PyFileConfigLoader("jupyterhub_config.py", path=str(paths.ROOT / "perfaudit" / "hub")).load_config()
    assert (config.JupyterHub.ssl_cert, config.JupyterHub.ssl_key) == ("/etc/ssl/hub/cert.pem", "/etc/ssl/hub/key.pem")
    assert config.JupyterHub.subdomain_host == "https://hub.example.edu"
    assert config.JupyterHub.cookie_host_prefix_enabled is True
    monkeypatch.setenv("PERFAUDIT_HUB_TLS", "/etc/ssl/hub/cert.pem")
    with pytest.raises(SystemExit, match="expected the certificate's and the key's paths"):
        settings.from_environment()
