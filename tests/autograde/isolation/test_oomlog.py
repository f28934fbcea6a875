"""The kernel log's OOM kills (perfaudit/autograde/isolation/oomlog.py), read from records as /dev/kmsg gives them."""

import time
import types

from perfaudit.autograde.isolation import oomlog

MEMCG_KILL = ("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
              "oom_memcg=/perfaudit-1,task_memcg=/perfaudit-1/kernel,task=python,pid=4242,uid=1000")


def _kmsg(monkeypatch, records):
    """oomlog reading `records` (bytes, or an exception to raise) one per read, as the kernel log hands them."""
    left = list(records)

    def read(fd, size):
        if not left:
            raise BlockingIOError("EAGAIN")
        record = left.pop(0)
        if isinstance(record, BaseException):
            raise record
        return record
    closed = []
    fake = types.SimpleNamespace(open=lambda *args: 7, read=read, close=closed.append, O_RDONLY=0, O_NONBLOCK=0,
                                 O_CLOEXEC=0)
    monkeypatch.setattr(oomlog, "os", fake)
    return closed


def test_an_oom_kill_line_gives_its_fields():
    assert oomlog._oom_kill_fields(MEMCG_KILL) == {
        "constraint": "CONSTRAINT_MEMCG", "nodemask": "(null)", "cpuset": "/", "mems_allowed": "0",
        "oom_memcg": "/perfaudit-1", "task_memcg": "/perfaudit-1/kernel", "task": "python", "pid": "4242",
        "uid": "1000"}


def test_an_older_kernel_s_machine_wide_kill_gives_its_pid_as_a_global_oom():
    assert oomlog._oom_kill_fields("Out of memory: Killed process 977 (python) total-vm:1kB") == {
        "pid": "977", "global_oom": ""}
    assert oomlog._oom_kill_fields("Memory cgroup out of memory: Killed process 977 (python)") is None
    assert oomlog._oom_kill_fields("usb 1-1: new device") is None


def test_only_the_kills_logged_since_the_time_given_are_returned(monkeypatch):
    closed = _kmsg(monkeypatch, [
        f"6,100,1000,-;{MEMCG_KILL}\n".encode(),
        BrokenPipeError(),  # records overwritten while read: reading goes on
        f"6,101,5000,-;{MEMCG_KILL.replace('4242', '4343')}\n".encode(),
        b"6,102,6000,-;usb 1-1: new device\n",
        b"3,103,7000,-;Out of memory: Killed process 977 (python)\n",
        b"a record without a stamp;oom-kill:pid=1\n",
    ])
    assert [fields["pid"] for fields in oomlog.kernel_oom_kills(5000)] == ["4343", "977"]
    assert closed == [7]


def test_a_log_that_cannot_be_opened_has_no_kills(monkeypatch):
    monkeypatch.setattr(oomlog, "KMSG", "/nonexistent/kmsg")
    assert oomlog.kernel_oom_kills(0) == []


def test_the_clock_is_the_monotonic_one_in_microseconds():
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    now = oomlog.monotonic_us()
    assert before <= now <= time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
