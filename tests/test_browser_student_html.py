"""A submission's own HTML runs nowhere, and feedback shows nothing a test handed the kernel: both graders, then the
feedback pages and Formgrader's manual-grading view opened in headless Chromium.

Two catalog cases of notebook 1 (full marks each): one whose workload cell displays a <script>, an img onerror, an
svg onload, a javascript: link, an SVG with script, a JavaScript output, markdown with an onerror and a PNG whose
width adds an onload, beside markdown and raw cells with script and a javascript: link; one whose time_call keeps
what each hidden test hands it and prints it, raises it and writes it into an earlier cell's display after the last
test. Graded by `python -m perfaudit.grade` in one course and by plain `nbgrader autograde` + `generate_feedback` in
another (the canary skipped: tests/test_whole_term.py runs it). Every feedback page and Formgrader's page of the first
case are opened in Chromium: no marker is set, no dialog opens, nothing is logged; the honest table and the PNG are
still shown. The same Formgrader page, with that notebook's outputs put back as the student's code made them, runs
the script (so the check can fail).
"""

import subprocess
import sys

import nbformat
import pytest
from formgrader import started_formgrader
from hostile_outputs import page_text, scripts_that_ran
from nbgrader.api import Gradebook
from test_browser_exchange import instructor_course

from perfaudit import ASSIGNMENT, notebooks, paths
from perfaudit.autograde.plugins.hide_outputs_after_tests import OUTPUT_HIDDEN
from perfaudit.fixtures import catalog
from perfaudit.fixtures.catalog import student_html
from perfaudit.fixtures.catalog.build import submission
from perfaudit.instructor import course

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")]

STEM = paths.STAGES[1].removesuffix(".ipynb")
SCRIPTS = "cheat-script-in-outputs-runs-in-feedback-and-formgrader"
KEEPS = "cheat-prints-what-the-tests-handed-it-after-the-last-test"
COURSE_ID = "jax-performance-audit"


def _course(root):
    root = instructor_course(root)
    for name in (SCRIPTS, KEEPS):
        folder = root / "submitted" / name / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(submission(catalog.CASES[name], 1), folder / paths.STAGES[1])
    return root


def _graded_by_the_batch_command(root):
    done = subprocess.run([sys.executable, "-m", "perfaudit.grade", "--skip-canary", "--no-progress", "--workers", "2"],
                          cwd=root, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def _graded_by_plain_nbgrader(root, monkeypatch):
    monkeypatch.setenv("PERFAUDIT_SKIP_CANARY", "1")
    course.nbgrader("autograde", ASSIGNMENT, course_dir=root)
    course.nbgrader("generate_feedback", ASSIGNMENT, course_dir=root)
    return root


def _nothing_ran(browser, url):
    page = browser.new_page()
    try:
        ran = scripts_that_ran(page, url)
        text = page_text(page)
        tables = page.locator("table td", has_text="3.1e-05").count()
        pngs = page.locator("img[src^='data:image/png;base64,']").count()
    finally:
        page.close()
    assert ran == (set(), [], []), url
    return text, tables, pngs


def _submission_url(root, server):
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gradebook:
        number = gradebook.find_submission_notebook(STEM, ASSIGNMENT, SCRIPTS).id
    return f"{server.url}/formgrader/submissions/{number}/?token={server.token}"


def _outputs_put_back(root):
    """The autograded notebook with the workload cell's outputs and the student's cells as the submission made them,
    as they were kept before SanitizeOutputs."""
    path = root / "autograded" / SCRIPTS / ASSIGNMENT / paths.STAGES[1]
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if notebooks.nbgrader_meta(c).get("grade_id") == "workload")
    nb.cells[at].outputs = student_html.outputs()
    nb.cells[at + 1:at + 4] = student_html.cells()
    nbformat.write(nb, path)


def test_no_script_a_submission_wrote_runs_in_feedback_or_formgrader(tmp_path, monkeypatch, browser):
    batch = _graded_by_the_batch_command(_course(tmp_path / "batch"))
    plain = _graded_by_plain_nbgrader(_course(tmp_path / "plain"), monkeypatch)
    expected = {SCRIPTS: {STEM: (5, 5)}, KEEPS: {STEM: (5, 5)}}
    assert (course.scores(batch), course.scores(plain)) == (expected, expected)

    for root in (batch, plain):
        text, tables, pngs = _nothing_ran(browser, (root / "feedback" / SCRIPTS / ASSIGNMENT / f"{STEM}.html").as_uri())
        assert (tables, pngs) == (1, 2) and "bold answer" in text and student_html.PRINTED in text
        text, _, _ = _nothing_ran(browser, (root / "feedback" / KEEPS / ASSIGNMENT / f"{STEM}.html").as_uri())
        # What was kept, as printed, raised or written into the display (the source of the cells shows the words).
        assert "KEPT-FROM-TESTS [" not in text and OUTPUT_HIDDEN.strip() in text
        assert "nothing kept yet" in text  # the display shown before the tests, never updated after them

    with started_formgrader(batch, tmp_path / "lab-home") as server:
        url = _submission_url(batch, server)
        text, tables, pngs = _nothing_ran(browser, url)
        assert (tables, pngs) == (1, 2) and student_html.PRINTED in text
        _outputs_put_back(batch)
        page = browser.new_page()
        try:
            markers, _, _ = scripts_that_ran(page, url)
        finally:
            page.close()
        assert markers == student_html.MARKERS - student_html.INERT_IN_NBCONVERT
