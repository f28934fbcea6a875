"""grades.csv through nbgrader's export plug-in point (perfaudit/grade/grades_csv.py): one file from either command."""

import csv
import json
import shutil

import pytest
from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT, paths
from perfaudit.bookkeeping.coursedir import nbgrader
from perfaudit.bookkeeping.coursedir import venv_first_on_path
from perfaudit.grade import gradebook, grades_csv, refused
from perfaudit.grade.intake import RECORD

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """The course's assignment with two notebooks (a: 2 points, b: 3) and four students: "Doe, Jane" (Canvas's
    own form) scored 2, a Moodle name that starts like a formula, one with notebook b withheld (no row), one who
    submitted nothing."""
    venv_first_on_path()  # nbgrader's Gradebook runs the `alembic` command
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with Gradebook(gradebook.sqlite_url(path), "course") as found:
        found.add_assignment(ASSIGNMENT)
        for name, points in (("a", 2), ("b", 3)):
            found.add_notebook(name, ASSIGNMENT)
            found.add_grade_cell(f"test_{name}", name, ASSIGNMENT, max_score=points, cell_type="code")
        found.add_student("jane_1", first_name="Jane", last_name="Doe, Jane")
        found.add_student("bob_2", first_name="=HYPERLINK(\"x\")", last_name="Bob")
        found.add_student("eve_3")
        found.add_student("ned_4")
        for student in ("jane_1", "bob_2", "eve_3"):
            found.add_submission(ASSIGNMENT, student)
        found.find_grade("test_a", "a", ASSIGNMENT, "jane_1").auto_score = 2
        found.db.commit()
        gradebook.withhold(found, ASSIGNMENT, "eve_3", ["b"])
    return path


@pytest.fixture
def course(template, tmp_path):
    """A course folder: the repository's nbgrader_config.py, the gradebook, a submitted/ folder with intake's record."""
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)
    gradebook.copy_template(template, tmp_path / "gradebook.db")
    (tmp_path / "submitted").mkdir()
    return tmp_path


def _rows(path):
    with open(path, newline="", encoding="utf-8") as found:
        return {row["student_id"]: row for row in csv.DictReader(found)}


# The template's grades.csv, byte for byte: students in the gradebook's order (by last name), quoted where a field
# holds a comma or a quote, a formula start behind an apostrophe, no score where a notebook is not graded.
EXPECTED = (
    "assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,late_submission_penalty,score,"
    "max_score,not_graded\n"
    f"{ASSIGNMENT},,,eve_3,,,,,,,5.0,b: {refused.AGAIN}\n"
    f"{ASSIGNMENT},,,ned_4,,,,0.0,0.0,0.0,5.0,\n"
    f"{ASSIGNMENT},,,bob_2,Bob,\"'=HYPERLINK(\"\"x\"\")\",,0.0,0.0,0.0,5.0,\n"
    f"{ASSIGNMENT},,,jane_1,\"Doe, Jane\",Jane,,2.0,0.0,2.0,5.0,\n"
)


def test_nbgrader_export_and_the_batch_write_the_same_file(course):
    """`nbgrader export` takes the plug-in from nbgrader_config.py; the batch calls it on the gradebook it has open."""
    nbgrader("export", "--to=nbgrader.csv", course_dir=course)
    with gradebook.opened(gradebook.sqlite_url(course / "gradebook.db"), "jax-performance-audit") as found:
        grades_csv.write(found, course / "ours.csv", course / "submitted", ASSIGNMENT)
    assert (course / "nbgrader.csv").read_bytes() == EXPECTED.encode()
    assert (course / "ours.csv").read_bytes() == EXPECTED.encode()
    header = (course / "ours.csv").read_text().splitlines()[0]
    assert header.split(",") == grades_csv.COLUMNS


def test_a_last_first_name_round_trips_and_a_formula_never_runs(course):
    nbgrader("export", course_dir=course)
    rows = _rows(course / "grades.csv")
    assert (rows["jane_1"]["last_name"], rows["jane_1"]["first_name"]) == ("Doe, Jane", "Jane")
    assert rows["jane_1"]["score"] == "2.0" and rows["jane_1"]["max_score"] == "5.0"
    assert rows["bob_2"]["first_name"] == "'=HYPERLINK(\"x\")"  # a spreadsheet shows it, never runs it
    assert rows["ned_4"]["score"] == "0.0" and rows["ned_4"]["not_graded"] == ""  # nothing submitted: 0, as nbgrader


def test_a_notebook_not_graded_has_its_reason_and_no_score(course):
    """Withheld in the gradebook: grade it again; refused at intake and not resolved: intake's reason."""
    nbgrader("export", course_dir=course)
    eve = _rows(course / "grades.csv")["eve_3"]
    assert (eve["raw_score"], eve["late_submission_penalty"], eve["score"]) == ("", "", "")
    assert eve["not_graded"] == f"b: {refused.AGAIN}"
    (course / "submitted" / RECORD).write_text(json.dumps({"eve_3": {"refused": {"b.ipynb": "two files claim it"}}}))
    nbgrader("export", course_dir=course)
    assert _rows(course / "grades.csv")["eve_3"]["not_graded"] == "b: not graded: two files claim it"


def test_nbgrader_s_student_and_assignment_filters_still_apply(course):
    nbgrader("export", "--ExportPlugin.student=jane_1", course_dir=course)
    assert list(_rows(course / "grades.csv")) == ["jane_1"]
    nbgrader("export", "--ExportPlugin.assignment=another", course_dir=course)
    assert _rows(course / "grades.csv") == {}


@pytest.mark.parametrize("text, shown", [("=1+1", "'=1+1"), ("+cmd", "'+cmd"), ("-2", "'-2"), ("@SUM(A1)", "'@SUM(A1)"),
                                         ("\tcmd", " cmd"), ("\r=1", "' =1"), (" =1", "' =1"), ("Ann Lee", "Ann Lee"),
                                         ("", ""), ("Doe\r=1+1", "Doe =1+1"), ("a\nb\x1b[2J", "a b [2J"),
                                         ("Jane;=1+1", "Jane;'=1+1"), ("Jane; -2", "Jane;' -2"), ("A;B", "A;B")])
def test_text_that_starts_like_a_formula_gets_an_apostrophe(text, shown):
    """Also after a semicolon, which a spreadsheet in many locales splits on and csv.writer does not quote; a bare CR
    (which csv.writer leaves unquoted with "\n" line ends, and readers take for a row's end) is a space."""
    assert grades_csv.neutral(text) == shown
