"""A person's server answers only the hub's proxy (root) and its own account (perfaudit/hub/peer_guard.py): the
socket table names the account at the other end of each connection, and a Jupyter server with the extension closes
a classmate's connection before reading a byte of it, a request's body included; without the extension the same
request is read and answered (what a classmate's floods used). The server here is root's (the course venv may be
root's alone): root is the proxy's account and the server's own at once."""

import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from perfaudit.hub import peer_guard, settings

PYTHON = "/usr/bin/python3.11"  # a Python every account runs: the students' side needs the standard library alone
START_S = 120  # a Jupyter server's start on two busy cores
# As an account: connect to the port, send a request (or the start of a large body), say what came back.
ASK = """
import socket, sys
port, body = int(sys.argv[1]), int(sys.argv[2])
head = (f"POST /api/contents/x HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Length: {body}\\r\\n\\r\\n" if body
        else "GET /api HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
    try:
        s.sendall(head.encode())
        for _ in range(body // 2**20):
            s.sendall(b"x" * 2**20)
        if body:
            s.sendall(b"x" * (body % 2**20))
        print(s.recv(64).decode(errors="replace").split("\\r\\n")[0] or "closed")
    except (BrokenPipeError, ConnectionResetError):
        print("closed")
"""


def as_account(account, *args):
    entry = pwd.getpwnam(account)
    done = subprocess.run([PYTHON, "-c", *args], user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_socket_table_names_each_connection_s_account(two_students):
    student, _ = two_students
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(2)
        port = listening.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):
            accepted, _ = listening.accept()
            with accepted:
                assert peer_guard.peer_uid(accepted) == os.getuid()
        client = subprocess.Popen([PYTHON, "-c", f"import socket, time; s = socket.create_connection(('127.0.0.1', "
                                   f"{port})); time.sleep(30)"], user=pwd.getpwnam(student).pw_uid)
        try:
            accepted, _ = listening.accept()
            with accepted:
                assert peer_guard.peer_uid(accepted) == pwd.getpwnam(student).pw_uid
        finally:
            client.kill()
            client.wait()
    left, right = socket.socketpair()
    with left, right:
        assert peer_guard.peer_uid(left) == os.getuid()
    peer_guard.check_the_table_answers()


def test_a_classmate_s_connection_closed_before_it_is_looked_up_is_refused_not_taken_for_root_s(two_students):
    """Closed by its owner, the other end stays in the table a while with uid 0, as if root's: only an open one
    counts."""
    classmate = pwd.getpwnam(two_students[0]).pw_uid
    served, refused = [], []
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        subprocess.run([PYTHON, "-c", "import socket; socket.create_connection(('127.0.0.1', "
                        f"{listening.getsockname()[1]})).close()"], user=classmate, check=True)
        time.sleep(0.2)
        accepted, address = listening.accept()
        peer_guard.guarded(lambda c, a: served.append(a), frozenset({0}), refused.append)(accepted, address)
    assert served == [] and refused == [None] and accepted.fileno() == -1


def start_server(port, guarded):
    """A Jupyter server of this process's account, on `port`, with the extension or without."""
    home = Path(tempfile.mkdtemp(prefix="guard-"))
    extensions = [settings.GUARDED_PEERS] if guarded else []
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1", "--no-browser", "--allow-root",
         "--IdentityProvider.token=not-a-classmate-s", f"--ServerApp.root_dir={home}", *extensions,
         *settings.BOUNDED_REQUESTS],
        cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={"PATH": os.environ["PATH"], "HOME": str(home), "JUPYTER_RUNTIME_DIR": str(home / "runtime")})
    started = time.monotonic()
    while time.monotonic() - started < START_S:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, home
        except OSError:
            assert server.poll() is None, server.stderr.read()
            time.sleep(0.5)
    server.kill()
    pytest.fail(f"the server did not listen within {START_S} s: {server.stderr.read()}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ask_as_root(port):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as root:
        root.sendall(b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        return root.recv(64).decode().split("\r\n")[0]


@pytest.mark.slow  # two Jupyter servers started
def test_a_classmate_s_connection_is_closed_unread_and_root_is_answered(two_students):
    classmate, _ = two_students
    for guarded in (True, False):
        port = free_port()
        server, home = start_server(port, guarded)
        try:
            asked = as_account(classmate, ASK, str(port), "0")
            flooded = as_account(classmate, ASK, str(port), str(48 * 2**20))  # within the server's body limit
            assert ask_as_root(port).startswith("HTTP/1.1 ")
            if guarded:
                assert asked == "closed" and flooded == "closed", (asked, flooded)
            else:  # what the extension stops: the classmate's request, its whole body, read and answered
                assert asked.startswith("HTTP/1.1 ") and flooded.startswith("HTTP/1.1 "), (asked, flooded)
        finally:
            server.kill()
            server.wait()
            shutil.rmtree(home, ignore_errors=True)
        if guarded:
            assert "Closed a connection from uid" in server.stderr.read()


def test_the_server_s_own_account_is_served_and_a_classmate_is_not(two_students):
    """guarded's choice, by the account at the other end: the owner's terminal is served, a classmate closed."""
    owner, classmate = (pwd.getpwnam(name).pw_uid for name in two_students)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(2)
        for uid, served in ((owner, True), (classmate, False)):
            client = subprocess.Popen([PYTHON, "-c", "import socket, sys, time; s = socket.create_connection("
                                       f"('127.0.0.1', {listening.getsockname()[1]})); time.sleep(30)"], user=uid)
            try:
                handled, refused = [], []
                accepted, address = listening.accept()
                peer_guard.guarded(lambda c, a: handled.append(c), frozenset({0, owner}), refused.append)(accepted,
                                                                                                      address)
                assert (handled == [accepted], refused) == ((True, []) if served else (False, [uid]))
                accepted.close()
            finally:
                client.kill()
                client.wait()
