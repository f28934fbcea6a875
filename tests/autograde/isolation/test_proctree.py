"""The process tree as /proc shows it (perfaudit/autograde/isolation/proctree.py), for the memory watchdog."""

import os
import signal
import subprocess
import sys

import pytest

from perfaudit.autograde.isolation import proctree


def _sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_file_is_read_whole_and_a_symlink_in_its_place_is_refused(tmp_path):
    (tmp_path / "big").write_text("x" * 200_000 + "end")
    assert proctree.read_file(str(tmp_path / "big")) == "x" * 200_000 + "end"
    (tmp_path / "link").symlink_to(tmp_path / "big")
    with pytest.raises(OSError):
        proctree.read_file(str(tmp_path / "link"))


def test_a_process_s_stat_gives_its_parent_start_time_and_state():
    ppid, start, state = proctree.stat(os.getpid())
    assert ppid == os.getppid() and state == "R" and start > 0
    assert proctree.stat(os.getpid())[1] == start


def test_a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields(monkeypatch):
    fields = ["S", "17", *[str(n) for n in range(2, 19)], "98765", "0"]
    monkeypatch.setattr(proctree, "read_file", lambda path: f"4242 (a) b (c) {' '.join(fields)}\n")
    assert proctree.stat(4242) == (17, 98765, "S")
    monkeypatch.setattr(proctree, "read_file", lambda path: "4242 (cut short) S 17\n")
    assert proctree.stat(4242) is None


def test_a_process_that_is_gone_has_no_stat_and_no_memory():
    child = subprocess.Popen(["true"])
    child.wait()
    assert proctree.stat(child.pid) is None
    assert proctree.rss_bytes(child.pid) == 0
    assert proctree.rss_bytes(os.getpid()) > 0


def test_the_process_table_holds_the_living_and_leaves_a_zombie_out():
    child = subprocess.Popen(["true"])
    try:
        while proctree.stat(child.pid) is not None and proctree.stat(child.pid)[2] != "Z":
            os.sched_yield()
        table = proctree.process_table()
        assert table[os.getpid()][0] == os.getppid()
        assert child.pid not in table
    finally:
        child.wait()


def test_the_tree_holds_the_live_seeds_and_their_descendants_never_the_grader_or_init():
    me = os.getpid()
    table = {1: (0, 1, "S"), me: (1, 5, "S"), 10: (1, 100, "S"), 11: (10, 110, "S"), 12: (11, 120, "S"),
             20: (1, 200, "S"), 21: (20, 210, "S"), 30: (1, 300, "S"), 31: (me, 310, "S")}
    assert proctree.tree(table, {10: 100}) == {10: 100, 11: 110, 12: 120}
    # a seed seen before whose parent exited (now init's child) still counts; a pid reused since does not
    assert proctree.tree(table, {12: 120, 30: 299}) == {12: 120}
    assert proctree.tree(table, {40: 400}) == {}
    assert proctree.tree(table, {1: 1, me: 5}) == {10: 100, 11: 110, 12: 120, 20: 200, 21: 210, 30: 300, 31: 310}


def test_a_signal_goes_only_to_the_process_that_started_when_seen():
    child = _sleeper()
    try:
        start = proctree.stat(child.pid)[1]
        proctree.signal_if_same(child.pid, start + 1, signal.SIGKILL)
        with pytest.raises(subprocess.TimeoutExpired):  # still running a while later: no signal reached it
            child.wait(timeout=0.5)
        proctree.signal_if_same(child.pid, start, signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
        proctree.signal_if_same(child.pid, start, signal.SIGKILL)  # gone: nothing to do, nothing raised
    finally:
        child.kill()
        child.wait()


def test_memfd_bytes_counts_each_memfd_once_and_nothing_else(tmp_path):
    fd = os.memfd_create("held")
    os.write(fd, b"x" * 2**20)
    plain = os.open(tmp_path / "plain", os.O_RDWR | os.O_CREAT)
    os.write(plain, b"y" * 2**20)
    try:
        counted: set = set()
        assert 2**20 <= proctree.memfd_bytes(os.getpid(), counted) < 2**20 + 2**16
        assert proctree.memfd_bytes(os.getpid(), counted) == 0  # held by another process of the tree: once
    finally:
        os.close(fd)
        os.close(plain)
