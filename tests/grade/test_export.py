"""Grades and feedback back to the LMS: Canvas's import CSV and Moodle's worksheet, from a real gradebook."""

import csv
import io
import zipfile

import pytest
from courses import make_course
from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT
from perfaudit.grade import export, intake

# nbgrader warns about its own session when a submission is made through its API (the batch filters it too).
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

NB1, NB2 = "01-first-call-vs-steady", "02-retracing"
NOTEBOOKS = {f"{NB1}.ipynb", f"{NB2}.ipynb", "03-evidence.ipynb", "04-integrated-audit.ipynb", "05-audit.ipynb"}

CANVAS_ROSTER = """\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Current Score,Performance audit (98765)
    Points Possible,,,,,,26
"Doe, Jane",12345,s-12345,jdoe,Lab A,,
"Roe, Frank",222,s-222,froe,Lab B,,
"Nobody, Ned",999,s-999,nned,Lab B,,
"""

MOODLE_WORKSHEET = """Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,\
Last modified (submission),Last modified (grade),Feedback comments
Participant 777,Ana Lopez,ana@example.org,Submitted for grading,,100.00,Yes,-,-,
Participant 778,Max Mann,max@example.org,No submission,,100.00,Yes,-,-,
"""


def _grade(gradebook, student, points, late_penalty=0.0):
    """Set a student's auto score on each test of notebook 1 until `points` are given; notebook 2 scores 0."""
    gradebook.update_or_create_student(student)
    submission = gradebook.update_or_create_submission(ASSIGNMENT, student)
    for nb in submission.notebooks:
        nb.late_submission_penalty = late_penalty if nb.name == NB1 else 0.0
        for grade in nb.grades:
            given = min(points, grade.max_score) if nb.name == NB1 else 0.0
            grade.auto_score, points = given, points - given
    gradebook.db.commit()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("export"))
    download = root / "download"
    for entry in ("doejane_12345_5001_01-first-call-vs-steady.ipynb",
                  "roefrank_LATE_222_5002_01-first-call-vs-steady.ipynb",
                  "Ana Lopez_777_assignsubmission_file_/01-first-call-vs-steady (1).ipynb",
                  "kimlee_333_5003_02-retracing.ipynb",
                  # two files claim notebook 3: refused at intake, so notebook 3 and 4 are not graded (refused.py)
                  "dupdan_444_5004_01-first-call-vs-steady.ipynb", "dupdan_444_5004_03-evidence.ipynb",
                  "dupdan_444_5004_03-evidence (1).ipynb"):
        (download / entry).parent.mkdir(parents=True, exist_ok=True)
        (download / entry).write_bytes(b"{}")
    intake.sort_into_submitted(download, root / "submitted", ASSIGNMENT, NOTEBOOKS)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "jax-performance-audit") as gradebook:
        _grade(gradebook, "doejane_12345", 5)
        _grade(gradebook, "roefrank_222", 4, late_penalty=1.0)  # 4 points, 1 taken for lateness
        _grade(gradebook, "ana-lopez_777", 3)
        _grade(gradebook, "kimlee_333", 2)  # not in the Canvas roster
        _grade(gradebook, "dupdan_444", 5)  # what a grade of the notebooks placed would be: never exported
    for student in ("doejane_12345", "roefrank_222", "ana-lopez_777"):
        folder = root / "feedback" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{NB1}.html").write_text(f"feedback for {student}")
    (root / "canvas.csv").write_text(CANVAS_ROSTER, encoding="utf-8")
    (root / "moodle.csv").write_text(MOODLE_WORKSHEET)
    return root


def _rows(path):
    return list(csv.reader(io.StringIO(path.read_text())))


def test_canvas_gets_its_import_columns_and_each_rostered_student_s_grade_after_the_late_penalty(course):
    done = export.export("canvas", course, course / "canvas.csv")
    assert _rows(done.grades) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Performance audit (98765)"],
        ["    Points Possible", "", "", "", "", "26"],
        ["Doe, Jane", "12345", "s-12345", "jdoe", "Lab A", "5"],
        ["Roe, Frank", "222", "s-222", "froe", "Lab B", "3"],
        ["Nobody, Ned", "999", "s-999", "nned", "Lab B", ""],  # no submission: Canvas keeps what it has
    ]
    assert "  NOT IN ROSTER ana-lopez_777: 3/26 not exported" in done.lines
    assert "  NOT IN ROSTER kimlee_333: 2/26 not exported" in done.lines
    with zipfile.ZipFile(done.feedback) as bundle:
        assert sorted(bundle.namelist()) == [f"doejane_12345_5001_{NB1}-feedback.html",
                                             f"roefrank_222_5002_{NB1}-feedback.html"]
        assert bundle.read(f"roefrank_222_5002_{NB1}-feedback.html") == b"feedback for roefrank_222"


def test_moodle_gets_its_worksheet_back_with_grades_scaled_to_its_maximum(course):
    done = export.export("moodle", course, course / "moodle.csv")
    rows = _rows(done.grades)
    assert rows[0] == MOODLE_WORKSHEET.splitlines()[0].split(",")
    assert rows[1][:6] == ["Participant 777", "Ana Lopez", "ana@example.org", "Submitted for grading", "11.54",
                           "100.00"]
    assert rows[2][4] == ""
    assert "  scaled: 26 points here are 100 in the LMS" in done.lines
    with zipfile.ZipFile(done.feedback) as bundle:
        assert bundle.namelist() == [f"Ana Lopez_777_assignsubmission_file_{NB1}-feedback.html"]


def test_a_roster_with_several_assignments_needs_the_column_named(course, tmp_path):
    roster = tmp_path / "two.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Audit (1),Quiz (2)\n")
    with pytest.raises(SystemExit, match="Name the assignment's column with --lms-column; the roster has 2"):
        export.export("canvas", course, roster, out_dir=tmp_path)
    done = export.export("canvas", course, roster, column="Audit (1)", out_dir=tmp_path)
    assert _rows(done.grades) == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Audit (1)"]]


def test_an_lms_id_two_graded_students_share_is_exported_for_neither(tmp_path):
    """A folder named like a classmate's Canvas id (no intake record: its id is read from its name) never takes the
    classmate's row, and a student id made to forge lines is shown escaped, on one line."""
    roster = tmp_path / "canvas.csv"
    roster.write_text(CANVAS_ROSTER, encoding="utf-8")
    record = {"doejane_12345": {"lms": "canvas", "name": "doejane", "id": "12345", "submission": "5001", "late": False}}
    forger = "x\n  NOT IN ROSTER doejane_12345: 20/20 not exported\x1b[2J"
    grades = {"doejane_12345": (5.0, 26.0), "takes-jane-s-row_12345": (26.0, 26.0), "roefrank_222": (3.0, 26.0),
              forger: (1.0, 26.0)}
    text, lines = export.canvas(roster, grades, record)
    assert [row[-1] for row in csv.reader(io.StringIO(text))] == ["Performance audit (98765)", "26", "", "3", ""]
    assert lines == [
        "1 of 4 graded students matched to the roster's 3 students",
        "  SAME LMS ID 12345 for doejane_12345, takes-jane-s-row_12345: not exported for any of them; rename the "
        "folder that is not this student's and grade it again",
        "  NOT IN ROSTER doejane_12345: 5/26 not exported",
        "  NOT IN ROSTER takes-jane-s-row_12345: 26/26 not exported",
        "  NOT IN ROSTER x\\n NOT IN ROSTER doejane_12345: 20/20 not exported\\x1b[2J: 1/26 not exported",
    ]


def test_make_feedback_writes_every_lms_s_export_again_not_only_the_last(course):
    export.export("canvas", course, course / "canvas.csv")
    export.export("moodle", course, course / "moodle.csv")
    assert [lms for lms, _, _ in export.exports_made(course)] == ["canvas", "moodle"]
    for lms in ("canvas", "moodle"):
        (course / "exports" / f"{lms}-grades.csv").unlink()
    lines = export.export_again(course)
    assert [line for line in lines if line.startswith("export to")] == [
        f"export to canvas written again (as last asked: --export canvas --roster {course / 'canvas.csv'})",
        f"export to moodle written again (as last asked: --export moodle --roster {course / 'moodle.csv'})"]
    assert _rows(course / "exports" / "canvas-grades.csv")[2][-1] == "5"
    assert _rows(course / "exports" / "moodle-grades.csv")[1][4] == "11.54"


def test_a_student_with_a_notebook_refused_at_intake_gets_nothing_exported_until_it_is_resolved(course, tmp_path):
    roster = tmp_path / "canvas.csv"
    roster.write_text(CANVAS_ROSTER + '"Dan, Dup",444,s-444,ddup,Lab A,,\n', encoding="utf-8")
    done = export.export("canvas", course, roster, out_dir=tmp_path)
    assert _rows(done.grades)[-1] == ["Dan, Dup", "444", "s-444", "ddup", "Lab A", ""]
    why = "2 files claim dupdan_444/03-evidence.ipynb; pick one"
    assert [line for line in done.lines if "dupdan_444" in line] == [
        f"  NEEDS YOU dupdan_444: nothing exported until you resolve it; 03-evidence not graded: {why}",
        "  NEEDS YOU dupdan_444: nothing exported until you resolve it; 04-integrated-audit not graded: it reuses "
        f"03-evidence.ipynb, which is not graded until you resolve it ({why})"]
    chosen = course / "submitted" / "dupdan_444" / ASSIGNMENT / "03-evidence.ipynb"
    chosen.write_bytes(b"{}")  # the instructor puts the file they choose in the student's folder
    try:
        done = export.export("canvas", course, roster, out_dir=tmp_path)
        assert _rows(done.grades)[-1][-1] == "5"
        assert not [line for line in done.lines if "NEEDS YOU" in line]
    finally:
        chosen.unlink()
