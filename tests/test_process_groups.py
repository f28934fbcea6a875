"""The order make test's processes take tests in (tests/helpers/process_groups.py): slow first, longest first."""

import json

import process_groups


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


def test_slow_scopes_go_first_each_tier_longest_first_by_recorded_seconds():
    items = [Item("fast-short"), Item("slow-short", slow=True), Item("fast-long"), Item("slow-long", slow=True)]
    seconds = {"fast-short": 1.0, "slow-short": 20.0, "fast-long": 40.0, "slow-long": 150.0}
    assert _ordered(items, seconds) == ["slow-long", "slow-short", "fast-long", "fast-short"]


def test_a_group_counts_the_seconds_of_all_its_tests_and_keeps_their_order():
    items = [Item("single", slow=True), Item("g1", slow=True, group="g"), Item("g2", slow=True, group="g")]
    assert _ordered(items, {"single": 100.0, "g1": 60.0, "g2": 60.0}) == ["g1", "g2", "single"]
    assert _ordered(items, {"single": 100.0, "g1": 30.0, "g2": 30.0}) == ["single", "g1", "g2"]


def test_a_test_not_recorded_counts_as_an_average_one_of_its_tier():
    items = [Item("new-slow", slow=True), Item("old-slow", slow=True)]
    assert _ordered(items, {"old-slow": process_groups.UNRECORDED_S[True] / 2}) == ["new-slow", "old-slow"]
    assert _ordered(items, {"old-slow": process_groups.UNRECORDED_S[True] * 2}) == ["old-slow", "new-slow"]


def test_recorded_seconds_sum_a_test_s_phases_and_leave_out_short_tests(tmp_path):
    report = type("Report", (), {})

    def made(nodeid, duration):
        r = report()
        r.nodeid, r.duration = nodeid, duration
        return r

    path = tmp_path / "seconds.json"
    process_groups.record([made("a", 30.0), made("a", 2.04), made("b", 0.1), made("c", 0.6)], path)
    assert json.loads(path.read_text()) == {"a": 32.0, "c": 0.6}
    assert len(path.read_text().splitlines()) == 4  # one test a line: a recorded run's diff shows what moved


def test_the_recorded_file_of_this_repository_is_read():
    seconds = process_groups.recorded_seconds()
    assert seconds and all(value >= process_groups.RECORDED_FROM_S for value in seconds.values())
