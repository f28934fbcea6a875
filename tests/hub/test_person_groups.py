"""Each person's server in cgroups of their own (perfaudit/hub/person_groups.py), as the hub's spawner starts it:
memory hidden from every process (memfds whose only descriptors wait in a unix socket's queue) counts against that
person's limit, and past it the kernel stops their process, not a classmate's; the CPU is shared between people, not
processes, and a cap holds. Real processes, real accounts, the machine's own cgroups."""

import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from perfaudit.hub import person_groups
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
# Busy processes (argv[1] of them, each for argv[2] s of the clock); prints the CPU seconds they took in all.
SPINS = r"""
import os, resource, sys, time
for _ in range(int(sys.argv[1])):
    if os.fork() == 0:
        end = time.monotonic() + float(sys.argv[2])
        while time.monotonic() < end:
            pass
        os._exit(0)
for _ in range(int(sys.argv[1])):
    os.wait()
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(used.ru_utime + used.ru_stime)
"""


@pytest.fixture
def groups():
    """The machine's hierarchy, and the groups made in it removed after the test."""
    found = {controller: h for h in person_groups.hierarchies() for controller in h.controllers}
    yield found
    for hierarchy in set(found.values()):
        for account in ("nobody", "daemon"):
            group = hierarchy.folder / person_groups.HUB_GROUP / account
            if group.exists():
                group.rmdir()
        if not any((hierarchy.folder / person_groups.HUB_GROUP).glob("*/")):
            (hierarchy.folder / person_groups.HUB_GROUP).rmdir()  # the tests' own, where no hub made it before


def started(spawner, account, code, *argv):
    return subprocess.Popen([PYTHON, "-c", code, *argv], preexec_fn=spawner.make_preexec_fn(account), cwd="/",
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def spawned(spawner, account, code, *argv):
    process = started(spawner, account, code, *argv)
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.xdist_group("person-groups")
def test_memory_no_process_holds_stops_its_owner_alone_past_their_limit(groups):
    spawner = GuardedSpawner()
    spawner.mem_limit = 192 * MB
    if "memory" not in groups:  # no memory cgroup root may make: servers start under rlimits and the watchdog alone
        assert spawned(spawner, "nobody", WORKS).stdout == "done\n"
        return
    assert spawned(spawner, "nobody", HIDES, "1").stdout == "held\n"  # 64 MB hidden: under the limit, it runs
    hidden = spawned(spawner, "nobody", HIDES, "8")  # 512 MB hidden, unseen by any process's counts
    assert hidden.returncode == -signal.SIGKILL and "held" not in hidden.stdout, hidden
    memory = groups["memory"]
    group = memory.folder / person_groups.HUB_GROUP / "nobody"
    limit = (group / ("memory.limit_in_bytes" if memory.version == 1 else "memory.max")).read_text().strip()
    assert limit == str(192 * MB)
    classmate = spawned(spawner, "daemon", WORKS)
    assert classmate.returncode == 0 and classmate.stdout == "done\n", classmate  # their group, their own limit


def cpu_seconds(*people, seconds=3.0):
    """The CPU seconds each person's busy processes take side by side: (spawner, account, processes) each."""
    running = [started(spawner, account, SPINS, str(count), str(seconds)) for spawner, account, count in people]
    return [float(process.communicate(timeout=120)[0]) for process in running]


def throttled(group):
    """How many times the kernel stopped a group's threads for the rest of a period, its CPU cap used."""
    stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
    return int(stat["nr_throttled"])


@pytest.mark.xdist_group("person-groups")  # the same accounts' groups: one test at a time
def test_the_cpu_is_shared_between_people_and_a_cap_holds(groups):
    """Six busy processes against a classmate's one: with a CPU group each, the classmate gets about what the six
    get together (nice alone would give them a seventh: measured 0.17x); a person capped at 5 % of a CPU is stopped
    by the kernel each period their quota runs out, and gets no more. Relations measured side by side, and the
    kernel's own count of the stops, which stays 0 without a cap."""
    if "cpu" not in groups:  # no CPU cgroup root may make: nice 10 alone, which shares by process
        return
    fair, capped = GuardedSpawner(), GuardedSpawner()
    capped.cpu_limit = 0.05
    many, one = cpu_seconds((fair, "nobody", 6), (fair, "daemon", 1))
    assert one >= 0.6 * many, (one, many)
    cpu = groups["cpu"]
    group = cpu.folder / person_groups.HUB_GROUP / "nobody"
    quota = group / ("cpu.cfs_quota_us" if cpu.version == 1 else "cpu.max")
    assert quota.read_text().split()[0] in ("-1", "max") and throttled(group) == 0
    [two] = cpu_seconds((capped, "nobody", 2))
    assert quota.read_text().split()[0] == "5000"
    assert throttled(group) > 0
    assert two <= 0.05 * 3.0 * 2, two  # 0.15 s of CPU in 3 s at most, twice that for the edges of periods


def test_an_account_name_is_one_folder_never_a_path(tmp_path):
    fake = [person_groups.Hierarchy(tmp_path, 1, ("memory",))]
    for name in ("../escape", "a/b", "", "Root", "x" * 40):
        with pytest.raises(ValueError, match="not an account name"):
            person_groups.prepare(name, person_groups.GroupLimits(MB), fake)
    made = person_groups.prepare("ada", person_groups.GroupLimits(MB), fake)
    assert made == [tmp_path / person_groups.HUB_GROUP / "ada"]
    assert (made[0] / "memory.limit_in_bytes").read_text() == str(MB)


def test_each_hierarchy_gets_the_limits_its_controllers_take(tmp_path):
    """v1: a memory limit, a CPU weight and quota, each in its own hierarchy; v2: both in one group, handed down by
    the hub's group, swap closed where there is swap accounting."""
    v1 = [person_groups.Hierarchy(tmp_path / "memory", 1, ("memory",)),
          person_groups.Hierarchy(tmp_path / "cpu", 1, ("cpu",))]
    for hierarchy in v1:
        hierarchy.folder.mkdir()
    limits = person_groups.GroupLimits(MB, 0.5)
    made = person_groups.prepare("ada", limits, v1)
    assert sorted(path.name for path in made[0].iterdir()) == ["memory.limit_in_bytes"]
    assert {path.name: path.read_text() for path in made[1].iterdir()} == {
        "cpu.shares": "1024", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000"}
    person_groups.prepare("ada", person_groups.GroupLimits(MB), v1)
    assert (made[1] / "cpu.cfs_quota_us").read_text() == "-1"  # the cap taken away at the next start
    v2 = [person_groups.Hierarchy(tmp_path / "v2", 2, ("memory", "cpu"))]
    v2[0].folder.mkdir()
    [group] = person_groups.prepare("ada", limits, v2)
    assert (group.parent / "cgroup.subtree_control").read_text() == "+memory +cpu"
    assert {path.name: path.read_text() for path in group.iterdir()} == {
        "memory.max": str(MB), "cpu.weight": "100", "cpu.max": "50000 100000"}
    (group / "memory.swap.max").write_text("max")  # where the kernel has swap accounting
    person_groups.prepare("ada", limits, v2)
    assert (group / "memory.swap.max").read_text() == "0"


def test_the_hierarchies_are_read_from_the_process_s_mounts_and_groups(tmp_path):
    """v1's memory and cpu controllers where they are mounted; a v2 group's controllers only where its parent hands
    them down; none where the group is outside what is mounted."""
    proc, v1 = tmp_path / "proc", tmp_path / "v1"
    group, cpu = v1 / "jobs" / "hub", tmp_path / "v1cpu" / "hub"
    group.mkdir(parents=True)
    cpu.mkdir(parents=True)
    (group / "memory.limit_in_bytes").write_text("max")
    (cpu / "cpu.shares").write_text("1024")
    proc.mkdir()
    (proc / "mountinfo").write_text(
        f"30 25 0:26 / {v1} rw,relatime shared:9 - cgroup cgroup rw,memory\n"
        f"32 25 0:28 / {tmp_path / 'v1cpu'} rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
        f"31 25 0:27 / {tmp_path / 'v2'} rw - cgroup2 cgroup2 rw\n")
    (proc / "cgroup").write_text("4:memory:/jobs/hub\n2:cpu,cpuacct:/hub\n0::/jobs/hub\n")
    assert person_groups.hierarchies(proc) == [person_groups.Hierarchy(group, 1, ("memory",)),
                                               person_groups.Hierarchy(cpu, 1, ("cpu",))]
    (proc / "cgroup").write_text("4:memory:/elsewhere/hub\n0::/jobs/hub\n")
    assert person_groups.hierarchies(proc) == []
    v2 = tmp_path / "v2" / "jobs" / "hub"
    v2.mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    (v2 / "cgroup.subtree_control").write_text("io\n")
    assert person_groups.hierarchies(proc) == []  # neither handed down to the hub's children
    (v2 / "cgroup.subtree_control").write_text("cpu memory\n")
    assert person_groups.hierarchies(proc) == [person_groups.Hierarchy(v2, 2, ("memory", "cpu"))]
    (proc / "cgroup").write_text("4:memory:/jobs/hub\n0::/jobs/hub\n")
    assert person_groups.hierarchies(proc) == [person_groups.Hierarchy(group, 1, ("memory",)),
                                               person_groups.Hierarchy(v2, 2, ("cpu",))]  # memory is v1's
    shutil.rmtree(v1)
    assert person_groups.hierarchies(Path(tmp_path / "no-such-proc")) == []
