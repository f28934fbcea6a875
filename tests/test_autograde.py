"""End to end with plain nbgrader: fixture submissions -> autograde -> export, exact scores from the gradebook."""

import csv
import hashlib

import pytest

from perfaudit import ASSIGNMENT, course
from perfaudit.fixtures import samples

NB1, NB2, NB3, NB4 = "01-first-call-vs-steady", "02-retracing", "03-evidence", "04-integrated-audit"
FULL = {NB1: 5, NB2: 4, NB3: 4, NB4: 5}  # NB4: the audit 3, going further 2

# Each fixture submission is named by what it is; this is the score it must get, per notebook.
EXPECTED = {
    "correct": FULL,
    "untouched": {NB1: 0, NB2: 0, NB3: 0, NB4: 0},
    "partly-right": {NB1: 5, NB2: 4, NB3: 0, NB4: 0},
    "stage1-hardcoded-identity": {**FULL, NB1: 4},  # loses the random-input test only
    "stage1-unsynchronized-clock": {**FULL, NB1: 3},  # loses both claims a synchronized clock makes: sync, first call
    "stage2-forgot-jit": {**FULL, NB2: 1},  # 4 traces, retraces on repeats; the JAXPR still counts
    "stage3-memory-claimed": {**FULL, NB3: 2},  # fails the schema and the scope test
    "stage4-flops-forgot-factor-two": {**FULL, NB4: 4},  # loses the going-further cost test only
}


def _digest(folder):
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def graded(course_dir):
    assert set(EXPECTED) == set(samples.SAMPLES), "every sample needs an expected score"
    for name in EXPECTED:
        samples.write_submission(name, course_dir / "submitted")
    before = _digest(course_dir / "submitted")
    course.nbgrader("autograde", ASSIGNMENT, course_dir=course_dir)
    course.nbgrader("export", course_dir=course_dir)
    return course_dir, before


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_exact_score_per_notebook(graded, student):
    course_dir, _ = graded
    got = {nb: score for nb, (score, _) in course.scores(course_dir)[student].items()}
    assert got == EXPECTED[student]


def test_max_scores_are_the_notebooks_points(graded):
    course_dir, _ = graded
    assert {nb: m for nb, (_, m) in course.scores(course_dir)["correct"].items()} == FULL


def test_export_writes_one_row_per_student_with_the_total(graded):
    course_dir, _ = graded
    with (course_dir / "grades.csv").open() as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert {s: float(rows[s]["raw_score"]) for s in EXPECTED} == {s: sum(v.values()) for s, v in EXPECTED.items()}


def test_grading_leaves_submissions_byte_identical(graded):
    course_dir, before = graded
    assert _digest(course_dir / "submitted") == before
