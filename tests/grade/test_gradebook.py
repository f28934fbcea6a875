"""The one-writer rule's gradebook steps (perfaudit/grade/gradebook.py), on small sqlite gradebooks."""

import sqlite3

import pytest
from nbgrader.api import Gradebook

from perfaudit.bookkeeping.coursedir import venv_first_on_path
from perfaudit.grade import gradebook

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """An assignment of two notebooks (a: 2 points, b: 3), one student's submission with every row, a scored 2;
    made once (nbgrader runs the `alembic` command for a new gradebook), copied for each test."""
    venv_first_on_path()  # nbgrader's Gradebook runs the `alembic` command
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with Gradebook(gradebook.sqlite_url(path), "course") as found:
        found.add_assignment("hw")
        for name, points in (("a", 2), ("b", 3)):
            found.add_notebook(name, "hw")
            found.add_grade_cell(f"test_{name}", name, "hw", max_score=points, cell_type="code")
            found.add_solution_cell(f"answer_{name}", name, "hw")
        found.add_student("eve")
        found.add_submission("hw", "eve")
        found.find_grade("test_a", "a", "hw", "eve").auto_score = 2
        found.db.commit()
    return path


@pytest.fixture
def course_gb(template, tmp_path):
    gradebook.copy_template(template, tmp_path / "gradebook.db")
    with gradebook.opened(gradebook.sqlite_url(tmp_path / "gradebook.db"), "course") as found:
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


def test_a_scratch_gradebook_s_results_come_back_as_plain_data_and_go_into_the_course_s(course_gb, template,
                                                                                        tmp_path):
    scratch = tmp_path / "scratch.db"
    gradebook.copy_template(template, scratch)
    with Gradebook(gradebook.sqlite_url(scratch), "course") as graded:
        graded.add_student("ann")
        graded.add_submission("hw", "ann", timestamp="2026-01-02 10:00:00")
        graded.find_grade("test_b", "b", "hw", "ann").auto_score = 3
        graded.find_comment("answer_a", "a", "hw", "ann").auto_comment = "no answer"
        graded.find_submission_notebook("b", "hw", "ann").late_submission_penalty = 1
        graded.db.commit()
    results = gradebook.read_submission(gradebook.sqlite_url(scratch), "course", "hw", "ann")
    assert results == {"timestamp": "2026-01-02T10:00:00", "notebooks": {
        "a": {"late_submission_penalty": None, "grades": {"test_a": None}, "comments": {"answer_a": "no answer"}},
        "b": {"late_submission_penalty": 1, "grades": {"test_b": 3}, "comments": {"answer_b": None}}}}
    gradebook.apply_submission(course_gb, "hw", "ann", results)
    assert gradebook.scores(course_gb, "hw")["ann"] == {"a": (0, 2), "b": (2, 3)}  # less the late penalty
    assert gradebook.penalties(course_gb, "hw") == {"ann": {"b": (1, 3)}}
    assert gradebook.maxima(course_gb, "hw") == {"a": 2, "b": 3}
    assert course_gb.find_grade("test_a", "a", "hw", "ann").needs_manual_grade  # no score: a person looks
    assert not course_gb.find_grade("test_b", "b", "hw", "ann").needs_manual_grade


def test_a_manual_score_still_asks_for_a_look_after_a_new_autograde(course_gb):
    course_gb.find_grade("test_a", "a", "hw", "eve").manual_score = 1
    course_gb.db.commit()
    gradebook.apply_submission(course_gb, "hw", "eve", {"timestamp": None, "notebooks": {
        "a": {"late_submission_penalty": None, "grades": {"test_a": 2}, "comments": {}}}})
    assert course_gb.find_grade("test_a", "a", "hw", "eve").needs_manual_grade


def test_the_template_holds_the_definitions_and_the_course_s_stamp_and_no_student(template, tmp_path):
    gradebook.make_template(gradebook.sqlite_url(template), tmp_path / "template.db", "course")
    with sqlite3.connect(tmp_path / "template.db") as made, sqlite3.connect(template) as course:
        for table in ("alembic_version", "assignment", "notebook", "grade_cells"):
            assert made.execute(f"SELECT * FROM {table}").fetchall() == course.execute(
                f"SELECT * FROM {table}").fetchall()
        assert course.execute("SELECT count(*) FROM student").fetchone() == (1,)
        for table in gradebook.SUBMISSION_TABLES:
            assert made.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table


def test_students_get_the_lms_s_name_unless_they_have_one(course_gb):
    for student in ("ann", "bob", "cyd", "dan"):
        course_gb.update_or_create_student(student)
    course_gb.update_or_create_student("dan", first_name="Dan", last_name="Set")
    gradebook.name_students(course_gb, {"ann": {"lms": "moodle", "name": "Ann Lee Doe"},
                                        "bob": {"lms": "canvas", "name": "doebob"},
                                        "cyd": {"lms": "moodle", "name": "Cyd"},
                                        "dan": {"lms": "moodle", "name": "Other Name"}})
    assert {s.id: (s.first_name, s.last_name) for s in course_gb.students} == {
        "ann": ("Ann", "Lee Doe"), "bob": (None, "doebob"), "cyd": ("Cyd", "Cyd"), "dan": ("Dan", "Set"),
        "eve": (None, None)}


def test_an_lms_name_with_a_comma_or_a_formula_is_taken_as_it_is(course_gb):
    """grades.csv quotes its fields and neutralizes formulas (perfaudit/grade/grades_csv.py): a Moodle profile name
    is the student's own, whatever it holds but control characters."""
    for student in ("ann", "bob", "cyd"):
        course_gb.update_or_create_student(student)
    gradebook.name_students(course_gb, {"ann": {"lms": "moodle", "name": "Ann ,,,20.0,0.0,20.0,20.0"},
                                        "bob": {"lms": "moodle", "name": "Bob =cmd|' -C calc'!A0"},
                                        "cyd": {"lms": "moodle", "name": "Cyd\x1b[2JLee"}})
    assert {s.id: (s.first_name, s.last_name) for s in course_gb.students} == {
        "ann": ("Ann", ",,,20.0,0.0,20.0,20.0"), "bob": ("Bob", "=cmd|' -C calc'!A0"), "cyd": (None, None),
        "eve": (None, None)}
