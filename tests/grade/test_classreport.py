"""The class report's arithmetic and its page, on a class written out by hand (no grading: the fast tier).

tests/grade/test_report_graded.py grades real submissions and opens the page in Chromium; here each piece is checked
against numbers worked out independently: the point-biserial against NumPy's Pearson correlation, causes,
regrade diffs, the CSV's formula guard, and that text from a submission cannot become markup.
"""

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from perfaudit.grade import classreport, items, regrade
from perfaudit.grade.classdata import ClassData, GradedCell, cause

NB = "01-first-call-vs-steady"
TESTS = [GradedCell(NB, "a", 1.0), GradedCell(NB, "b", 1.0), GradedCell(NB, "c", 2.0)]
HOSTILE = '<img src="http://127.0.0.1:9/x.png" onerror="alert(1)"><script>alert(2)</script>'


def _class(scores, messages=None):
    data = ClassData(tests=list(TESTS))
    for student, values in scores.items():
        data.scores[student] = {t.key: v for t, v in zip(TESTS, values)}
        data.messages[student] = (messages or {}).get(student, {})
    return data


CLASS = {"s1": (1, 1, 2), "s2": (1, 0, 2), "s3": (0, 0, 0), "s4": (1, 1, 0), "s5": (0, 1, 2)}


def test_point_biserial_is_pearsons_r_with_the_rest_score():
    analysed = items.analyse(_class(CLASS))
    for index, item in enumerate(analysed):
        passed = np.array([1.0 if CLASS[s][index] >= TESTS[index].points else 0.0 for s in sorted(CLASS)])
        rest = np.array([sum(CLASS[s]) - CLASS[s][index] for s in sorted(CLASS)])
        assert item.discrimination == pytest.approx(np.corrcoef(passed, rest)[0, 1])
        assert (item.passed, item.graded) == (int(passed.sum()), 5)


def test_discrimination_is_undefined_when_everyone_passes():
    analysed = items.analyse(_class({"s1": (1, 1, 2), "s2": (1, 0, 2), "s3": (1, 0, 0)}))
    assert analysed[0].discrimination is None and analysed[0].pass_rate == 1.0


def test_failures_group_by_the_message_without_its_numbers():
    messages = {
        "s2": {f"{NB}/b": "AssertionError: expected 0.25 at [3, 4], found 0.7"},
        "s3": {f"{NB}/b": "AssertionError: expected -1e-05 at [0, 11], found 2"},
        "s4": {f"{NB}/b": "NameError: name 'x' is not defined"},
    }
    data = _class({"s1": (1, 1, 2), "s2": (1, 0, 2), "s3": (0, 0, 0), "s4": (1, 0, 0)}, messages)
    b = items.analyse(data)[1]
    assert b.causes == [("AssertionError: expected # at [#, #], found #", 2, messages["s2"][f"{NB}/b"]),
                        ("NameError: name 'x' is not defined", 1, messages["s4"][f"{NB}/b"])]
    assert cause("missing: no 02-retracing.ipynb; a random 31x31 float32 matrix") == \
        "missing: no 02-retracing.ipynb; a random #x# float# matrix"


def test_regrade_lists_exactly_the_students_whose_score_moved(tmp_path):
    before = _class(CLASS, {"s2": {f"{NB}/b": "old"}})
    after = _class({**CLASS, "s2": (1, 1, 2), "s4": (1, 1, 1)}, {"s4": {f"{NB}/c": "=HYPERLINK(\"x\")"}})
    rows = regrade.changes(before, after)
    assert [(r["student"], r["test"], r["old_score"], r["new_score"], r["direction"]) for r in rows] == [
        ("s2", "b", 0.0, 1.0, "up"), ("s4", "c", 0.0, 1.0, "up")]
    assert regrade.counts(rows) == {"up": 2, "down": 0, "same total": 0}
    path = regrade.write_csv(tmp_path, "20260101T000000.000Z", rows)
    with path.open(newline="") as handle:
        written = list(csv.DictReader(handle))
    assert written[1]["new_message"] == "'=HYPERLINK(\"x\")"  # never a formula in a spreadsheet
    assert written[0]["old_message"] == "old" and written[0]["old_score"] == "0"
    assert regrade.newest(tmp_path)[1] == written


def test_scores_and_regrade_totals_are_grades_after_the_late_penalty():
    """The Scores section and the regrade's totals are the grades the summary and the LMS show (less nbgrader's
    late penalty); a test's pass count is the test's own score, whenever the notebook came."""
    data = _class(CLASS)
    data.penalties = {"s1": {NB: 4.0}}  # s1's notebook came late: nbgrader's "zero" method took its 4 points
    found = items.distributions(data)
    assert found[NB] == ([0, 3, 0, 2, 3], 4.0) and found["total"] == ([0, 3, 0, 2, 3], 4.0)
    assert [item.passed for item in items.analyse(data)] == [3, 3, 3]
    after = _class({**CLASS, "s1": (1, 1, 0), "s2": (1, 1, 2)})
    after.penalties = {"s1": {NB: 2.0}}
    assert [(r["student"], r["old_total"], r["new_total"], r["direction"]) for r in regrade.changes(data, after)] == [
        ("s1", 0.0, 0.0, "same total"), ("s2", 3.0, 4.0, "up")]


def test_text_from_a_submission_never_becomes_markup(tmp_path):
    data = _class(CLASS, {"s3": {f"{NB}/a": f"ValueError: {HOSTILE}"}})
    data.scores[HOSTILE] = dict(data.scores["s3"])
    data.messages[HOSTILE] = {f"{NB}/a": f"ValueError: {HOSTILE}"}
    data.not_graded[HOSTILE] = {NB: f"malformed JSON {HOSTILE}"}
    page = classreport.render(data, items.analyse(data), {}, tmp_path, tmp_path, f"gradebook {HOSTILE}")
    assert HOSTILE not in page
    assert page.count("<script>") == 1  # the page's own sorting script, nothing else
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert not re.search(r"<img[^>]+src=\"http", page)


def test_the_page_allows_no_request():
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"',
                       classreport.render(_class(CLASS), [], {}, Path("/nonexistent"), Path("/nonexistent"), "x"))[1]
    assert "default-src 'none'" in policy and "img-src data:" in policy


def test_a_full_score_of_an_older_test_is_not_said_to_be_a_part_score(tmp_path):
    """The regrade CSV's old message after a test's points went from 1 to 2: the old grade was 1 of 1, not 1 of 2."""
    import json

    from perfaudit.grade import classdata

    cell = {"cell_type": "code", "source": "", "outputs": [], "execution_count": 1,
            "metadata": {"nbgrader": {"grade": True, "grade_id": "correct_summary", "points": 1}}}
    path = tmp_path / "01.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    failures, worth = classdata._failures(path, "01")
    assert (failures, worth) == ({}, {"01/correct_summary": 1.0})
    assert classdata._no_error(1, 2, worth["01/correct_summary"]) == (
        "no error shown; 1 of 1 points when graded (the test is worth 2 now)")
    assert classdata._no_error(1, 2, 2) == "no error shown; 1 of 2 points"
