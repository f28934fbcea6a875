"""The grading service through nbgrader's exchange commands, as a student uses them: submit, then fetch_feedback.

The service (`python -m perfaudit.serve`, started here as a subprocess) grades each submission as it arrives and
releases its feedback: exact scores in the gradebook and on the page the student fetches, no hidden-test line in
any page it released. Killed (SIGKILL, its Dask workers with it) while grading and started again, it grades that
submission once and the earlier one not again. A fourth submission within the window is collected, not graded,
and its feedback says when the next graded one is possible. A submission whose grading outlasts the task's time
is stopped and its student told, and the next is graded. A broken environment tells the student "not graded
yet" and records no score; the service started again in a sound one grades the submission. A grading by the service
writes the record behind the grade that the batch command writes for the same files.
"""

import io
import stat

import nbformat
import pytest
from courses import hidden_test_lines
from nbgrader.utils import get_username
from serve_course import course_with_exchange, fetch_feedback, service, student_home, submit, wait_for

from perfaudit import ASSIGNMENT, paths
from perfaudit.fixtures import samples
from perfaudit.grade import records
from perfaudit.grade.run import Options, run
from perfaudit.instructor import course
from perfaudit.serve import notes

pytestmark = pytest.mark.slow  # minutes: the service grades several submissions, one at a time

STUDENT = get_username()  # the exchange's student id: the account that submits (the owner check)
STEM = paths.STAGES[1].removesuffix(".ipynb")
SETTINGS = ("c.GradingService.poll_seconds = 0.5\nc.GradingService.graded_per_window = 3\n"
            "c.GradingService.window_hours = 24")
FAST = ("--workers", "1", "--skip-canary")


def statuses(found):
    return [r["status"] for r in sorted(found.values(), key=lambda r: r["seen_at"])]


def newest_pages(student):
    """The pages fetched for the student's newest submission: {notebook: text}."""
    fetched = fetch_feedback(student)
    return fetched[max(fetched)]


def released_pages(root):
    return {page.name: page.read_bytes() for page in (root / "exchange").glob("*/feedback/*.html")}


def test_graded_limited_and_killed_mid_grading_with_nothing_lost_or_graded_twice(tmp_path):
    root = course_with_exchange(tmp_path / "course", settings=SETTINGS)
    student = student_home(tmp_path / "student", root / "exchange")

    with service(root, *FAST) as first:
        submit(student, "correct")
        found = wait_for(root, lambda f: statuses(f) == ["graded"], "the first submission graded", service=first)
        assert course.scores(root) == {STUDENT: {STEM: (5, 5)}}
        page = newest_pages(student)[STEM]
        assert f"{STEM} (Score: 5.0 / 5.0)" in page
        assert "Graded submission 1 of the 3" in page
        first_pages = released_pages(root)

        submit(student, "untouched")
        wait_for(root, lambda f: statuses(f) == ["graded", "grading"], "the second submission grading", service=first)
        first.kill()  # mid-grading: the service and its workers, at once
    assert statuses(found := wait_for(root, lambda f: True, "")) == ["graded", "grading"]
    assert course.scores(root) == {STUDENT: {STEM: (5, 5)}}, "the interrupted grading wrote a score"

    with service(root, *FAST) as second:
        found = wait_for(root, lambda f: statuses(f) == ["graded", "graded"], "the second graded", service=second)
        assert course.scores(root) == {STUDENT: {STEM: (0, 5)}}
        assert f"{STEM} (Score: 0.0 / 5.0)" in newest_pages(student)[STEM]
        first_name = min(found, key=lambda n: found[n]["seen_at"])
        assert f"grading {first_name}" not in second.log(), "the restart graded the first submission again"
        assert all(released_pages(root)[name] == data for name, data in first_pages.items()), \
            "the first submission's feedback changed"

        submit(student, "correct")
        wait_for(root, lambda f: statuses(f) == ["graded"] * 3, "the third graded", service=second)
        assert f"{STEM} (Score: 5.0 / 5.0)" in newest_pages(student)[STEM]
        submit(student, "untouched")  # the fourth within 24 hours
        found = wait_for(root, lambda f: statuses(f) == ["graded"] * 3 + ["limited"], "the fourth limited",
                         service=second)
    assert course.scores(root) == {STUDENT: {STEM: (5, 5)}}, "the limited submission changed the grade"
    assert [r["gradings"] for r in sorted(found.values(), key=lambda r: r["seen_at"])] == [1, 1, 1, 0]
    oldest = min(r["seen_at"] for r in found.values())
    page = newest_pages(student)[STEM]
    assert "(not graded: limit reached)" in page and "Score:" not in page
    assert "You have had 3 graded submission(s) in the last 24 hours" in page
    assert f"Your next submission will be graded if you submit after {notes.when(oldest + 24 * 3600)}." in page
    # the limited submission is collected as usual: submitted/ holds it, for the final grading
    assert (root / "submitted" / STUDENT / ASSIGNMENT / "timestamp.txt").read_text() == max(fetch_feedback(student))

    leaked = [line for data in released_pages(root).values() for line in hidden_test_lines() if line in data.decode()]
    assert not leaked, f"released feedback shows hidden tests: {leaked[:3]}"


def test_a_service_grading_writes_the_record_the_batch_writes(tmp_path):
    """The record behind a grade is the same whoever graded the files: the service, then the batch command on the
    submission the service collected. Field by field, apart from the time and the seconds it took."""
    root = course_with_exchange(tmp_path / "course", settings=SETTINGS)
    # A fresh course's path: released, but no gradebook yet (make release writes none). The service records the
    # assignment from source/ as the batch does, instead of failing on every submission.
    (root / "gradebook.db").unlink()
    student = student_home(tmp_path / "student", root / "exchange")
    with service(root, *FAST) as running:
        submit(student, "correct")
        wait_for(root, lambda f: statuses(f) == ["graded"], "the submission graded", service=running)
    assert f"The gradebook had no assignment '{ASSIGNMENT}': recorded it from source/" in running.log()
    # What the service says is also in a file of the course (on a hub its output goes to the hub's own).
    course_log = (root / "autograded" / ".batch-grading" / "serve.log").read_text()
    assert "recorded it from source/" in course_log and f"graded {STUDENT}+" in course_log, course_log
    # On a hub students share the machine: what the service made is not theirs to read.
    for made in ("gradebook.db", "gradebook.db.serve.json", "autograded", "feedback"):
        assert stat.S_IMODE((root / made).stat().st_mode) & 0o007 == 0, made
    log = records.path_for(root / "autograded")
    served = records.read(log)
    assert [(r["student"], r["notebook"], r["score"]) for r in served] == [(STUDENT, STEM, 5)], \
        "the service wrote no record behind the grade"

    run(Options(course_dir=root, workers=1, regrade=True, canary=False, feedback=False, progress=False),
        out=io.StringIO())
    assert course.scores(root) == {STUDENT: {STEM: (5, 5)}}
    by_service, by_batch = records.read(log)
    assert sorted(by_service) == sorted(by_batch)
    for field in sorted(set(by_batch) - set(records.VOLATILE)):
        assert by_service[field] == by_batch[field], field


def test_a_broken_environment_says_not_graded_yet_and_the_repaired_one_grades(tmp_path, monkeypatch):
    root = course_with_exchange(tmp_path / "course", settings=SETTINGS)
    student = student_home(tmp_path / "student", root / "exchange")
    submit(student, "correct")
    monkeypatch.setenv("JAX_PLATFORMS", "tpu")  # no such backend here: the canary's setup cell fails
    with service(root, "--workers", "1", "--until-idle") as broken:
        assert broken.process.wait(timeout=600) == 3, broken.log()
    assert "GRADING STOPPED" in broken.log() and "Unable to initialize backend 'tpu'" in broken.log()
    assert course.scores(root) == {}, "a broken environment wrote a score"
    page = newest_pages(student)[STEM]
    assert notes.REPAIR in page and "Score:" not in page

    monkeypatch.delenv("JAX_PLATFORMS")
    with service(root, "--workers", "1", "--until-idle") as repaired:
        assert repaired.process.wait(timeout=600) == 0, repaired.log()
    assert course.scores(root) == {STUDENT: {STEM: (5, 5)}}
    assert f"{STEM} (Score: 5.0 / 5.0)" in newest_pages(student)[STEM]


def test_a_submission_that_hangs_its_worker_is_told_so_and_the_next_is_graded(tmp_path):
    """Grading that outlasts GradingService.task_timeout_s: its worker is restarted, the student told, 0 for now."""
    # A cell may take 120 s, the whole task 40 s (an honest notebook 1 takes about 10 s on two busy cores).
    root = course_with_exchange(tmp_path / "course",
                                settings=SETTINGS + "\nc.GradingService.task_timeout_s = 40\nc.Execute.timeout = 120")
    student = student_home(tmp_path / "student", root / "exchange")
    hanging = samples.submission(samples.SAMPLES["correct"], 1)
    first = next(cell for cell in hanging.cells if cell.metadata.get("nbgrader", {}).get("solution"))
    first.source = "import time\ntime.sleep(90)  # under the cell's limit, over the task's\n" + first.source
    (student / ASSIGNMENT).mkdir()
    nbformat.write(hanging, student / ASSIGNMENT / paths.STAGES[1])
    course.nbgrader("submit", ASSIGNMENT, course_dir=student)
    with service(root, *FAST) as running:
        wait_for(root, lambda f: statuses(f) == ["failed"], "the hanging submission stopped", service=running)
        page = newest_pages(student)[STEM]
        assert "(not graded)" in page and "took longer than 40 s" in page
        assert course.scores(root) == {STUDENT: {STEM: (0, 5)}}
        submit(student, "correct")
        wait_for(root, lambda f: statuses(f) == ["failed", "graded"], "the next graded", service=running)
    assert course.scores(root) == {STUDENT: {STEM: (5, 5)}}
    assert f"{STEM} (Score: 5.0 / 5.0)" in newest_pages(student)[STEM]


def test_a_notebook_shaped_unlike_one_is_told_so_and_the_class_is_graded(tmp_path):
    """A notebook whose cells are numbers (67 bytes, from a fresh attacker on the hub) used to raise in the service's
    own process: grading stopped for the whole class, and again at each restart. It is its student's problem now:
    their page says what is wrong, and the next submission is graded."""
    root = course_with_exchange(tmp_path / "course", settings=SETTINGS)
    student = student_home(tmp_path / "student", root / "exchange")
    (student / ASSIGNMENT).mkdir()
    (student / ASSIGNMENT / paths.STAGES[1]).write_text(
        '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [1]}')
    course.nbgrader("submit", ASSIGNMENT, course_dir=student)
    with service(root, *FAST) as running:
        wait_for(root, lambda f: statuses(f) == ["graded"], "the misshapen notebook answered", service=running)
        page = newest_pages(student)[STEM]
        assert "(not graded)" in page and "cell 0 is a number, not a cell" in page, page
        submit(student, "correct")
        wait_for(root, lambda f: statuses(f) == ["graded", "graded"], "the next graded", service=running)
        assert "GRADING STOPPED" not in running.log(), running.log()
    assert course.scores(root) == {STUDENT: {STEM: (5, 5)}}
