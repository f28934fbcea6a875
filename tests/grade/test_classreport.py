"""The class report (perfaudit/grade/classreport.py) on a class written out by hand (no grading: the fast tier).

tests/grade/test_report_graded.py grades real submissions and opens the page in Chromium; here the Scores section's
grades after the late penalty, and that text from a submission cannot become markup. The arithmetic the page shows
is tested in the files of items.py, regrade.py and classdata.py.
"""

import re
from pathlib import Path

from class_data import CLASS, NB, make_class

from perfaudit.grade import classreport, items, regrade
from perfaudit.grade.classdata import ClassData, GradedCell

HOSTILE = '<img src="http://127.0.0.1:9/x.png" onerror="alert(1)"><script>alert(2)</script>'


def test_scores_and_regrade_totals_are_grades_after_the_late_penalty():
    """The Scores section and the regrade's totals are the grades the summary and the LMS show (less nbgrader's
    late penalty); a test's pass count is the test's own score, whenever the notebook came."""
    data = make_class(CLASS)
    data.penalties = {"s1": {NB: 4.0}}  # s1's notebook came late: nbgrader's "zero" method took its 4 points
    found = items.distributions(data)
    assert found[NB] == ([0, 3, 0, 2, 3], 4.0) and found["total"] == ([0, 3, 0, 2, 3], 4.0)
    assert [item.passed for item in items.analyse(data)] == [3, 3, 3]
    after = make_class({**CLASS, "s1": (1, 1, 0), "s2": (1, 1, 2)})
    after.penalties = {"s1": {NB: 2.0}}
    assert [(r["student"], r["old_total"], r["new_total"], r["direction"]) for r in regrade.changes(data, after)] == [
        ("s1", 0.0, 0.0, "same total"), ("s2", 3.0, 4.0, "up")]


def test_text_from_a_submission_never_becomes_markup(tmp_path):
    data = make_class(CLASS, {"s3": {f"{NB}/a": f"ValueError: {HOSTILE}"}})
    data.scores[HOSTILE] = dict(data.scores["s3"])
    data.messages[HOSTILE] = {f"{NB}/a": f"ValueError: {HOSTILE}"}
    data.not_graded[HOSTILE] = {NB: f"malformed JSON {HOSTILE}"}
    page = classreport.render(data, items.analyse(data), {}, tmp_path, tmp_path, f"gradebook {HOSTILE}")
    assert HOSTILE not in page
    assert page.count("<script>") == 1  # the page's own sorting script, nothing else
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert not re.search(r"<img[^>]+src=\"http", page)


def test_the_page_allows_no_request():
    page = classreport.render(make_class(CLASS), [], {}, Path("/nonexistent"), Path("/nonexistent"), "x")
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)[1]
    assert "default-src 'none'" in policy and "img-src data:" in policy




def test_notebook_5_by_variant_shows_each_variant_s_scores_and_pass_rates():
    audit = "05-audit"
    data = ClassData(tests=[GradedCell(audit, "findings", 1.0), GradedCell(audit, "fix", 2.0)])
    scores = {"a1": (1, 2), "a2": (1, 0), "b1": (0, 2), "c1": (1, 2)}
    for student, values in scores.items():
        data.scores[student] = {t.key: v for t, v in zip(data.tests, values)}
    variant_of = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    page = classreport.render(data, items.analyse(data), {}, Path("/nonexistent"), Path("/nonexistent"), "x",
                              variant_of=variant_of)
    section = page[page.index('id="variants"'):page.index('id="regrade"')]
    rows = [found for row in re.findall(r"<tr>(.*?)</tr>", section)
            if (found := re.findall(r"<td[^>]*>(.*?)</td>", row))]
    # variant, students, mean (of 3), full marks; then each test's pass rate in A, B and C
    assert rows[:3] == [["A", "2", "2.00", "1"], ["B", "1", "2.00", "0"], ["C", "1", "3.00", "1"]]
    assert rows[3:] == [["findings", "1", "1.00", "0.00", "1.00"], ["fix", "2", "0.50", "1.00", "1.00"]]
