"""cgroupfs reads the cgroup file systems mounted and the process's group in each, from a /proc of the test's own:
v1 and v2 side by side, an escaped mount point, a cgroup namespace's or a bind mount's root."""

import os

from perfaudit.autograde.isolation import cgroupfs


def test_the_mounts_and_the_process_s_groups_are_read_as_the_kernel_writes_them(tmp_path):
    proc, v1, v2 = tmp_path / "proc", tmp_path / "with space", tmp_path / "unified"
    for folder in (proc, v1 / "hub", v2 / "hub"):
        folder.mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory pids\n")
    escaped = str(v1).replace(" ", "\\040")
    (proc / "mountinfo").write_text(
        "22 1 0:20 / /proc rw - proc proc rw\n"
        f"30 25 0:26 /jobs {escaped} rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
        f"31 25 0:27 / {v2} rw - cgroup2 cgroup2 rw\n"
        "a line the kernel never writes\n")
    (proc / "cgroup").write_text("2:cpu,cpuacct:/jobs/hub\n0::/hub\n")
    v1_mount, v2_mount = cgroupfs.mounted(proc)
    assert v1_mount == cgroupfs.Mounted(1, "/jobs", str(v1), ("rw", "cpu", "cpuacct"))
    assert v2_mount == cgroupfs.Mounted(2, "/", str(v2), ("cpu", "memory", "pids"))
    groups = cgroupfs.own_groups(proc)
    assert groups == {"cpu": "/jobs/hub", "cpuacct": "/jobs/hub", "": "/hub"}
    assert cgroupfs.own_dir(v1_mount, groups["cpu"]) == str(v1 / "hub")  # under the mount's root /jobs
    assert cgroupfs.own_dir(v2_mount, groups[""]) == str(v2 / "hub")
    assert cgroupfs.own_dir(v1_mount, "/elsewhere/hub") is None  # outside what is mounted there
    assert cgroupfs.own_dir(v2_mount, "/../../outside") is None  # a cgroup namespace's view of a group outside it
    assert cgroupfs.own_dir(v2_mount, "/no-such-group") is None
    os.symlink(v2 / "hub", v2 / "link")
    assert cgroupfs.own_dir(v2_mount, "/link") is None  # a group is a folder, never a link
    assert cgroupfs.own_dir(v2_mount, None) is None
    assert cgroupfs.mounted(tmp_path / "no-proc") == [] and cgroupfs.own_groups(tmp_path / "no-proc") == {}


def test_a_v2_mount_whose_root_cannot_be_read_offers_no_controllers(tmp_path):
    (tmp_path / "mountinfo").write_text(f"31 25 0:27 / {tmp_path / 'gone'} rw - cgroup2 cgroup2 rw\n")
    assert cgroupfs.mounted(tmp_path) == [cgroupfs.Mounted(2, "/", str(tmp_path / "gone"), ())]
