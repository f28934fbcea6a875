"""Each student's share of the exchange (perfaudit/hub/exchange_share.py): a student writing far past it is stopped
alone, and the exchange keeps room for a classmate. The exchange is a small file system of its own (a 128 MB tmpfs,
no loop device needed): full, it refuses everyone, as a full disk would."""

import os
import pwd
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from perfaudit.hub import exchange, exchange_share, watchdog

MB = 2**20
DISK = 128 * MB
SHARE = 16 * MB
PYTHON = "/usr/bin/python3.11"  # a Python every account runs
COURSE = "course"
INBOUND = f"{COURSE}/inbound"
# Writes 20 MB a second until stopped or the disk is full; `unlink` first removes its file's name (which still
# fills the disk). Paced: what a writer adds between two looks of the watchdog is its rate times the interval, and
# the test's small disk must hold that (docs/hub.md sizes a class's exchange for it).
WRITER = """import os, sys, time
handle = open(sys.argv[1], "wb")
if sys.argv[2] == "unlink":
    os.unlink(sys.argv[1])
print("writing", flush=True)
while True:
    handle.write(b"x" * 2**20)
    handle.flush()
    time.sleep(0.05)
"""


@pytest.fixture
def small_exchange():
    """An exchange with nbgrader's modes on a 128 MB file system of its own."""
    if os.geteuid() != 0:
        pytest.fail("mounts a file system and makes Linux accounts: run it as root (CI does)")
    mount = Path(tempfile.mkdtemp(prefix="exchange-", dir="/tmp"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK},mode=0755", "tmpfs", str(mount)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        mount.rmdir()
        pytest.fail(f"cannot mount a tmpfs here (root with CAP_SYS_ADMIN is needed): {mounted.stderr.strip()}")
    try:
        exchange.prepare(mount, COURSE)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)
        mount.rmdir()


def write_as(account, path, how="keep"):
    process = subprocess.Popen(["runuser", "-u", account, "--", PYTHON, "-c", WRITER, str(path), how],
                               cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "writing", process.stderr.read()
    return process


def copy_as(account, size, path):
    """A classmate's file of size bytes written as that account: (return code, what dd said)."""
    done = subprocess.run(["runuser", "-u", account, "--", "dd", "if=/dev/zero", f"of={path}", "bs=1M",
                           f"count={size // MB}", "conv=fsync"], capture_output=True, text=True)
    return done.returncode, done.stderr


def watch_until_stopped(students, root, process, timeout_s=60, every_s=0.25):
    """The watchdog's loop over the exchange, as the limits service runs it, until the writer ends: what it said."""
    said, deadline = [], time.monotonic() + timeout_s
    while process.poll() is None and time.monotonic() < deadline:
        said += exchange_share.enforce(students, root, SHARE, watchdog.SERVER)
        time.sleep(every_s)
    return said


@pytest.mark.parametrize("how", ["keep", "unlink"])
def test_a_student_writing_past_their_share_is_stopped_and_a_classmate_still_submits(small_exchange, two_students,
                                                                                     how):
    greedy, classmate = two_students
    junk = small_exchange / INBOUND / f"{greedy}+performance-audit+junk"
    writer = write_as(greedy, junk, how)
    try:
        said = watch_until_stopped([greedy, classmate], small_exchange, writer)
    finally:
        writer.kill()
    err = writer.stderr.read()
    writer.wait()
    # The classmate's copy, four times the share, still fits: the exchange is not full.
    code, dd_said = copy_as(classmate, 64 * MB, small_exchange / INBOUND / f"{classmate}+performance-audit+work")
    assert code == 0, f"the classmate could not write into the exchange: {dd_said}"
    assert writer.returncode == 128 + 9, f"the writer was not stopped (it ended by itself: {err.strip()[-200:]})"
    assert f"stopped {greedy}'s process" in said[0] and f"over the {SHARE // MB} MB" in said[0], said
    if how == "keep":
        kept = junk.stat()
        assert kept.st_uid == pwd.getpwnam(greedy).pw_uid and kept.st_size >= SHARE, "what they wrote was changed"


def test_a_student_under_their_share_writes_on(small_exchange, two_students):
    student, classmate = two_students
    code, dd_said = copy_as(classmate, 32 * MB, small_exchange / INBOUND / f"{classmate}+performance-audit+work")
    assert code == 0, dd_said  # over the share, and not writing now: nothing of theirs to stop
    writer = write_as(student, small_exchange / INBOUND / f"{student}+performance-audit+work")
    try:
        said = exchange_share.enforce(two_students, small_exchange, SHARE, watchdog.SERVER)
        assert said == [] and writer.poll() is None, f"a writer under its student's share was stopped: {said}"
    finally:
        writer.kill()
        writer.wait()


def test_folders_nested_past_what_a_path_reaches_are_counted_over_any_share_not_a_crash():
    """3000 folders one in another: os.walk (recursive in Python 3.11) raised RecursionError, which stopped the
    limits service, memory checks included; and past PATH_MAX no path reaches what they hold. Their owner now counts
    as over any share, and the look ends. (Not in tmp_path: pytest's clean-up recurses too, as shutil.rmtree does.)"""
    root = Path(tempfile.mkdtemp(prefix="deep-exchange-"))
    try:
        folder = os.open(root, os.O_RDONLY)
        for _ in range(3000):
            os.mkdir("d", dir_fd=folder)
            inner = os.open("d", os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = inner
        os.close(folder)
        owned = exchange_share.owned_blocks(root)
        assert max(owned[os.geteuid()].values()) == exchange_share.UNREADABLE
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=True)  # GNU rm takes any depth
