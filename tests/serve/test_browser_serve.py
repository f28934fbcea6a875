"""The grading service seen from JupyterLab: Submit, then Fetch Feedback shows the score, nobody collecting by hand.

As tests/test_browser_exchange.py does, the student copy is unpacked and JupyterLab started as `make lab` starts it,
on a machine whose Jupyter config names the course's exchange; in headless Chromium the student fetches notebook
1, types the instructor's solution, saves and submits. The grading service (`python -m perfaudit.serve`, started
here) collects, grades and releases; the student refreshes the Assignments view, fetches the feedback and reads
the exact score, with no hidden test in the page. The limit and the restart are tested through nbgrader's own
commands in test_serve.py.
"""

import pytest
from chromium import UI_MS
from courses import hidden_test_lines
from nbgrader.utils import get_username
from serve_course import course_with_exchange, service, wait_for
from test_browser import started_lab
from test_browser_exchange import (
    EXCHANGE_MS, assignments_view, fetch_and_answer, student_machine, unzipped_student_copy,
)

from perfaudit import ASSIGNMENT, paths
from perfaudit.instructor import course

pytestmark = pytest.mark.slow  # minutes: a browser, JupyterLab and the service on two busy cores

STUDENT = get_username()
NOTEBOOK = paths.STAGES[1]
STEM = NOTEBOOK.removesuffix(".ipynb")


def test_submit_in_jupyterlab_and_read_the_services_feedback(tmp_path, monkeypatch, browser, artifacts):
    instructor = course_with_exchange(tmp_path / "course", settings="c.GradingService.poll_seconds = 0.5")
    student_machine(tmp_path, instructor / "exchange", monkeypatch)
    student = unzipped_student_copy(tmp_path)
    work = student / "work" / ASSIGNMENT

    with service(instructor, "--workers", "1", "--skip-canary") as grading, \
            started_lab(student, tmp_path / "lab-home") as lab:
        page = browser.new_page()
        page.set_default_timeout(UI_MS)
        try:
            fetch_and_answer(page, lab, work)

            assignments_view(page)
            page.locator("#fetched_assignments_list button").get_by_text("Submit", exact=True).click()
            page.locator("#submitted_assignments_list button").get_by_text("Fetch Feedback", exact=True).wait_for(
                timeout=EXCHANGE_MS)

            # Nobody collects or releases by hand: the service does it.
            found = wait_for(instructor, lambda f: [r["status"] for r in f.values()] == ["graded"],
                             "the service's grading", service=grading)
            assert [r["score"] for r in found.values()] == [5]
            assert course.scores(instructor) == {STUDENT: {STEM: (5, 5)}}

            page.locator("#refresh_assignments_list").click()
            page.locator("#submitted_assignments_list").get_by_text("(feedback available to fetch)").wait_for()
            page.locator("#submitted_assignments_list button").get_by_text("Fetch Feedback", exact=True).click()
            page.locator("#submitted_assignments_list").get_by_text("(view feedback)").click(timeout=EXCHANGE_MS)
            page.locator(".jp-FileBrowser .jp-DirListing-content").get_by_text(f"{STEM}.html", exact=True).dblclick()
            shown = page.frame_locator(".jp-HTMLViewer iframe").locator("body")
            shown.get_by_text(f"{STEM} (Score: 5.0 / 5.0)").wait_for()
            shown.get_by_text("Graded submission 1 of the 3").wait_for()
            page.screenshot(path=str(artifacts / "serve-feedback.png"))
            text = shown.inner_text()
            leaked = [line for line in hidden_test_lines() if line in text]
            assert not leaked, f"the feedback the student reads shows hidden tests: {leaked[:3]}"
        except Exception:
            page.screenshot(path=str(artifacts / "failed-serve.png"))
            raise
        finally:
            page.close()
