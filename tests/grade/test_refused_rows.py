"""A notebook refused at intake has no row in the gradebook until it is graded: taken out, put back, never a 0."""

import pytest
from nbgrader.api import Gradebook

from perfaudit.grade import gradebook, refused
from perfaudit.grade.worker import venv_first_on_path

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


@pytest.fixture
def course_gb(tmp_path):
    """An assignment of two notebooks (a: 2 points, b: 3), one student's submission with every row, a scored 2."""
    venv_first_on_path()  # nbgrader's Gradebook runs the `alembic` command
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "course") as found:
        found.add_assignment("hw")
        for name, points in (("a", 2), ("b", 3)):
            found.add_notebook(name, "hw")
            found.add_grade_cell(f"test_{name}", name, "hw", max_score=points, cell_type="code")
            found.add_solution_cell(f"answer_{name}", name, "hw")
        found.add_student("eve")
        found.add_submission("hw", "eve")
        found.find_grade("test_a", "a", "hw", "eve").auto_score = 2
        found.db.commit()
        yield found


def test_a_withheld_notebook_has_no_row_and_its_student_no_total(course_gb):
    gradebook.withhold(course_gb, "hw", "eve", ["b"])
    assert [nb.name for nb in course_gb.find_submission("hw", "eve").notebooks] == ["a"]
    assert gradebook.withheld(course_gb, "hw") == {"eve": ["b"]}
    assert gradebook.totals(course_gb, "hw") == {"eve": None}
    assert gradebook.scores(course_gb, "hw") == {"eve": {"a": (2, 2)}}
    assert gradebook.pass_counts(course_gb, "hw") == [("a", "test_a", 2, 1, 1), ("b", "test_b", 3, 0, 0)]
    gradebook.withhold(course_gb, "hw", "eve", ["b"])  # again: nothing to take out
    assert gradebook.withheld(course_gb, "hw") == {"eve": ["b"]}


def test_a_withheld_notebook_gets_its_row_back_once_graded(course_gb):
    gradebook.withhold(course_gb, "hw", "eve", ["b"])
    gradebook.apply_submission(course_gb, "hw", "eve", {"timestamp": None, "notebooks": {
        "a": {"late_submission_penalty": None, "grades": {"test_a": 2}, "comments": {"answer_a": None}},
        "b": {"late_submission_penalty": None, "grades": {"test_b": 3}, "comments": {"answer_b": None}}}})
    assert gradebook.withheld(course_gb, "hw") == {}
    assert gradebook.totals(course_gb, "hw") == {"eve": 5}
    assert [c.name for c in course_gb.find_submission_notebook("b", "hw", "eve").comments] == ["answer_b"]


def test_nothing_graded_is_0_for_each_notebook_but_the_one_withheld(course_gb):
    gradebook.withhold(course_gb, "hw", "eve", ["a", "b"])
    gradebook.record_empty(course_gb, "hw", "eve")  # what the writer does, then withholds again
    assert gradebook.totals(course_gb, "hw") == {"eve": 0}
    gradebook.withhold(course_gb, "hw", "eve", ["b"])
    assert gradebook.scores(course_gb, "hw") == {"eve": {"a": (0, 2)}}


def test_grades_csv_gives_no_score_to_a_student_with_a_notebook_not_graded(tmp_path):
    path = tmp_path / "grades.csv"
    path.write_text("assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,"
                    "late_submission_penalty,score,max_score\n"
                    "hw,None,None,ann_1,Doe, Ann,None,5.0,0.0,5.0,5.0\n"  # a comma in a name: nbgrader writes it so
                    "hw,None,None,eve_2,Two,Eve,None,2.0,0.0,2.0,5.0\n")
    refused.mark_grades_csv(path, {"eve_2": {"b": "not graded: 2 files claim eve_2/b.ipynb; pick one",
                                             "c": 'not graded: it reuses b, "pick one"'}})
    assert path.read_text().splitlines() == [
        "assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,late_submission_penalty,score,"
        "max_score,not_graded",
        "hw,None,None,ann_1,Doe, Ann,None,5.0,0.0,5.0,5.0,",
        'hw,None,None,eve_2,Two,Eve,None,,,,5.0,"b: not graded: 2 files claim eve_2/b.ipynb; pick one; c: not '
        'graded: it reuses b, ""pick one"""']
