"""Each person's server in a memory group of their own (perfaudit/hub/memory_group.py), as the hub's spawner starts it:
memory hidden from every process (memfds whose only descriptors wait in a unix socket's queue) counts against that
person's limit, and past it the kernel stops their process, not a classmate's. Real processes, real accounts, the
machine's own memory cgroups."""

import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from perfaudit.hub import memory_group
from perfaudit.hub.namespace_guard import GuardedSpawner

PYTHON = "/usr/bin/python3.11"
MB = 2**20
# The fresh attacker's way: memfds written, each sent into a socket pair's queue and closed, never received. No
# process holds them (the watchdog's counts miss them: its resident set stays small), the machine's memory does.
HIDES = r"""
import os, socket, sys, time
a, b = socket.socketpair()
for i in range(int(sys.argv[1])):
    fd = os.memfd_create(f"hidden{i}")
    os.write(fd, b"\1" * (64 << 20))
    socket.send_fds(a, [b"x"], [fd])
    os.close(fd)
print("held", flush=True)
"""
# A classmate's work, under the same limit: 96 MB of its own, for a moment.
WORKS = "import sys; block = bytearray(96 << 20); block[::4096] = b'\\1' * len(block[::4096]); print('done')"


@pytest.fixture
def groups():
    """The machine's hierarchy, and the groups made in it removed after the test."""
    found = memory_group.hierarchy()
    yield found
    if found is not None:
        for account in ("nobody", "daemon"):
            group = found.folder / memory_group.HUB_GROUP / account
            if group.exists():
                group.rmdir()
        if not any((found.folder / memory_group.HUB_GROUP).glob("*/")):
            (found.folder / memory_group.HUB_GROUP).rmdir()  # the tests' own, where no hub made it before


def spawned(spawner, account, code, *argv):
    return subprocess.run([PYTHON, "-c", code, *argv], preexec_fn=spawner.make_preexec_fn(account), cwd="/",
                          capture_output=True, text=True, timeout=120)


def test_memory_no_process_holds_stops_its_owner_alone_past_their_limit(groups):
    spawner = GuardedSpawner()
    spawner.mem_limit = 192 * MB
    if groups is None:  # no memory cgroup root may make: servers start as before, under rlimits and the watchdog
        assert memory_group.prepare("nobody", 192 * MB) is None
        assert spawned(spawner, "nobody", WORKS).stdout == "done\n"
        return
    assert spawned(spawner, "nobody", HIDES, "1").stdout == "held\n"  # 64 MB hidden: under the limit, it runs
    hidden = spawned(spawner, "nobody", HIDES, "8")  # 512 MB hidden, unseen by any process's counts
    assert hidden.returncode == -signal.SIGKILL and "held" not in hidden.stdout, hidden
    group = groups.folder / memory_group.HUB_GROUP / "nobody"
    limit = (group / groups.limit_file()).read_text().strip()
    assert limit == str(192 * MB)
    classmate = spawned(spawner, "daemon", WORKS)
    assert classmate.returncode == 0 and classmate.stdout == "done\n", classmate  # their group, their own limit


def test_an_account_name_is_one_folder_never_a_path(tmp_path):
    fake = memory_group.Hierarchy(tmp_path, 1)
    for name in ("../escape", "a/b", "", "Root", "x" * 40):
        with pytest.raises(ValueError, match="not an account name"):
            memory_group.prepare(name, MB, fake)
    made = memory_group.prepare("ada", MB, fake)
    assert made == tmp_path / memory_group.HUB_GROUP / "ada" and (made / "memory.limit_in_bytes").read_text() == str(MB)


def test_the_hierarchy_is_read_from_the_process_s_mounts_and_groups(tmp_path):
    """v1's memory controller where it is mounted; a v2 group only where its parent hands the controller down; none
    where the group is outside what is mounted."""
    proc, v1 = tmp_path / "proc", tmp_path / "v1"
    group = v1 / "jobs" / "hub"
    group.mkdir(parents=True)
    (group / "memory.limit_in_bytes").write_text("max")
    proc.mkdir()
    (proc / "mountinfo").write_text(
        f"30 25 0:26 / {v1} rw,relatime shared:9 - cgroup cgroup rw,memory\n"
        f"31 25 0:27 / {tmp_path / 'v2'} rw - cgroup2 cgroup2 rw\n")
    (proc / "cgroup").write_text("4:memory:/jobs/hub\n0::/jobs/hub\n")
    assert memory_group.hierarchy(proc) == memory_group.Hierarchy(group, 1)
    (proc / "cgroup").write_text("4:memory:/elsewhere/hub\n0::/jobs/hub\n")
    assert memory_group.hierarchy(proc) is None
    v2 = tmp_path / "v2" / "jobs" / "hub"
    v2.mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    (v2 / "cgroup.subtree_control").write_text("cpu\n")
    assert memory_group.hierarchy(proc) is None  # memory not handed down to the hub's children
    (v2 / "cgroup.subtree_control").write_text("cpu memory\n")
    assert memory_group.hierarchy(proc) == memory_group.Hierarchy(v2, 2)
    shutil.rmtree(v1)
    assert memory_group.hierarchy(Path(tmp_path / "no-such-proc")) is None
