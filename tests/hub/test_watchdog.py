"""The watchdog (perfaudit/hub/watchdog.py): a student over their memory share loses their largest process alone."""

import subprocess

import psutil

from perfaudit.hub import watchdog

PYTHON = "/usr/bin/python3.11"  # a Python every account runs
HOLD = "import sys, time\nheld = b'x' * int(sys.argv[1])\nprint('holding', flush=True)\ntime.sleep(120)\n"
MB = 2**20


def hold(account, size):
    process = subprocess.Popen(["runuser", "-u", account, "--", PYTHON, "-c", HOLD, str(size)], cwd="/",
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "holding"
    return process


def test_a_student_over_their_share_loses_their_largest_process_and_a_classmate_keeps_theirs(two_students):
    greedy, classmate = two_students
    small, large, theirs = hold(greedy, 200 * MB), hold(greedy, 300 * MB), hold(classmate, 300 * MB)
    try:
        assert watchdog.enforce([greedy, classmate], budget=1024 * MB) == []  # under the share: nothing stopped
        said = watchdog.enforce([greedy, classmate], budget=400 * MB)
        assert len(said) == 1 and said[0].startswith(f"stopped {greedy}'s process "), said
        assert "over the 400 MB each student may have" in said[0], said
        # runuser says 128 + 9 when its child was killed (SIGKILL)
        assert large.wait(timeout=30) == 128 + 9, "the largest process of the student over their share goes on"
        for process in (small, theirs):
            assert process.poll() is None, "a process under the share was stopped"
    finally:
        for process in (small, large, theirs):
            process.kill()
            process.wait()


def test_a_student_s_server_is_never_stopped(two_students):
    """Only what the server started (kernels, terminals) is stopped: the server is what the student works in."""
    greedy, _ = two_students
    server = subprocess.Popen(["runuser", "-u", greedy, "--", PYTHON, "-c", HOLD, str(300 * MB),
                               watchdog.SERVER], cwd="/", stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "holding"
        assert watchdog.enforce([greedy], budget=100 * MB) == []
        assert psutil.pid_exists(server.pid) and server.poll() is None
    finally:
        server.kill()
        server.wait()
