"""Formgrader in a real browser, as an instructor uses it: the instructor's JupyterLab rooted at the course
directory (docs/instructors.md, "Formgrader and manual grading"), a student's notebook opened through Manage
Students, and a score or extra credit typed into its field and saved by Formgrader as the field is left."""

import contextlib
import os
import sys
from pathlib import Path

from chromium import UI_MS, started_server

from perfaudit import ASSIGNMENT


def started_formgrader(root, home):
    """`.venv/bin/jupyter lab --ServerApp.root_dir=$PWD` in the course directory, the venv's bin first on PATH as
    the Makefile puts it."""
    venv_bin = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    return started_server([str(venv_bin / "jupyter"), "lab", f"--ServerApp.root_dir={root}"], env, root, home, root)


@contextlib.contextmanager
def formgrader_in_a_page(browser, root, home, failed_png):
    """(page, Formgrader's frame, server) on a Formgrader started for the course `root`: the page is saved to
    failed_png when the block fails, and closed after it."""
    with started_formgrader(root, home) as server:
        page = browser.new_page()
        page.set_default_timeout(UI_MS)
        try:
            yield page, open_formgrader(page, server), server
        except Exception:
            page.screenshot(path=str(failed_png))
            raise
        finally:
            page.close()


def open_formgrader(page, server):
    """JupyterLab, then Nbgrader > Formgrader: the frame Formgrader's pages show in."""
    page.goto(f"{server.url}/lab?reset&token={server.token}")
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Nbgrader", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Formgrader", exact=True).click()
    return page.frame_locator("#formgrader-iframe iframe")


def students_listed(formgrader, *students):
    """Manage Students, once every one of `students` (ids) is listed: {id: the name shown in its row}."""
    formgrader.get_by_role("link", name="Manage Students").click()
    rows = formgrader.locator("table tbody tr")
    for student in students:
        rows.filter(has_text=student).wait_for()
    return {student: rows.filter(has_text=student).locator("td").first.inner_text().strip() for student in students}


def open_notebook(formgrader, student, stem):
    """From Manage Students: the student, the assignment, then the notebook's manual grading page. Returns the
    notebook's row as the student's list showed it (its score)."""
    row = formgrader.locator("table tbody tr").filter(has_text=student)
    row.locator("a").first.click()
    formgrader.get_by_role("link", name=ASSIGNMENT, exact=True).click()
    notebook = formgrader.locator("table tbody tr").filter(has_text=stem)
    listed = notebook.inner_text()
    notebook.get_by_role("link", name=stem, exact=True).click()
    # The fields are in the page's HTML at once; Formgrader binds them (saving on change, the autograder's score
    # as placeholder) only when its grades request answers, all in one pass: wait for that, not for the fields.
    formgrader.locator("input.score[placeholder]").first.wait_for()
    return listed


def _saved(page, field, value):
    """Type value into a field and leave it (Tab); the grade as Formgrader's PUT to its grade API answers."""
    field.click()
    field.fill(value)
    with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT") as saved:
        page.keyboard.press("Tab")
    assert saved.value.ok, saved.value.status
    return saved.value.json()


def set_score(page, formgrader, grade_id, value):
    """The manual score of a test cell, overriding the autograder's."""
    return _saved(page, formgrader.locator(f"input.score#{grade_id}"), value)


def give_extra_credit(page, formgrader, grade_id, value):
    return _saved(page, formgrader.locator(f"input.extra-credit#{grade_id}_extra_credit"), value)
