"""The grading service's launcher (perfaudit/hub/own_network.py), run as root as the hub runs it: the command runs
as the course's owner in a network namespace of its own, whose loopback ports no process outside reaches; and root
runs nothing of the course's to get there. Real processes, a real namespace, a real account (nobody)."""

import json
import os
import pwd
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from perfaudit.hub import own_network

PYTHON = "/usr/bin/python3.11"
# Run by the launcher: who it is, where, and a listening port on its loopback; it then reports whether anything
# reached that port while the test tried it from outside.
PROBE = r"""
import json, os, pwd, socket, sys
listener = socket.create_server(("127.0.0.1", 0))
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "groups": sorted(os.getgroups()), "net": os.readlink(
    "/proc/self/ns/net"), "home": os.environ["HOME"], "user": os.environ["USER"], "port": listener.getsockname()[1]}),
    flush=True)
sys.stdin.readline()  # the test has tried the port
listener.settimeout(0.5)
try:
    listener.accept()
    print("reached", flush=True)
except OSError:
    print("not reached", flush=True)
"""


def hub(owner="nobody", serve_args=()):
    return SimpleNamespace(owner=pwd.getpwnam(owner), serve_args=serve_args)


@pytest.mark.skipif(os.geteuid() != 0, reason="the hub runs the launcher as root; only root makes the namespace")
def test_the_service_runs_as_its_owner_where_no_other_process_reaches_its_ports(tmp_path):
    argv = own_network.command(hub(), [PYTHON, "-c", PROBE])
    assert argv is not None and argv[1:4] == ["-I", "-S", "-c"]  # isolated: nothing of the course's, no site
    started = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd="/")
    seen = json.loads(started.stdout.readline())
    nobody = pwd.getpwnam("nobody")
    assert (seen["uid"], seen["gid"], seen["home"], seen["user"]) == (nobody.pw_uid, nobody.pw_gid, nobody.pw_dir,
                                                                      "nobody")
    assert seen["groups"] == sorted(os.getgrouplist("nobody", nobody.pw_gid))
    assert seen["net"] != os.readlink("/proc/self/ns/net")  # a namespace of its own, its loopback up (it listens)
    try:  # from the machine's loopback, as any account would: its port is not there
        socket.create_connection(("127.0.0.1", seen["port"]), timeout=2).close()
    except OSError:
        pass
    out, err = started.communicate("\n", timeout=30)
    assert out == "not reached\n" and started.returncode == 0, err


@pytest.mark.skipif(os.geteuid() != 0, reason="the hub runs the launcher as root")
def test_root_imports_nothing_from_the_course_or_the_environment_on_the_way(tmp_path):
    """Run from a folder the course's owner writes, with PYTHONPATH there too: modules named as the launcher's
    imports are never imported (root would run them at each restart of the service)."""
    marker = tmp_path / "imported"
    for name in ("ctypes", "socket", "fcntl", "pwd", "struct", "sitecustomize"):
        (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    argv = own_network.command(hub(), [PYTHON, "-I", "-c", "print('ran')"])
    done = subprocess.run(argv, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    assert done.stdout == "ran\n", done.stderr
    assert not marker.exists(), marker.read_text()


def test_the_service_keeps_the_machine_s_network_where_it_needs_it_or_root_would_run_the_course_s_code(
        tmp_path, monkeypatch):
    assert own_network.command(hub(serve_args=("--scheduler", "tls://10.0.0.2:8786")), ["serve"]) is None
    assert own_network.command(hub(owner="root"), ["serve"]) is None  # make hub refuses such a course anyway
    writable = tmp_path / "python"
    writable.write_bytes(Path(PYTHON).read_bytes())
    writable.chmod(0o777)  # an interpreter another account may change: never run as root
    monkeypatch.setattr(sys, "_base_executable", str(writable))
    assert own_network.interpreter() is None
    monkeypatch.setattr(sys, "_base_executable", PYTHON)
    assert own_network.interpreter() == os.path.realpath(PYTHON)
