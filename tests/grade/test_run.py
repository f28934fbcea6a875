"""Batch grading end to end: fixture submissions named by their expected result -> python -m perfaudit.grade.

One run grades a correct submission and one submission for each failure the command must isolate, with more
workers than cores, a short cell timeout and a 3 GiB memory limit; scores are read from the gradebook.
"""

import csv
import hashlib
import html
import io
import os
import re

import pytest
from courses import FULL, NB1, NB2, NB3, NB4, NONE, hidden_test_lines, make_course

from perfaudit import ASSIGNMENT
from perfaudit.autograde.plugins.hide_hidden_tests import HIDDEN_NOTE
from perfaudit.bookkeeping.statefolder import State
from perfaudit.fixtures import samples
from perfaudit.grade.run import Options, run
from perfaudit.instructor import course

pytestmark = pytest.mark.slow  # minutes: the fast tier (make test-fast) leaves it out


# The score each fixture submission must get, per notebook (a notebook it does not hold scores 0).
EXPECTED = {
    "correct": FULL,
    "kernel-dies-in-02-after-3-points": {**NONE, NB1: 5, NB2: 3},  # plain nbgrader: 0 for the whole student
    "hangs-in-01-ignoring-interrupts": {**NONE, NB1: 4, NB2: 6},  # loses correct_summary only
    "out-of-memory-in-01": {**NONE, NB1: 4, NB2: 6},  # its summarize cell fails under the limit
    "malformed-json-in-03": {**NONE, NB2: 6},  # notebook 2 graded all the same
    "deleted-test-cell-in-02": {**NONE, NB2: 5},  # the deleted test's point is lost
    "duplicated-test-cell-in-01": {**NONE, NB1: 5},
    "split-solution-cell-in-02": {**NONE, NB2: 6},
    "misnamed-02": NONE,
    "empty-submission": NONE,
}

# Words the summary must give for each (student, notebook) that had a problem.
REASONS = {
    ("kernel-dies-in-02-after-3-points", NB2): "the kernel died while running this cell",
    ("hangs-in-01-ignoring-interrupts", NB1): "the kernel stopped responding to this cell and to interrupts",
    ("out-of-memory-in-01", NB1): "ran out of memory in cell 'summarize'",
    ("malformed-json-in-03", NB3): "malformed JSON (",
    ("malformed-json-in-03", NB1): f"missing: no {NB1}.ipynb in the submission",
    ("deleted-test-cell-in-02", NB2): "cell 'one_trace_per_new_shape' was deleted",
    ("duplicated-test-cell-in-01", NB1): "cell 'correct_random_output' appears 2 times",
    ("split-solution-cell-in-02", NB2): "cell 'counted_workload' was split into 2 cells",
    ("misnamed-02", NB2): "misnamed: submitted as '02-retracing (1).ipynb'",
    ("misnamed-02", NB1): f"missing: no {NB1}.ipynb in the submission",
    ("empty-submission", NB3): "empty submission",
    ("correct", NB4): None,  # no problem: no line at all
}


def _digest(folder):
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


def _scores(root):
    return {s: {nb: score for nb, (score, _) in nbs.items()} for s, nbs in course.scores(root).items()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    assert set(EXPECTED) == {"correct", *samples.BROKEN}, "every broken submission needs an expected score"
    root = make_course(tmp_path_factory.mktemp("batch"))
    samples.write_submission("correct", root / "submitted")
    for name in samples.BROKEN:
        samples.write_broken(name, root / "submitted")
    before = _digest(root / "submitted")
    out = io.StringIO()
    # Without the environment check: this run's settings are another environment than the course's record, so it
    # would grade the instructor's solutions and the release once more (8 kernels), and the record it wrote would
    # make plain nbgrader's canary run too (test_plain_nbgrader_keeps_the_points_before_a_kernel_death_too). The
    # check is tested where it is the subject: tests/autograde/plugins/test_canary.py, tests/test_whole_term.py.
    options = Options(
        course_dir=root, workers=(os.cpu_count() or 1) + 1, cell_timeout=20, memory_mb=3072, canary=False,
        progress=False,
    )
    batch = run(options, out=out)
    return root, before, batch, out.getvalue()


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_exact_score_per_notebook(graded, student):
    root, _, _, _ = graded
    assert _scores(root)[student] == EXPECTED[student]


@pytest.mark.parametrize("student, notebook", sorted(REASONS))
def test_summary_gives_the_specific_reason(graded, student, notebook):
    _, _, _, summary = graded
    lines = [line for line in summary.splitlines() if line.startswith(f"  {student} {notebook} ")]
    if REASONS[student, notebook] is None:
        assert lines == []
    else:
        assert any(REASONS[student, notebook] in line for line in lines), summary


def test_every_zero_has_a_reason(graded):
    _, _, _, summary = graded
    for student, notebooks in EXPECTED.items():
        for notebook, score in notebooks.items():
            if score == 0:
                assert f"  {student} {notebook} (0/" in summary, f"no reason for {student} {notebook}"


def test_summary_counts_who_passed_each_test(graded):
    _, _, _, summary = graded
    # Passed by correct, kernel-dies (it died later), hangs, out-of-memory, malformed (its notebook 2) and
    # split; not by deleted-test-cell (it is the deleted one), nor the three without a notebook 2.
    assert f"     6/10   {NB2} one_trace_per_new_shape (1 pt)" in summary
    # Passed by correct, kernel-dies and duplicated; hangs and out-of-memory lost it.
    assert f"     3/10   {NB1} correct_summary (1 pt)" in summary


def test_more_workers_than_cores_and_no_lock_errors(graded):
    root, _, batch, _ = graded
    assert sorted(batch.graded) == sorted(EXPECTED)
    log = (root / "autograded" / ".batch-grading" / "workers.log").read_text()
    assert "database is locked" not in log


def test_grading_leaves_submissions_byte_identical(graded):
    root, before, _, _ = graded
    assert _digest(root / "submitted") == before


def test_export_has_every_students_total(graded):
    root, _, _, _ = graded
    with (root / "grades.csv").open() as handle:
        rows = {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(handle)}
    assert rows == {s: sum(v.values()) for s, v in EXPECTED.items()}


def test_feedback_has_no_hidden_test_source(graded):
    root, _, _, _ = graded
    secret = hidden_test_lines()
    assert len(secret) >= 4, "the source notebooks should hold hidden tests"
    pages = sorted((root / "feedback").glob(f"*/{ASSIGNMENT}/*.html"))
    assert {p.parents[1].name for p in pages} == set(EXPECTED) - {"misnamed-02", "empty-submission"}
    for page in pages:
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        text = "\n".join(" ".join(line.split()) for line in text.splitlines())
        assert HIDDEN_NOTE in text
        leaked = [line for line in secret if " ".join(line.split()) in text]
        assert leaked == [], f"{page} shows hidden test lines"


def test_rerun_grades_no_one_again_and_resumes_a_stopped_run(graded):
    root, _, _, _ = graded
    before = _scores(root)
    again = run(Options(course_dir=root, progress=False), out=io.StringIO())
    assert again.graded == [] and sorted(again.skipped) == sorted(EXPECTED)
    # A run stopped before it recorded a student: the next run grades that student only.
    (State(root / "autograded").dir / "empty-submission.json").unlink()
    resumed = run(Options(course_dir=root, progress=False), out=io.StringIO())
    assert resumed.graded == ["empty-submission"]
    assert _scores(root) == before


def test_plain_nbgrader_keeps_the_points_before_a_kernel_death_too(graded):
    """The Execute subclass is nbgrader configuration: plain autograde gives the same partial credit."""
    root, _, _, _ = graded
    student = "kernel-dies-in-02-after-3-points"
    course.nbgrader("autograde", ASSIGNMENT, f"--student={student}", "--force", course_dir=root)
    assert _scores(root)[student] == EXPECTED[student]


def test_lms_download_to_grades_and_regrade_on_request(tmp_path):
    """A Canvas download through the command; a second run skips everyone; --regrade grades everyone again.

    Only submissions that start no kernel, to keep this quick: a misnamed notebook and an unreadable one.
    """
    root = make_course(tmp_path / "course")
    download = tmp_path / "canvas"
    download.mkdir()
    (download / "doejane_12345_1_02-retracing (1).ipynb").write_text("{}")  # misnamed, and not a notebook
    (download / "roefrank_222_2_03-evidence.ipynb").write_text('{"cells": [')  # malformed JSON
    (download / "syllabus.pdf").write_bytes(b"%PDF")
    out = io.StringIO()
    first = run(Options(course_dir=root, download=download, progress=False, feedback=False), out=out)
    assert sorted(first.graded) == ["doejane_12345", "roefrank_222"]
    assert "NOT PLACED syllabus.pdf" in out.getvalue()
    assert "roefrank_222 03-evidence (0/4): malformed JSON (" in out.getvalue()
    assert out.getvalue().endswith("\nNext: review or change grades in Formgrader, then `make feedback` (feedback and "
                                   "each LMS export again); grades back to the LMS: python -m perfaudit.grade "
                                   "--export canvas|moodle --roster <the LMS's file>\n")
    assert _scores(root) == {"doejane_12345": NONE, "roefrank_222": NONE}
    assert run(Options(course_dir=root, progress=False), out=io.StringIO()).graded == []
    again = run(Options(course_dir=root, regrade=True, progress=False), out=io.StringIO())
    assert sorted(again.graded) == ["doejane_12345", "roefrank_222"]
