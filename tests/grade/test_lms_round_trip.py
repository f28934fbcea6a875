"""From an LMS download to grades and feedback the LMS takes back, through real nbgrader with a due date.

A Canvas download (one student on time, one marked LATE_ whose browser renamed the file) and a Moodle one are sorted
into submitted/, graded by python -m perfaudit.grade with nbgrader's late penalty set to "zero", and the exact
scores are read from the gradebook; then `nbgrader release_feedback` runs, and both exports are written.
"""

import csv
import io
import os
import subprocess
import sys
from datetime import datetime, timezone

import nbformat
import pytest
from courses import NB1, make_course
from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT
from perfaudit.fixtures import samples
from perfaudit.grade.run import Options, run
from perfaudit.instructor import course

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")]

DUE = datetime(2025, 3, 10, 12, 0, tzinfo=timezone.utc)
ON_TIME, LATE = DUE.timestamp() - 3600, DUE.timestamp() + 3600
COURSE_ID = "jax-performance-audit"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("lms"))
    with open(root / "nbgrader_config.py", "a") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"  # a late notebook scores 0\n')
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gradebook:
        gradebook.update_or_create_assignment(ASSIGNMENT, duedate=DUE.replace(tzinfo=None))
    download = root / "download"
    download.mkdir()
    correct = samples.submission(samples.SAMPLES["correct"], 1)
    for entry, stamp in {f"ontimeann_101_5001_{NB1}.ipynb": ON_TIME,
                         f"latebob_LATE_102_5002_{NB1} (1).ipynb": LATE,
                         f"Cy Moo_777_assignsubmission_file_{NB1}.ipynb": ON_TIME,
                         # two files claim Dee's notebook 3: refused, so neither 3 nor 4 (which reuses it) is graded
                         f"Dee Dup_888_assignsubmission_file_{NB1}.ipynb": ON_TIME,
                         "Dee Dup_888_assignsubmission_file_03-evidence.ipynb": ON_TIME,
                         "Dee Dup_888_assignsubmission_file_03-evidence (1).ipynb": ON_TIME}.items():
        nbformat.write(correct, download / entry)
        os.utime(download / entry, (stamp, stamp))
    hand_placed = root / "submitted" / "handy_900" / ASSIGNMENT  # no timestamp.txt, no submission_secret.txt
    hand_placed.mkdir(parents=True)
    nbformat.write(correct, hand_placed / f"{NB1}.ipynb")
    out = io.StringIO()
    run(Options(course_dir=root, download=download, workers=2, progress=False, canary=False), out=out)
    return root, out.getvalue()


def test_the_late_penalty_applies_from_the_lms_s_time_and_feedback_is_released(graded):
    root, out = graded
    assert "LATE (the LMS says so) latebob_102: submitted 2025-03-10 13:00:00.000000 UTC" in out
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gradebook:
        found = {s: gradebook.find_submission_notebook(NB1, ASSIGNMENT, s)
                 for s in ("ontimeann_101", "latebob_102", "cy-moo_777", "handy_900")}
        assert {s: (nb.score, nb.late_submission_penalty or 0) for s, nb in found.items()} == {
            "ontimeann_101": (5, 0), "latebob_102": (5, 5), "cy-moo_777": (5, 0), "handy_900": (5, 0)}, out
        # Formgrader lists "last, first": the LMS's names, never "None, None"
        assert {s.id: (s.last_name, s.first_name) for s in gradebook.students} == {
            "ontimeann_101": ("ontimeann", None), "latebob_102": ("latebob", None), "cy-moo_777": ("Moo", "Cy"),
            "handy_900": (None, None), "dee-dup_888": ("Dup", "Dee")}

    # A folder placed by hand, as `make grade` accepts it, is released too: nbgrader reads timestamp.txt and
    # submission_secret.txt beside each page, and the grader gave the feedback folder both.
    (root / "exchange").mkdir(exist_ok=True)  # the exchange nbgrader_config.py names (make lab makes it too)
    released = course.nbgrader("release_feedback", ASSIGNMENT, course_dir=root)
    pages = list((root / "exchange" / COURSE_ID / "feedback").glob("*.html"))
    assert len(pages) == 5, released
    assert not list((root / "submitted" / "handy_900" / ASSIGNMENT).glob("*.txt")), "submitted/ is never written"


def test_grades_csv_carries_the_lms_s_names(graded):
    root, _ = graded
    rows = {row["student_id"]: (row["last_name"], row["first_name"])
            for row in csv.DictReader((root / "grades.csv").open())}
    assert rows == {"ontimeann_101": ("ontimeann", ""), "latebob_102": ("latebob", ""), "cy-moo_777": ("Moo", "Cy"),
                    "handy_900": ("", ""), "dee-dup_888": ("Dup", "Dee")}


def test_the_run_s_setting_is_said_once(graded):
    _, out = graded
    for opening in ("Graded with:", "Student code:", "Environment check:"):
        assert sum(line.startswith(opening) for line in out.splitlines()) == 1, out
    assert "intake: 4 files for 4 students" in out


def test_a_notebook_refused_at_intake_is_not_graded_and_needs_you(graded):
    root, out = graded
    why = "2 files claim dee-dup_888/03-evidence.ipynb; pick one"
    assert f"NOT PLACED Dee Dup_888_assignsubmission_file_03-evidence.ipynb: {why}" in out
    needs_you = out.split("\nNeeds you (")[1].split("\n\n")[0].splitlines()[1:]
    assert needs_you == [
        f"  dee-dup_888 03-evidence: not graded: {why}",
        "  dee-dup_888 04-integrated-audit: not graded: it reuses 03-evidence.ipynb, which is not graded until you "
        f"resolve it ({why})"]
    row = next(line.split() for line in out.splitlines() if line.startswith("dee-dup_888 "))
    assert row == ["dee-dup_888", "5", "0", "not", "graded", "not", "graded", "0", "not", "graded"]  # 05: none sent
    assert f"  dee-dup_888 03-evidence (not graded): not graded: {why}" in out
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gradebook:
        assert gradebook.find_submission_notebook(NB1, ASSIGNMENT, "dee-dup_888").score == 5
    assert not (root / "autograded" / "dee-dup_888" / ASSIGNMENT / "03-evidence.ipynb").exists()
    assert not (root / "autograded" / "dee-dup_888" / ASSIGNMENT / "04-integrated-audit.ipynb").exists()


def test_both_lmss_get_their_files(graded):
    root, _ = graded
    (root / "canvas.csv").write_text("Student,ID,SIS User ID,SIS Login ID,Section,Audit (9)\n"
                                     '"Ann, On Time",101,,,,\n"Bob, Late",102,,,,\n')
    (root / "moodle.csv").write_text("Identifier,Full name,Email address,Status,Grade,Maximum Grade,"
                                     "Grade can be changed,Last modified (submission),Last modified (grade),"
                                     "Feedback comments\n"
                                     # the LMS's maximum is the course's 26 points: nothing to scale
                                     "Participant 777,Cy Moo,cy@example.org,Submitted,,26.00,Yes,-,-,\n")
    for lms in ("canvas", "moodle"):
        done = subprocess.run([sys.executable, "-m", "perfaudit.grade", "--export", lms, "--roster",
                               str(root / f"{lms}.csv"), "--course-dir", str(root)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    canvas = list(csv.reader((root / "exports" / "canvas-grades.csv").open()))
    assert [row[-1] for row in canvas] == ["Audit (9)", "5", "0"]
    moodle = list(csv.reader((root / "exports" / "moodle-grades.csv").open()))
    assert moodle[1][4] == "5"


def test_a_grade_made_against_another_source_notebook_is_graded_again(graded, tmp_path):
    """A hidden test edited after grading: the next `make grade` grades everyone again, and says why, instead of
    keeping grades made against the old test as "unchanged"."""
    import shutil

    root = shutil.copytree(graded[0], tmp_path / "course", symlinks=True)  # the module's course stays as it was
    source = root / "source" / ASSIGNMENT / f"{NB1}.ipynb"
    nb = nbformat.read(source, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "correct_summary")
    cell.source = cell.source.replace("### END HIDDEN TESTS",
                                      "assert True  # edited after grading\n### END HIDDEN TESTS")
    nbformat.write(nb, source)
    out = io.StringIO()
    batch = run(Options(course_dir=root, workers=2, progress=False, canary=False), out=out)
    students = ["cy-moo_777", "dee-dup_888", "handy_900", "latebob_102", "ontimeann_101"]
    assert sorted(batch.graded) == students and batch.skipped == [], out.getvalue()
    assert batch.stale == {student: [NB1] for student in students}
    assert ("Graded again, their source notebook changed since they were graded (tests, hidden tests or points): "
            "5 students") in out.getvalue()
    assert f"ontimeann_101: graded again: the source of {NB1} changed (5 -> 5)" in out.getvalue()
    again = run(Options(course_dir=root, workers=2, progress=False, canary=False), out=io.StringIO())
    assert again.graded == [] and again.stale == {}
