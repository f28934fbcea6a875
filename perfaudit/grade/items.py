"""Item analysis of a graded class: each test's pass count and discrimination, and why students failed it.

A test is passed with full points (as the terminal summary counts it). Its discrimination is the point-biserial
correlation between passing it (1 or 0) and the student's score on the *other* tests (the total less this test's
points, so a test does not correlate with itself): near 0, passing it says nothing of the rest (a broken test,
an unclear instruction, or one everyone passes); negative, the strong students fail it. It is undefined when
everyone or nobody passed, or when the other tests do not vary. A notebook not graded (withheld: refused at intake)
counts nowhere: not in its tests' pass counts, not in a distribution, and its student, who has no total, not in
any discrimination. Failures are grouped by cause: the message with
its numbers stripped (classdata.cause), with the number of students and one example message each.
"""

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from perfaudit.grade.classdata import ClassData, cause

DISCRIMINATION = ("point-biserial correlation between passing the test (1/0) and the score on the other tests "
                  "(total minus this test's points)")


@dataclass
class Item:
    notebook: str
    name: str
    points: float
    graded: int = 0
    passed: int = 0
    discrimination: float | None = None
    # [(cause, students, example message)], most students first
    causes: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None


def point_biserial(passed: Sequence[int], rest: Sequence[float]) -> float | None:
    """Pearson's r between 0/1 and scores (population moments); None when either does not vary."""
    n = len(passed)
    if n < 2:
        return None
    p = sum(passed) / n
    spread = statistics.pstdev(rest)
    if p in (0.0, 1.0) or spread == 0:
        return None
    mean_pass = statistics.fmean(r for r, x in zip(rest, passed) if x)
    mean_fail = statistics.fmean(r for r, x in zip(rest, passed) if not x)
    return (mean_pass - mean_fail) / spread * math.sqrt(p * (1 - p))


def analyse(data: ClassData) -> list[Item]:
    """[Item] in notebook order, from ClassData."""
    students = sorted(data.scores)
    totals = {s: data.total(s) for s in students if data.complete(s)}  # a student with no total: in no correlation
    items = []
    for test in data.tests:
        item = Item(test.notebook, test.name, test.points)
        graded = [s for s in students if test.key in data.scores[s]]
        passed = [1 if data.scores[s][test.key] >= test.points else 0 for s in graded]
        item.graded, item.passed = len(graded), sum(passed)
        whole = [(ok, totals[s] - data.scores[s][test.key]) for s, ok in zip(graded, passed) if s in totals]
        item.discrimination = point_biserial([ok for ok, _ in whole], [rest for _, rest in whole])
        groups: dict[str, list[tuple[str, str]]] = {}
        for student, ok in zip(graded, passed):
            message = data.messages.get(student, {}).get(test.key)
            if not ok and message:
                groups.setdefault(cause(message), []).append((student, message))
        item.causes = sorted(((key, len(found), found[0][1]) for key, found in groups.items()),
                             key=lambda c: (-c[1], c[0]))
        items.append(item)
    return items


def distributions(data: ClassData) -> dict[str, tuple[list[float], float]]:
    """{notebook or "total": (scores of every student graded on it, maximum)}: the grades, after nbgrader's late
    penalty; a notebook withheld is in no list, its student in no total."""
    students = sorted(data.scores)
    found = {nb: ([data.final_score(s, nb) for s in students if data.graded(s, nb)], maximum)
             for nb, maximum in data.notebooks().items()}
    found["total"] = ([data.final_total(s) for s in students if data.complete(s)], sum(data.notebooks().values()))
    return found


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between order statistics."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q / 100
    low, high = math.floor(at), math.ceil(at)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def timings(data: ClassData,
            newest_records: dict[tuple[str, str], dict[str, Any]]) -> dict[str, tuple[int, float, float, float]]:
    """{notebook: (notebooks timed, median s, 90th percentile s, max s)} from the newest record of each grade."""
    found: dict[str, tuple[int, float, float, float]] = {}
    for notebook in data.notebooks():
        seconds = [newest_records[s, notebook]["seconds"] for s in sorted(data.scores)
                   if (s, notebook) in newest_records and notebook not in data.not_graded.get(s, {})]
        if seconds:
            found[notebook] = (len(seconds), statistics.median(seconds), percentile(seconds, 90), max(seconds))
    return found
