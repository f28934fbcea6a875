"""Manual grading through real Formgrader in a real browser, then `make feedback`: feedback and the LMS export follow.

A temporary course (notebook 1 only, as tests/test_browser_exchange.py makes it) grades a Canvas download of two
students (`python -m perfaudit.grade --from`, the canary skipped: tests/test_whole_term.py runs it) and exports to
Canvas. The instructor's JupyterLab starts rooted at the course directory, as docs/instructors.md ("Formgrader and
manual grading") starts it; in headless Chromium the instructor opens Nbgrader > Formgrader, goes through Manage
Students to ann's notebook 1, overrides one autograded test's score (1 -> 0) and gives another test half a point of
extra credit; Formgrader saves each as the field is left. Then `python -m perfaudit.grade --feedback-only` (what
`make feedback` runs): the gradebook says 4.5 of 5, ann's feedback page shows 4.5 (read from the file and as the
server shows it), the summary names ann alone as changed, the Canvas CSV and feedback zip carry 4.5, and bob's
feedback is the same bytes as before. Screenshots go where test_browser.py puts its.
"""

import csv
import subprocess
import sys
import time
import zipfile

import pytest
from formgrader import formgrader_in_a_page, give_extra_credit, open_notebook, set_score, students_listed
from nbgrader.api import Gradebook
from test_browser_exchange import instructor_course
from test_whole_term import CORRECT, UNTOUCHED, canvas_zip

from perfaudit import ASSIGNMENT, paths
from perfaudit.instructor import course

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")]

STEM = paths.STAGES[1].removesuffix(".ipynb")
COURSE_ID = "jax-performance-audit"
OVERRIDDEN, EXTRA_CREDIT = "first_call_slower", "correct_summary"  # two of notebook 1's five 1-point tests
ROSTER = "Student,ID,SIS User ID,SIS Login ID,Section,Audit (9)\nAnn,101,,,,\nBob,102,,,,\n"


def _grade_cli(root, *args):
    done = subprocess.run([sys.executable, "-m", "perfaudit.grade", *args], cwd=root, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _canvas_column(root):
    return [row[-1] for row in csv.reader((root / "exports" / "canvas-grades.csv").open())]


def _grades(root, student):
    """{grade id: (auto score, manual score, extra credit)} of the student's notebook 1, from the gradebook."""
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gradebook:
        return {g.name: (g.auto_score, g.manual_score, g.extra_credit)
                for g in gradebook.find_submission_notebook(STEM, ASSIGNMENT, student).grades if g.max_score}


def test_a_score_changed_in_formgrader_reaches_feedback_and_the_canvas_export(tmp_path, browser, artifacts):
    root = instructor_course(tmp_path / "course")
    download = canvas_zip(tmp_path / "canvas.zip", {
        f"ann_101_5001_{STEM}.ipynb": (CORRECT, time.time() - 3600),
        f"bob_102_5002_{STEM}.ipynb": (UNTOUCHED, time.time() - 3600),
    })
    _grade_cli(root, "--from", str(download), "--skip-canary", "--no-progress", "--workers", "2")
    assert course.scores(root) == {"ann_101": {STEM: (5, 5)}, "bob_102": {STEM: (0, 5)}}
    (root / "canvas.csv").write_text(ROSTER)
    _grade_cli(root, "--export", "canvas", "--roster", "canvas.csv")
    assert _canvas_column(root) == ["Audit (9)", "5", "0"]
    ann_feedback = root / "feedback" / "ann_101" / ASSIGNMENT / f"{STEM}.html"
    bob_feedback = root / "feedback" / "bob_102" / ASSIGNMENT / f"{STEM}.html"
    assert f"{STEM} (Score: 5.0 / 5.0)" in ann_feedback.read_text()
    bob_before = bob_feedback.read_bytes()

    with formgrader_in_a_page(browser, root, tmp_path / "lab-home",
                              artifacts / "failed-formgrader.png") as (page, formgrader, server):
        # The name intake recorded from the Canvas download (last name only), never "None, None".
        assert students_listed(formgrader, "ann_101", "bob_102") == {"ann_101": "ann, None", "bob_102": "bob, None"}
        assert "5 / 5" in open_notebook(formgrader, "ann_101", STEM)

        # The manual grading page of ann's notebook 1: every test's field shows the autograder's score.
        score = formgrader.locator(f"input.score#{OVERRIDDEN}")
        score.wait_for()
        assert score.get_attribute("placeholder") == "1"
        override = set_score(page, formgrader, OVERRIDDEN, "0")
        assert (override["name"], override["auto_score"], override["manual_score"]) == (OVERRIDDEN, 1, 0), override
        extra = give_extra_credit(page, formgrader, EXTRA_CREDIT, "0.5")
        assert (extra["name"], extra["auto_score"], extra["extra_credit"]) == (EXTRA_CREDIT, 1, 0.5), extra
        page.screenshot(path=str(artifacts / "formgrader-manual-grade.png"))

        # Formgrader's list of notebook 1's submissions shows the new score.
        formgrader.locator(".breadcrumb").get_by_role("link", name=STEM, exact=True).click()
        formgrader.locator("tbody td.score").get_by_text("4.5 / 5", exact=True).wait_for()
        assert sorted(formgrader.locator("tbody td.score").all_inner_texts()) == ["0 / 5", "4.5 / 5"]

        grades = _grades(root, "ann_101")
        assert grades[OVERRIDDEN] == (1, 0, None) and grades[EXTRA_CREDIT] == (1, None, 0.5), grades
        assert course.scores(root) == {"ann_101": {STEM: (4.5, 5)}, "bob_102": {STEM: (0, 5)}}

        # make feedback: the feedback pages and the last export again, from the gradebook.
        out = _grade_cli(root, "--feedback-only")
        assert out.splitlines()[0] == ("feedback: written again for 2 students from the gradebook; changed for "
                                       "ann_101"), out
        assert out.splitlines()[1:4] == [
            f"export to canvas written again (as last asked: --export canvas --roster {root.resolve()}/canvas.csv)",
            f"grades: {root.resolve()}/exports/canvas-grades.csv",
            "2 of 2 graded students matched to the roster's 2 students"], out
        assert _canvas_column(root) == ["Audit (9)", "4.5", "0"]
        page_text = ann_feedback.read_text()
        assert f"{STEM} (Score: 4.5 / 5.0)" in page_text
        assert bob_feedback.read_bytes() == bob_before
        with zipfile.ZipFile(root / "exports" / "canvas-feedback.zip") as bundle:
            [ann_page] = [n for n in bundle.namelist() if n.startswith("ann_101_5001_")]
            assert bundle.read(ann_page).decode() == page_text

        # The page as a browser shows it, served from the course directory.
        page.goto(f"{server.url}/files/feedback/ann_101/{ASSIGNMENT}/{STEM}.html?token={server.token}")
        page.get_by_text(f"{STEM} (Score: 4.5 / 5.0)").wait_for()
        tests = [t for t in page.locator("li").all_inner_texts() if t.startswith("Test cell")]
        assert tests == [*["Test cell (Score: 1.0 / 1.0)"] * 3, "Test cell (Score: 0.0 / 1.0)",  # overridden
                         "Test cell (Score: 1.5 / 1.0)"], tests  # extra credit
        page.screenshot(path=str(artifacts / "formgrader-feedback.png"))
