"""The hub's spawner (perfaudit/hub/namespace_guard.py): a server it starts makes no user namespace, nor does anything
the server starts; threads, subprocesses and setuid programs work as before. Real processes, as a real account."""

import subprocess

import pytest
from jupyterhub.spawner import LocalProcessSpawner

from perfaudit.hub import namespace_guard
from perfaudit.hub.namespace_guard import GuardedSpawner

PYTHON = "/usr/bin/python3.11"  # a Python every account runs: the student's side needs the standard library alone
# What a student's kernel would try, each line a finding: its status, two ways into a namespace of its own where a
# tmpfs holds memory no process of theirs does (unshare(2), and clone(2) through bubblewrap), then everyday work.
TRIES = r"""
import os, subprocess, threading
status = dict(line.split(":\t") for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
print("seccomp", status["Seccomp"].strip(), "no_new_privs", status["NoNewPrivs"].strip())
for name, argv in (("unshare", ["unshare", "-Urm", "sh", "-c", "mount -t tmpfs none /mnt && echo mounted"]),
                   ("unshare-ipc", ["unshare", "-Uri", "true"]),
                   ("clone", ["bwrap", "--unshare-user", "--ro-bind", "/", "/", "true"])):
    done = subprocess.run(argv, capture_output=True, text=True)
    print(name, done.returncode, (done.stdout + done.stderr).strip().replace("\n", " "))
seen = []
thread = threading.Thread(target=seen.append, args=["thread"])
thread.start(); thread.join()
print(*seen, subprocess.run(["echo", "child"], capture_output=True, text=True).stdout.strip(),
      "spawned", os.waitpid(os.posix_spawn("/bin/true", ["true"], {}), 0)[1])
# Reaching into a process of one's own: a copy of its descriptor 0 (pidfd_getfd), as a held-out attacker took their
# server's listening socket. 434: pidfd_open, 438: pidfd_getfd, the same numbers on x86_64 and aarch64.
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
child = subprocess.Popen(["sleep", "30"])
pidfd = libc.syscall(434, child.pid, 0)
print("pidfd_getfd", libc.syscall(438, pidfd, 0, 0), os.strerror(ctypes.get_errno()))
child.kill()
"""


def started(preexec):
    done = subprocess.run([PYTHON, "-c", TRIES], preexec_fn=preexec, cwd="/", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(line.split(" ", 1) for line in done.stdout.splitlines())


def test_a_server_the_hub_starts_makes_no_user_namespace_and_works_as_before():
    """Without the filter (LocalProcessSpawner's own switch to the account) the student mounts a tmpfs in a user
    namespace of their own: the hole is real here. With it, every way in is refused, and the rest works."""
    plain = started(LocalProcessSpawner().make_preexec_fn("nobody"))
    assert plain["unshare"] == "0 mounted" and plain["unshare-ipc"].startswith("0") and plain["clone"] == "0 ", plain
    found = started(GuardedSpawner().make_preexec_fn("nobody"))
    assert found["seccomp"] == "2 no_new_privs 0", found  # a filter, and setuid programs (passwd) still work
    for name, refused in (("unshare", "Operation not permitted"), ("unshare-ipc", "Operation not permitted"),
                          ("clone", "No permissions to create new namespace")):  # bubblewrap's words for EPERM
        assert found[name].startswith("1 ") and refused in found[name], found
    assert found["thread"] == "child spawned 0", found  # clone3 answered ENOSYS: the C library used clone
    assert not plain["pidfd_getfd"].startswith("-1") and found["pidfd_getfd"] == "-1 Operation not permitted", found


def test_an_architecture_without_a_filter_starts_no_server():
    with pytest.raises(namespace_guard.NoFilterHere, match="starts no server without it"):
        namespace_guard.installer("riscv64")
