"""The class as data (perfaudit/grade/classdata.py): scores, totals, withheld notebooks and failure messages."""

import json

from perfaudit.grade import classdata
from perfaudit.grade.classdata import ClassData, GradedCell, cause

TESTS = [GradedCell("01", "a", 1.0), GradedCell("01", "b", 2.0), GradedCell("02", "c", 3.0)]


def _data():
    data = ClassData(tests=list(TESTS))
    data.scores = {"ann": {"01/a": 1.0, "01/b": 2.0, "02/c": 3.0}, "bob": {"01/a": 1.0}}
    data.penalties = {"ann": {"02": 1.5}}
    data.withheld = {"bob": {"02": "two files claim it"}}
    return data


def test_a_test_s_key_names_its_notebook_and_grade_id():
    assert TESTS[0].key == "01/a"


def test_scores_add_up_per_notebook_and_in_all_less_the_late_penalty():
    data = _data()
    assert data.notebooks() == {"01": 3.0, "02": 3.0}
    assert (data.notebook_score("ann", "02"), data.final_score("ann", "02")) == (3.0, 1.5)
    assert (data.total("ann"), data.final_total("ann")) == (6.0, 4.5)
    assert (data.notebook_score("bob", "01"), data.total("bob")) == (1.0, 1.0)  # a missing score counts 0


def test_a_student_with_a_notebook_withheld_is_graded_on_the_others_and_has_no_total():
    data = _data()
    assert data.graded("bob", "01") and not data.graded("bob", "02") and data.graded("ann", "02")
    assert data.complete("ann") and not data.complete("bob")


def test_a_cause_is_the_message_with_its_numbers_stripped_but_a_notebook_s_name_kept():
    assert cause("missing: no 02-retracing.ipynb; a random 31x31 float32 matrix") == \
        "missing: no 02-retracing.ipynb; a random #x# float# matrix"
    assert cause("expected -0.313795 at [6, 6], found +1.5e-05") == "expected # at [#, #], found #"
    assert cause("n-1 traces of f-2") == "n-# traces of f-#"  # a dash after a name is no sign


def test_one_message_is_the_error_s_name_and_first_line_cut_to_its_length():
    assert classdata.one_message({"ename": "AssertionError", "evalue": "  first line\nsecond\n"}) == (
        "AssertionError: first line")
    assert classdata.one_message({"ename": "KeyboardInterrupt", "evalue": ""}) == "KeyboardInterrupt"
    assert classdata.one_message({}) == "Error"
    long = classdata.one_message({"ename": "E", "evalue": "x" * 1000})
    assert long == "E: " + "x" * (classdata.MESSAGE_CHARS - 3) + " ..."


def test_a_full_score_of_an_older_test_is_not_said_to_be_a_part_score(tmp_path):
    """The regrade CSV's old message after a test's points went from 1 to 2: the old grade was 1 of 1, not 1 of 2."""
    cell = {"cell_type": "code", "source": "", "outputs": [], "execution_count": 1,
            "metadata": {"nbgrader": {"grade": True, "grade_id": "correct_summary", "points": 1}}}
    path = tmp_path / "01.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    failures, worth = classdata._failures(path, "01")
    assert (failures, worth) == ({}, {"01/correct_summary": 1.0})
    assert classdata._no_error(1, 2, worth["01/correct_summary"]) == (
        "no error shown; 1 of 1 points when graded (the test is worth 2 now)")
    assert classdata._no_error(1, 2, 2) == "no error shown; 1 of 2 points"


def test_each_failed_test_cell_gives_the_error_the_grader_wrote(tmp_path):
    def cell(grade_id, outputs, grade=True, cell_type="code"):
        return {"cell_type": cell_type, "source": "", "outputs": outputs, "execution_count": 1,
                "metadata": {"nbgrader": {"grade": grade, "grade_id": grade_id, "points": 2}}}
    error = {"output_type": "error", "ename": "AssertionError", "evalue": "expected 3", "traceback": []}
    printed = {"output_type": "stream", "name": "stdout", "text": "hello"}
    later = {**error, "evalue": "a second error"}
    cells = [cell("passed", [printed]), cell("failed", [printed, error, later]), cell("solution", [error], grade=False)]
    path = tmp_path / "01.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert classdata._failures(path, "01") == ({"01/failed": "AssertionError: expected 3"},
                                               {"01/passed": 2.0, "01/failed": 2.0})
