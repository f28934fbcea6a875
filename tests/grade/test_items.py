"""Item analysis of a graded class (perfaudit/grade/items.py), on a class written out by hand."""

import numpy as np
import pytest

from class_data import CLASS, NB, TESTS, make_class

from perfaudit.grade import items
from perfaudit.grade.classdata import ClassData, GradedCell, cause


def test_point_biserial_is_pearsons_r_with_the_rest_score():
    analysed = items.analyse(make_class(CLASS))
    for index, item in enumerate(analysed):
        passed = np.array([1.0 if CLASS[s][index] >= TESTS[index].points else 0.0 for s in sorted(CLASS)])
        rest = np.array([sum(CLASS[s]) - CLASS[s][index] for s in sorted(CLASS)])
        assert item.discrimination == pytest.approx(np.corrcoef(passed, rest)[0, 1])
        assert (item.passed, item.graded) == (int(passed.sum()), 5)


def test_discrimination_is_undefined_when_everyone_passes():
    analysed = items.analyse(make_class({"s1": (1, 1, 2), "s2": (1, 0, 2), "s3": (1, 0, 0)}))
    assert analysed[0].discrimination is None and analysed[0].pass_rate == 1.0


def test_failures_group_by_the_message_without_its_numbers():
    messages = {
        "s2": {f"{NB}/b": "AssertionError: expected 0.25 at [3, 4], found 0.7"},
        "s3": {f"{NB}/b": "AssertionError: expected -1e-05 at [0, 11], found 2"},
        "s4": {f"{NB}/b": "NameError: name 'x' is not defined"},
    }
    data = make_class({"s1": (1, 1, 2), "s2": (1, 0, 2), "s3": (0, 0, 0), "s4": (1, 0, 0)}, messages)
    b = items.analyse(data)[1]
    assert b.causes == [("AssertionError: expected # at [#, #], found #", 2, messages["s2"][f"{NB}/b"]),
                        ("NameError: name 'x' is not defined", 1, messages["s4"][f"{NB}/b"])]
    assert cause("missing: no 02-retracing.ipynb; a random 31x31 float32 matrix") == \
        "missing: no 02-retracing.ipynb; a random #x# float# matrix"


def test_a_withheld_notebook_counts_in_no_pass_count_distribution_or_discrimination():
    data = make_class(CLASS)
    data.withheld = {"s5": {NB: "two files claim it"}}
    del data.scores["s5"]
    analysed = items.analyse(data)
    assert [(item.passed, item.graded) for item in analysed] == [(3, 4), (2, 4), (2, 4)]
    assert analysed[0].pass_rate == 0.75
    data.scores["s5"] = {}  # a row for the student, none for the notebook
    assert [(item.passed, item.graded) for item in items.analyse(data)] == [(3, 4), (2, 4), (2, 4)]
    assert items.distributions(data) == {NB: ([4, 3, 0, 2], 4.0), "total": ([4, 3, 0, 2], 4.0)}


def test_a_test_nobody_was_graded_on_has_no_pass_rate_and_no_discrimination():
    item = items.analyse(ClassData(tests=list(TESTS)))[0]
    assert (item.graded, item.pass_rate, item.discrimination, item.causes) == (0, None, None, [])
    assert items.point_biserial([1], [3.0]) is None
    assert items.point_biserial([1, 0, 1], [2.0, 2.0, 2.0]) is None  # the other tests do not vary


def test_a_percentile_interpolates_between_order_statistics():
    values = [15, 20, 35, 40, 50]
    assert [items.percentile(values, q) for q in (0, 25, 50, 90, 100)] == pytest.approx(
        list(np.percentile(values, [0, 25, 50, 90, 100])))
    assert items.percentile([7.0], 90) == 7.0


def test_timings_come_from_each_graded_notebook_s_newest_record():
    data = make_class({f"s{i}": (1, 1, 2) for i in range(1, 7)})
    data.not_graded = {"s6": {NB: "missing"}}
    records = {(f"s{i}", NB): {"seconds": float(i)} for i in range(1, 7)}
    del records["s5", NB]
    assert items.timings(data, records) == {NB: (4, 2.5, pytest.approx(3.7), 4.0)}
    assert items.timings(data, {}) == {}


def test_a_student_with_a_notebook_withheld_has_no_total_so_is_in_no_discrimination():
    other = GradedCell("02-retracing", "d", 1.0)
    data = make_class(CLASS)
    data.tests.append(other)
    for student, score in (("s1", 1), ("s2", 0), ("s3", 0), ("s4", 1)):
        data.scores[student][other.key] = score
    data.withheld = {"s5": {"02-retracing": "two files claim it"}}
    found = items.analyse(data)[0]
    assert found.graded == 5  # s5's first notebook is graded: its tests count it
    passed, rest = [1, 1, 0, 1], [4, 2, 0, 2]  # s1 to s4: test a, and the total less test a
    assert found.discrimination == pytest.approx(np.corrcoef(passed, rest)[0, 1])
