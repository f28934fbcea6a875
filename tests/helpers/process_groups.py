"""Which tests pytest-xdist runs in one process: those that share a slow module-scoped fixture, or name a group.

make test runs the suite in three processes (-n 3 --dist loadgroup; the Makefile's TEST_PROCESSES). The tests of
an xdist_group mark run in one process, and so do the tests that share a module-scoped fixture (a grading, a
server, a browser), so that it is made once; every other test may run in any process. xdist's own loadgroup
writes the group into the test's node id, which pytest 9 no longer lets a plugin change: here each worker writes
{node id: group} to a file in the run's temporary directory instead, and the scheduler
(pytest_xdist_make_scheduler in conftest.py) reads it.

The longest work must start first: the suite ends when the last of its processes does, and a grading of
minutes handed out last runs on while the other processes are idle. Each worker orders its tests (the order the
scheduler hands them out in) slow scopes first, largest first by their number of tests, then the fast tier, longest
first by the seconds its tests took in a recorded run (SECONDS, tests/helpers/seconds.json; a test not recorded
there counts as UNRECORDED_S). Slow scopes go by their number of tests, not their seconds: while the catalog's two
graders sleep in their holds, the third process must bring work for the CPU, which a scope of many gradings does;
the slow scopes with the most seconds mostly wait (a browser, a hung worker's time limit), and ordered by seconds
they left a core idle a quarter of the first ten minutes. The file is written anew from a run's durations, when
tests are added or a fast one changes much:

    make test PYTEST_ARGS=--durations=0 | tee test.log && .venv/bin/python tests/helpers/process_groups.py test.log

It only orders the run: a stale one costs seconds, never a result.
"""

import json
import os
import re
import sys
from pathlib import Path

FILE = "process-groups.json"
SECONDS = Path(__file__).with_name("seconds.json")  # {node id: seconds of setup, call and teardown}, a recorded run's
UNRECORDED_S = 0.2  # a test SECONDS does not hold: most tests of the fast tier take less
RECORDED_FROM_S = 0.5  # shorter tests are left out of SECONDS


def group_of(item):
    """The item's group, or None when it may run in any process."""
    mark = item.get_closest_marker("xdist_group")
    if mark:
        return mark.args[0] if mark.args else mark.kwargs.get("name", "default")
    if any(defs[-1].scope in ("module", "class") for defs in item._fixtureinfo.name2fixturedefs.values()):
        return item.module.__name__
    return None


def longest_first(items, seconds=None):
    """items reordered in place by scope (a group, or a single test): slow scopes first, largest first by their
    number of tests, then the fast tier, longest first by the recorded seconds of its tests (`seconds`: SECONDS's by
    default); a scope's tests keep their order."""
    seconds = recorded_seconds() if seconds is None else seconds
    scopes = {}  # scope -> [position of its first test, its number of tests, its seconds, slow]
    for index, item in enumerate(items):
        scope = scopes.setdefault(group_of(item) or item.nodeid, [index, 0, 0.0, False])
        scope[1] += 1
        scope[2] += seconds.get(item.nodeid, UNRECORDED_S)
        scope[3] |= item.get_closest_marker("slow") is not None

    def key(item):
        first, size, took, slow = scopes[group_of(item) or item.nodeid]
        return (not slow, -size if slow else -took, first)

    items.sort(key=key)


def recorded_seconds():
    """SECONDS's {node id: seconds}, or {} where it is missing or unreadable (every test then counts alike)."""
    try:
        return {str(nodeid): float(s) for nodeid, s in json.loads(SECONDS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


DURATION = re.compile(r"^(\d+\.\d+)s (?:setup|call|teardown) +(\S.*?)\s*$")  # a line of pytest's --durations


def record(durations_text, path=SECONDS):
    """Write {node id: seconds} from pytest's --durations=0 lines (setup, call and teardown summed) to path, one test
    a line, sorted, tests shorter than RECORDED_FROM_S left out."""
    took = {}
    for line in durations_text.splitlines():
        if found := DURATION.match(line):
            took[found[2]] = took.get(found[2], 0.0) + float(found[1])
    kept = {nodeid: round(s, 1) for nodeid, s in sorted(took.items()) if s >= RECORDED_FROM_S}
    path.write_text("{\n" + ",\n".join(f"  {json.dumps(k)}: {v}" for k, v in kept.items()) + "\n}\n")
    return kept


def write(config, items):
    """In an xdist worker: the tests longest first (longest_first), and {node id: group} for the scheduler (every
    worker collects the same tests, and orders them alike)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    longest_first(items)
    groups = {item.nodeid: group for item in items if (group := group_of(item)) is not None}
    path = Path(config.option.basetemp).parent / FILE  # the run's directory; the worker's is inside it
    temporary = path.with_name(f"{FILE}.{worker}")
    temporary.write_text(json.dumps(groups))
    temporary.replace(path)


def scheduler(config, log):
    """xdist's scheduler by scopes, a scope being a group from the workers' file, or else a single test."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the workers' order (longest_first), not xdist's by number of tests

    class GroupScheduling(LoadScopeScheduling):
        groups = None

        def _split_scope(self, nodeid):
            if self.groups is None:  # called once all workers have collected, so the file is written
                path = config._tmp_path_factory.getbasetemp() / FILE
                self.groups = json.loads(path.read_text()) if path.exists() else {}
            group = self.groups.get(nodeid)
            return f"group {group}" if group is not None else nodeid

    return GroupScheduling(config, log)


if __name__ == "__main__":
    recorded = record(Path(sys.argv[1]).read_text())
    print(f"{len(recorded)} tests' seconds written to {SECONDS}")
