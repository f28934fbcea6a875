"""One student through the course's exchange in a real browser, from the student copy to feedback read.

An instructor's temporary course (notebook 1 only) releases with `nbgrader release_assignment`. The student
copy (perfaudit.instructor.student_copy) is unpacked beside it and JupyterLab starts on it as `make lab` starts it, on a
machine whose Jupyter config names the course's exchange (as a course server's does). In headless Chromium the
student fetches the assignment, opens notebook 1 from the file browser, types the instructor's solution, saves
and submits. The instructor collects, grades (`python -m perfaudit.grade`, the `make grade` command) and
releases feedback; the exact score is read from the gradebook. The student fetches the feedback and opens it
from the Assignments view: it shows the score and no hidden test. Screenshots go where test_browser.py puts its.
"""

import shutil
import subprocess
import sys
import urllib.parse
import zipfile

import pytest
from chromium import UI_MS
from courses import hidden_test_lines
from nbgrader.utils import get_username
from test_browser import screenshot, solution_cells, started_lab, type_into_cell, wait_for_notebook

from perfaudit import ASSIGNMENT, notebooks, paths
from perfaudit.instructor import course, student_copy

pytestmark = pytest.mark.slow  # minutes: the fast tier (make test-fast) leaves it out

STUDENT = get_username()  # nbgrader's student id on the exchange: the account's name
NOTEBOOK = paths.STAGES[1]
STEM = NOTEBOOK.removesuffix(".ipynb")
EXCHANGE_MS = 120_000  # Fetch, Submit and Fetch Feedback run nbgrader in the server: two busy cores


def instructor_course(root):
    """A course whose assignment is notebook 1 alone: its source, the course's nbgrader_config.py, the release."""
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(paths.SOURCE / NOTEBOOK, root / "source" / ASSIGNMENT)
    shutil.copy(paths.ROOT / "nbgrader_config.py", root)
    course.nbgrader("generate_assignment", ASSIGNMENT, course_dir=root)
    return root


def unzipped_student_copy(folder):
    """The student zip (make student-copy), unzipped as a student unzips it."""
    with zipfile.ZipFile(student_copy.write(folder / "student.zip")) as archive:
        archive.extractall(folder)
    return folder / student_copy.TOP


def student_machine(tmp_path, exchange, monkeypatch):
    """The machine's Jupyter config, as a course server sets it: the exchange, and the student's own cache of what
    they submitted (the student copy's nbgrader_config.py names neither)."""
    machine = tmp_path / "machine-config"
    machine.mkdir()
    (machine / "nbgrader_config.py").write_text(
        f"c = get_config()  # noqa: F821\nc.Exchange.root = {str(exchange)!r}\n"
        f"c.Exchange.cache = {str(tmp_path / 'student-cache')!r}\n")
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(machine))


def assignments_view(page):
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Nbgrader", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Assignment List", exact=True).click()


def open_from_file_browser(page, *names):
    """Double-click each name in turn in the file browser (folders, then the file), as a student does."""
    listing = page.locator(".jp-FileBrowser .jp-DirListing-content")
    for name in names:
        page.locator(".jp-FileBrowser [data-command='filebrowser:refresh']").click()
        listing.get_by_text(name, exact=True).dblclick()


def fetch_and_answer(page, lab, work):
    """In the student's JupyterLab: Fetch the assignment in the Assignments view, open notebook 1 from the file
    browser, type the instructor's solution into each solution cell and save; the saved notebook holds them."""
    solutions = solution_cells(1)
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")
    assignments_view(page)
    page.locator("#released_assignments_list button").get_by_text("Fetch", exact=True).click()
    page.locator("#fetched_assignments_list").get_by_text(ASSIGNMENT, exact=True).wait_for(timeout=EXCHANGE_MS)
    assert sorted(p.name for p in work.glob("*.ipynb")) == [NOTEBOOK]
    open_from_file_browser(page, ASSIGNMENT, NOTEBOOK)
    wait_for_notebook(page, len(notebooks.read(paths.RELEASE / NOTEBOOK).cells))
    for index, code in solutions.items():
        type_into_cell(page, index, code)
    page.keyboard.press("ControlOrMeta+s")
    page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").wait_for(state="detached")
    saved = notebooks.read(work / NOTEBOOK)
    assert {i: saved.cells[i].source for i in solutions} == solutions, "the saved notebook lacks the solution"


def test_fetch_submit_and_read_feedback_through_the_exchange(tmp_path, monkeypatch, browser, artifacts):
    instructor = instructor_course(tmp_path / "course")
    exchange = instructor / "exchange"  # the one the course's nbgrader_config.py names
    course.nbgrader("release_assignment", ASSIGNMENT, course_dir=instructor)
    student_machine(tmp_path, exchange, monkeypatch)
    student = unzipped_student_copy(tmp_path)
    work = student / "work" / ASSIGNMENT

    with started_lab(student, tmp_path / "lab-home") as lab:
        assert not work.exists(), "make lab copied notebooks/ although the exchange releases the assignment"
        assert "Fetch" in (lab.said or ""), lab.said
        page = browser.new_page()
        page.set_default_timeout(UI_MS)
        try:
            fetch_and_answer(page, lab, work)
            screenshot(page, artifacts / f"exchange-typed-{STEM}.png")

            assignments_view(page)
            page.locator("#fetched_assignments_list button").get_by_text("Submit", exact=True).click()
            page.locator("#submitted_assignments_list button").get_by_text("Fetch Feedback", exact=True).wait_for(
                timeout=EXCHANGE_MS)
            page.screenshot(path=str(artifacts / "exchange-submitted.png"))

            # The instructor's side, as docs/instructors.md ("The exchange") gives it.
            course.nbgrader("collect", ASSIGNMENT, course_dir=instructor)
            graded = subprocess.run([sys.executable, "-m", "perfaudit.grade", "--skip-canary", "--no-progress",
                                     "--workers", "1"], cwd=instructor, capture_output=True, text=True)
            assert graded.returncode == 0, graded.stdout + graded.stderr
            assert course.scores(instructor) == {STUDENT: {STEM: (5, 5)}}, graded.stdout
            course.nbgrader("release_feedback", ASSIGNMENT, course_dir=instructor)

            page.locator("#refresh_assignments_list").click()
            page.locator("#submitted_assignments_list").get_by_text("(feedback available to fetch)").wait_for()
            page.locator("#submitted_assignments_list button").get_by_text("Fetch Feedback", exact=True).click()
            page.locator("#submitted_assignments_list").get_by_text("(view feedback)").click(timeout=EXCHANGE_MS)
            page.locator(".jp-FileBrowser .jp-DirListing-content").get_by_text(
                f"{STEM}.html", exact=True).dblclick()
            shown = page.frame_locator(".jp-HTMLViewer iframe").locator("body")
            shown.get_by_text(f"{STEM} (Score: 5.0 / 5.0)").wait_for()
            page.screenshot(path=str(artifacts / "exchange-feedback.png"))
            text = shown.inner_text()
            leaked = [line for line in hidden_test_lines() if line in text]
            assert not leaked, f"the feedback the student reads shows hidden tests: {leaked[:3]}"

            # The page the viewer shows is served to the student (JupyterLab's files handler, no 404).
            feedback = next(work.glob(f"feedback/*/{STEM}.html"))
            url = f"{lab.url}/files/{urllib.parse.quote(str(feedback.relative_to(lab.root)))}?token={lab.token}"
            assert page.request.get(url).status == 200
        except Exception:
            page.screenshot(path=str(artifacts / "failed-exchange.png"))
            raise
        finally:
            page.close()
