"""A whole term on one course directory, as an instructor runs it, through real nbgrader, kernels and gradebook.

The release (make release: no gradebook), a due date set with `nbgrader db assignment add`, the first grading of a
Canvas download (one of its notebooks from another assignment, one extra notebook), a second download with two
resubmissions (one of them late) and a late newcomer, a score overridden and extra credit given in Formgrader, in
headless Chromium, `--feedback-only` bringing feedback and the Canvas export in line, and
`make reset-course` for the next term. Every student submits notebook 1 alone, so grading stays short; the
scores are read from the gradebook.
"""

import csv
import io
import shutil
import subprocess
import sys
import time
import zipfile
from datetime import datetime, timezone

import nbformat
import pytest
from courses import NB1
from formgrader import (formgrader_in_a_page, give_extra_credit, open_formgrader, open_notebook, set_score,
                        students_listed)
from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT, paths
from perfaudit.fixtures import samples
from perfaudit.grade import intake
from perfaudit.grade.run import NothingToGrade, Options, run
from perfaudit.instructor import course

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")]

COURSE_ID = "jax-performance-audit"
DUE = datetime(2025, 3, 10, 12, 0, tzinfo=timezone.utc)
FIRST_WEEK, SECOND_WEEK, AFTER_DUE = (DUE.timestamp() - 86400 * 3, DUE.timestamp() - 3600, DUE.timestamp() + 7200)


def _bytes(nb):
    return nbformat.writes(nb).encode()


CORRECT = _bytes(samples.submission(samples.SAMPLES["correct"], 1))
UNTOUCHED = _bytes(samples.submission(samples.SAMPLES["untouched"], 1))
OTHER_ASSIGNMENT = _bytes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    "answer = 42", metadata={"nbgrader": {"grade_id": "hw3_q1", "solution": True, "grade": False, "locked": False,
                                          "schema_version": 3}})]))
NOTES = _bytes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("my notes")]))


def canvas_zip(path, entries):
    """A Canvas download: {name: (bytes, epoch seconds the LMS stored)}, zip times being this machine's local time."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, (data, epoch) in entries.items():
            archive.writestr(zipfile.ZipInfo(name, time.localtime(epoch)[:6]), data)
    return path


def _grade(root, download=None):
    out = io.StringIO()
    started = time.monotonic()
    batch = run(Options(course_dir=root, download=download, workers=2, progress=False), out=out)
    return batch, out.getvalue(), time.monotonic() - started


def _cli(root, *args):
    return subprocess.run([sys.executable, "-m", "perfaudit.grade", *args], cwd=root, capture_output=True, text=True,
                          timeout=600)


def test_a_whole_term(tmp_path, browser, artifacts):
    root = tmp_path / "course"
    shutil.copytree(paths.SOURCE, root / "source" / ASSIGNMENT)
    for name in ("nbgrader_config.py", "Makefile"):
        shutil.copy(paths.ROOT / name, root)
    with open(root / "nbgrader_config.py", "a") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"  # a late notebook scores 0\n')
    course.nbgrader("generate_assignment", ASSIGNMENT, "--force", "--no-db", course_dir=root)  # make release
    course.nbgrader("db", "assignment", "add", ASSIGNMENT, "--duedate=2025-03-10 12:00:00 UTC", course_dir=root)

    # Week 1: the first grading after the release, the environment check run and kept.
    first = canvas_zip(tmp_path / "first.zip", {
        f"ann_101_5001_{NB1}.ipynb": (CORRECT, FIRST_WEEK),
        "ann_101_5001_notes.ipynb": (NOTES, FIRST_WEEK),
        f"bob_102_5002_{NB1}.ipynb": (UNTOUCHED, FIRST_WEEK),
        f"cy_103_5003_{NB1}.ipynb": (UNTOUCHED, FIRST_WEEK),
        "cy_103_5003_02-retracing.ipynb": (OTHER_ASSIGNMENT, FIRST_WEEK),
    })
    batch, out, seconds = _grade(root, first)
    print(out)
    print(f"first grading: {seconds:.1f} s, environment check {batch.seconds['environment check']:.1f} s")
    assert f"The gradebook had no assignment '{ASSIGNMENT}': recorded it from source/" in out
    assert "Environment check: passed for this environment (fingerprint " in out
    assert (root / "gradebook.db.environment.json").is_file()
    assert course.totals(root) == {"ann_101": 5, "bob_102": 0, "cy_103": 0}, out
    assert "  ann_101 extra notebook 'notes.ipynb': not one of performance-audit's notebooks" in out
    assert ("  cy_103 02-retracing (0/6): a notebook of another assignment: none of 02-retracing's graded cells, but "
            "'hw3_q1'; not graded (ask the student for this assignment's 02-retracing.ipynb)\n") in out
    assert "was deleted" not in out

    # Week 2: Bob resubmits on time, Cy late, Dee submits for the first time late; Ann's files are the same.
    second = canvas_zip(tmp_path / "second.zip", {
        f"ann_101_5001_{NB1}.ipynb": (CORRECT, FIRST_WEEK),
        "ann_101_5001_notes.ipynb": (NOTES, FIRST_WEEK),
        f"bob_102_6002_{NB1}-1.ipynb": (CORRECT, SECOND_WEEK),
        f"cy_LATE_103_6003_{NB1}-1.ipynb": (CORRECT, AFTER_DUE),
        f"dee_LATE_104_6004_{NB1}.ipynb": (CORRECT, AFTER_DUE),
    })
    batch, out, seconds = _grade(root, second)
    print(out)
    print(f"second grading: {seconds:.1f} s, environment check {batch.seconds['environment check']:.1f} s")
    assert "intake: 3 files for 3 students, 1 unchanged since an earlier intake" in out
    assert "  RESUBMITTED bob_102: the files of 2025-03-10 11:00:00.000000 UTC replace those of" in out
    assert "  LATE (the LMS says so) cy_103: submitted 2025-03-10 14:00:00.000000 UTC" in out
    assert "  LATE (the LMS says so) dee_104: submitted 2025-03-10 14:00:00.000000 UTC" in out
    assert "Environment check: passed earlier for this environment (fingerprint " in out
    assert "bob_102: resubmitted: graded again (0 -> 5)" in out and "cy_103: resubmitted: graded again (0 -> 0)" in out
    assert "  cy_103 01-first-call-vs-steady (0/5): late: nbgrader's late penalty took 5 of 5 points" in out
    assert "  dee_104 01-first-call-vs-steady (0/5): late: nbgrader's late penalty took 5 of 5 points" in out
    assert course.totals(root) == {"ann_101": 5, "bob_102": 5, "cy_103": 0, "dee_104": 0}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gradebook:  # Formgrader's "last, first"
        assert {s.id: (s.last_name, s.first_name) for s in gradebook.students} == {
            "ann_101": ("ann", None), "bob_102": ("bob", None), "cy_103": ("cy", None), "dee_104": ("dee", None)}
    assert sorted(batch.graded) == ["bob_102", "cy_103", "dee_104"] and batch.skipped == ["ann_101"]
    history = list((root / "submitted" / "bob_102" / intake.HISTORY).iterdir())
    assert len(history) == 1 and (history[0] / f"{NB1}.ipynb").read_bytes() == UNTOUCHED
    assert (root / "submitted" / "bob_102" / ASSIGNMENT / f"{NB1}.ipynb").read_bytes() == CORRECT

    (root / "canvas.csv").write_text("Student,ID,SIS User ID,SIS Login ID,Section,Audit (9)\n"
                                     "Ann,101,,,,\nBob,102,,,,\nCy,103,,,,\nDee,104,,,,\n")
    done = _cli(root, "--export", "canvas", "--roster", "canvas.csv")
    assert done.returncode == 0, done.stderr
    assert [row[-1] for row in csv.reader((root / "exports" / "canvas-grades.csv").open())] == [
        "Audit (9)", "5", "5", "0", "0"]

    # Manual grading in Formgrader, in a browser: Ann loses a point on a test, Bob gets a point of extra credit.
    with formgrader_in_a_page(browser, root, tmp_path / "lab-home",
                              artifacts / "failed-whole-term-formgrader.png") as (page, formgrader, server):
        assert students_listed(formgrader, "ann_101", "bob_102") == {"ann_101": "ann, None", "bob_102": "bob, None"}
        assert "5 / 5" in open_notebook(formgrader, "ann_101", NB1)
        assert set_score(page, formgrader, "first_call_slower", "0")["manual_score"] == 0
        formgrader = open_formgrader(page, server)
        students_listed(formgrader, "bob_102")
        assert "5 / 5" in open_notebook(formgrader, "bob_102", NB1)
        assert give_extra_credit(page, formgrader, "correct_summary", "1")["extra_credit"] == 1
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gradebook:
        grades = {(student, g.name): (g.auto_score, g.manual_score, g.extra_credit)
                  for student in ("ann_101", "bob_102")
                  for g in gradebook.find_submission_notebook(NB1, ASSIGNMENT, student).grades
                  if g.manual_score is not None or g.extra_credit}
    assert grades == {("ann_101", "first_call_slower"): (1, 0, None), ("bob_102", "correct_summary"): (1, None, 1)}
    done = _cli(root, "--feedback-only")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == ("feedback: written again for 4 students from the gradebook; changed for "
                                           "ann_101, bob_102"), done.stdout
    assert "export to canvas written again" in done.stdout
    assert [row[-1] for row in csv.reader((root / "exports" / "canvas-grades.csv").open())] == [
        "Audit (9)", "4", "6", "0", "0"]
    page = (root / "feedback" / "ann_101" / ASSIGNMENT / f"{NB1}.html").read_text()
    assert "Score: 4.0 / 5.0" in page or "4.0 / 5.0" in page, page[:2000]
    with zipfile.ZipFile(root / "exports" / "canvas-feedback.zip") as bundle:
        ann_page = next(n for n in bundle.namelist() if n.startswith("ann_101_5001_"))
        assert bundle.read(ann_page).decode() == page

    # A run with nothing new: the summary is the gradebook's, manual grade, extra credit and penalty included.
    batch, out, _ = _grade(root)
    assert batch.graded == [] and "Environment check: not run: no notebook to grade" in out
    print(out)
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith(("ann_", "bob_", "cy_", "dee_"))}
    assert {s: row[-1] for s, row in rows.items()} == {"ann_101": "4", "bob_102": "6", "cy_103": "0", "dee_104": "0"}

    # The next term.
    subprocess.run(["make", "--no-print-directory", "reset-course"], cwd=root, check=True, capture_output=True)
    assert sorted(p.name for p in (root / "submitted").iterdir()) == []
    assert not (root / "gradebook.db").exists() and (root / "gradebook.db.environment.json").exists()
    with pytest.raises(NothingToGrade, match="Nothing to grade: .* holds no student's folder"):
        _grade(root)
