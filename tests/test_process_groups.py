"""The order make test's processes take tests in (tests/helpers/process_groups.py): slow scopes first."""

import json
import re
import subprocess
import sys

import process_groups

from perfaudit import paths


class Item:
    """What longest_first reads of a pytest item: its node id, its marks, its fixtures' scopes."""

    def __init__(self, nodeid, slow=False, group=None):
        self.nodeid, self.slow, self.group = nodeid, slow, group
        self._fixtureinfo = type("Info", (), {"name2fixturedefs": {}})()

    def get_closest_marker(self, name):
        if name == "slow" and self.slow:
            return object()
        if name == "xdist_group" and self.group:
            return type("Mark", (), {"args": (self.group,), "kwargs": {}})()
        return None


def _ordered(items, seconds):
    process_groups.longest_first(items, seconds)
    return [item.nodeid for item in items]


def test_slow_scopes_go_first_largest_first_by_their_number_of_tests():
    items = [Item("fast"), Item("slow-single", slow=True), Item("g1", slow=True, group="g"),
             Item("g2", slow=True, group="g")]
    seconds = {"fast": 500.0, "slow-single": 300.0, "g1": 1.0, "g2": 1.0}  # a slow scope's seconds do not order it
    assert _ordered(items, seconds) == ["g1", "g2", "slow-single", "fast"]


def test_the_fast_tier_goes_longest_first_by_recorded_seconds_a_group_by_all_its_tests():
    items = [Item("short"), Item("g1", group="g"), Item("long"), Item("g2", group="g")]
    assert _ordered(items, {"short": 1.0, "long": 40.0, "g1": 15.0, "g2": 15.0}) == ["long", "g1", "g2", "short"]
    assert _ordered(items, {"short": 1.0, "long": 40.0, "g1": 25.0, "g2": 25.0}) == ["g1", "g2", "long", "short"]


def test_a_test_not_recorded_counts_as_a_short_one_of_the_fast_tier():
    items = [Item("new"), Item("old")]
    assert _ordered(items, {"old": process_groups.UNRECORDED_S / 2}) == ["new", "old"]
    assert _ordered(items, {"old": process_groups.UNRECORDED_S * 2}) == ["old", "new"]


def test_recorded_seconds_sum_a_test_s_phases_and_leave_out_short_tests(tmp_path):
    durations = ("=== slowest durations ===\n30.00s setup    tests/a.py::test_a[x y]\n"
                 "2.04s call     tests/a.py::test_a[x y]\n0.10s call     tests/b.py::test_b\n"
                 "0.60s teardown tests/c.py::test_c\n=== 3 passed in 33.0s ===\n")
    path = tmp_path / "seconds.json"
    process_groups.record(durations, path)
    assert json.loads(path.read_text()) == {"tests/a.py::test_a[x y]": 32.0, "tests/c.py::test_c": 0.6}
    assert len(path.read_text().splitlines()) == 4  # one test a line: a recorded run's diff shows what moved


def test_the_recorded_file_of_this_repository_is_read():
    seconds = process_groups.recorded_seconds()
    assert seconds and all(value >= process_groups.RECORDED_FROM_S for value in seconds.values())


def test_the_tests_of_a_group_run_in_one_process(tmp_path):
    """make test's scheduler keeps a group together, so that its module-scoped grading or server is made once (a
    group spread over three processes made it three times, and cost the suite minutes)."""
    run = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "3", "-v", "-p", "no:cacheprovider",
                           f"--basetemp={run}", "tests/test_decompose.py"],
                          cwd=paths.ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    ran_in = {nodeid: worker for worker, nodeid in re.findall(r"^\[(gw\d)\] \[ *\d+%\] PASSED (\S+)", done.stdout,
                                                                re.M)}
    groups = json.loads((run / process_groups.FILE).read_text())
    processes = {}
    for nodeid, group in groups.items():
        processes.setdefault(group, set()).add(ran_in[nodeid])
    assert processes and all(len(workers) == 1 for workers in processes.values()), processes
