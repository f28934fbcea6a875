"""Per-student limits on the hub's servers (perfaudit/hub/server_limits.py): rlimits and nice, with real accounts."""

import subprocess

import pytest

from perfaudit.hub import server_limits as limits

PYTHON = "/usr/bin/python3.11"  # a Python every account runs (the course venv's may be root's alone here)
LIMITS = limits.Limits(memory_bytes=512 * 2**20, processes=512)
# A student's kernel asking for far more than the limit (2 GiB, four times it), and what it reports.
GREEDY = """
import os, resource
print("nice", os.nice(0), "memory", resource.getrlimit(resource.RLIMIT_AS), "processes",
      resource.getrlimit(resource.RLIMIT_NPROC), flush=True)
for raise_it in (lambda: os.nice(-5), lambda: resource.setrlimit(resource.RLIMIT_AS, (-1, -1))):
    try:
        raise_it()
        print("raised a limit", flush=True)
    except (PermissionError, ValueError):
        pass
held = bytearray(2 * 2**30)
print("allocated", len(held), flush=True)
"""
# A classmate working meanwhile: well under the limit, a few seconds of work, the answer checked.
WORKING = """
import time
data = bytearray(64 * 2**20)
total = 0
for step in range(30):
    total += sum(data[step::4096])
    time.sleep(0.1)
print("done", total + len(data), flush=True)
"""


def as_account(name, argv):
    return subprocess.Popen(["runuser", "-u", name, "--", *argv], cwd="/", stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_size_is_read_in_binary_units():
    assert [limits.parse_bytes(s) for s in ("2G", "512M", "1.5g", "64KiB", "1000")] == [
        2 * 2**30, 512 * 2**20, 3 * 2**29, 64 * 2**10, 1000]
    with pytest.raises(ValueError, match="write it as 2G"):
        limits.parse_bytes("two gigs")


def test_a_cpu_cap_is_a_number_of_cpus_or_none():
    assert [limits.parse_cpus(s) for s in ("", "none", "None", "1", "0.5", " 2 ")] == [None, None, None, 1.0, 0.5, 2.0]
    for wrong in ("half", "0", "-1", "0.001", "1e9", "nan"):
        with pytest.raises(ValueError, match="write it as 1, 0.5, or none"):
            limits.parse_cpus(wrong)


def test_a_student_far_over_the_memory_limit_fails_alone_while_a_classmate_works():
    """Under the server's limits the greedy allocation fails in its own process (MemoryError), the student can
    raise neither the limit nor their priority, and the classmate's work, running meanwhile, finishes. Shown to be
    the limits: the same allocation without them succeeds."""
    classmate = as_account("bin", LIMITS.command([PYTHON, "-c", WORKING]))
    student = as_account("nobody", LIMITS.command([PYTHON, "-c", GREEDY]))
    said, errors = student.communicate(timeout=120)
    assert student.returncode != 0 and "MemoryError" in errors, said + errors
    assert f"nice 10 memory ({LIMITS.memory_bytes}, {LIMITS.memory_bytes}) processes (512, 512)" in said, said
    assert "raised a limit" not in said and "allocated" not in said, said
    worked, errors = classmate.communicate(timeout=120)
    assert classmate.returncode == 0 and worked.startswith("done "), worked + errors
    unlimited = as_account("nobody", [PYTHON, "-c", GREEDY])
    said, errors = unlimited.communicate(timeout=120)
    assert unlimited.returncode == 0 and f"allocated {2 * 2**30}" in said, said + errors
