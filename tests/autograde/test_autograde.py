"""End to end with plain nbgrader: fixture submissions -> autograde -> export, exact scores from the gradebook."""

import csv
import hashlib
from pathlib import Path

import nbformat
import pytest
from courses import FULL, NB1, NB2, NB3, NB4, NB5, NONE

from perfaudit import ASSIGNMENT
from perfaudit.fixtures import samples
from perfaudit.instructor import course


# Each fixture submission is named by what it is; this is the score it must get, per notebook.
EXPECTED = {
    "correct": FULL,
    "untouched": {NB1: 0, NB2: 0, NB3: 0, NB4: 0, NB5: 0},
    "partly-right": {NB1: 5, NB2: 6, NB3: 0, NB4: 0, NB5: 0},
    "stage1-hardcoded-identity": {**FULL, NB1: 4},  # loses the random-input test only
    "stage1-unsynchronized-clock": {**FULL, NB1: 3},  # loses both claims a synchronized clock makes: sync, first call
    "stage2-forgot-jit": {**FULL, NB2: 2},  # 4 traces, retraces on repeats; no trace() shows the JAXPR is its own
    # fails the schema and the scope test; notebook 4's audit reuses that write_evidence and loses its 3 points too
    "stage3-memory-claimed": {**FULL, NB3: 2, NB4: 2},
    "stage4-stages-in-milliseconds": {**FULL, NB4: 4},  # loses the stages test only
}
# The notebooks a sample with one mistake hands in: its mistake's, and notebook 3 with notebook 4 (whose audit
# reads notebook 3 from the same folder). Its other notebooks are the `correct` sample's byte for byte
# (test_a_notebook_left_out_is_the_correct_one checks it), graded there; a notebook not handed in scores 0.
HANDED_IN = {
    "stage1-hardcoded-identity": {1},
    "stage1-unsynchronized-clock": {1},
    "stage2-forgot-jit": {2},
    "stage3-memory-claimed": {3, 4},
    "stage4-stages-in-milliseconds": {3, 4},
}
STAGE = dict(zip((NB1, NB2, NB3, NB4, NB5), (1, 2, 3, 4, 5)))  # each notebook's stage


def _expected(student):
    """The gradebook's scores of the student: EXPECTED's for the notebooks handed in, 0 for the others."""
    stages = HANDED_IN.get(student, set(STAGE.values()))
    return {nb: score if STAGE[nb] in stages else NONE[nb] for nb, score in EXPECTED[student].items()}


def _digest(folder):
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def graded(course_dir):
    assert set(EXPECTED) == set(samples.SAMPLES), "every sample needs an expected score"
    for name in EXPECTED:
        samples.write_submission(name, course_dir / "submitted", stages=HANDED_IN.get(name))
    before = _digest(course_dir / "submitted")
    course.nbgrader("autograde", ASSIGNMENT, course_dir=course_dir)
    course.nbgrader("export", course_dir=course_dir)
    return course_dir, before


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_exact_score_per_notebook(graded, student):
    course_dir, _ = graded
    got = {nb: score for nb, (score, _) in course.scores(course_dir)[student].items()}
    assert got == _expected(student)


def test_a_notebook_left_out_is_the_correct_one():
    """What a sample with one mistake does not hand in is the `correct` sample's notebook, and expects its score."""
    for name, stages in HANDED_IN.items():
        left_out = [(nb, stage) for nb, stage in STAGE.items() if stage not in stages]
        assert left_out, name
        for nb, stage in left_out:
            assert nbformat.writes(samples.submission(samples.SAMPLES[name], stage)) == \
                nbformat.writes(samples.submission(samples.SAMPLES["correct"], stage)), (name, nb)
            assert EXPECTED[name][nb] == FULL[nb], (name, nb)


def test_max_scores_are_the_notebooks_points(graded):
    course_dir, _ = graded
    assert {nb: m for nb, (_, m) in course.scores(course_dir)["correct"].items()} == FULL


def test_export_writes_one_row_per_student_with_the_total(graded):
    course_dir, _ = graded
    with (course_dir / "grades.csv").open() as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert {s: float(rows[s]["raw_score"]) for s in EXPECTED} == {s: sum(_expected(s).values()) for s in EXPECTED}


def test_grading_leaves_submissions_byte_identical(graded):
    course_dir, before = graded
    assert _digest(course_dir / "submitted") == before


def test_an_instructors_new_hidden_test_grades_with_no_code_change(tmp_path):
    """A hidden line added to source/ runs in the grader as it is, with no change anywhere else. It asks for the
    median of an even number of timings: a summarize that is right for odd counts only, which every other test
    accepts, loses that test's point; the instructor's solution keeps full marks (the canary checks it too)."""
    import shutil

    from perfaudit import notebooks, paths

    root = tmp_path / "course"
    shutil.copytree(paths.SOURCE, root / "source" / ASSIGNMENT)
    shutil.copy(paths.ROOT / "nbgrader_config.py", root)
    path = root / "source" / ASSIGNMENT / f"{NB1}.ipynb"
    nb = nbformat.read(path, as_version=4)
    test = next(c for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == "correct_summary")
    new_line = 'assert summarize([1.0, 2.0])["median_s"] == 1.5, "the median of two timings is their mean"'
    test.source = test.source.replace("### END HIDDEN TESTS", f"{new_line}\n### END HIDDEN TESTS")
    nbformat.write(nb, path)
    course.nbgrader("generate_assignment", ASSIGNMENT, course_dir=root)
    samples.write_submission("correct", root / "submitted")
    (root / "submitted" / "correct").rename(root / "submitted" / "odd-counts-only")
    samples.write_submission("correct", root / "submitted")
    submitted = root / "submitted" / "odd-counts-only" / ASSIGNMENT / f"{NB1}.ipynb"
    nb = nbformat.read(submitted, as_version=4)
    cell = next(c for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == "summarize")
    cell.source = cell.source.replace('"median_s": float(np.median(samples)),',
                                      '"median_s": float(np.median(samples) if len(samples) % 2 else samples.max()),')
    assert "samples.max()" in cell.source
    nbformat.write(nb, submitted)
    course.nbgrader("autograde", ASSIGNMENT, "--notebook", NB1, course_dir=root)
    scores = course.scores(root)
    assert scores["correct"][NB1] == (FULL[NB1], FULL[NB1])
    assert scores["odd-counts-only"][NB1] == (FULL[NB1] - 1, FULL[NB1])
    graded = nbformat.read(root / "autograded" / "odd-counts-only" / ASSIGNMENT / f"{NB1}.ipynb", as_version=4)
    failed = next(c for c in graded.cells if notebooks.nbgrader_meta(c).get("grade_id") == "correct_summary")
    assert [o.evalue for o in failed.outputs if o.output_type == "error"] == ["the median of two timings is their mean"]


def test_a_forged_test_cell_never_runs_in_the_grader(tmp_path):
    """A student cell whose metadata claims to be a graded test never runs in the grader: the grader runs only the
    test cells the gradebook holds, with the instructor's source (an unknown grade id fails nbgrader's own
    metadata check before anything runs)."""
    import uuid

    from courses import make_course

    root = make_course(tmp_path / "course")
    samples.write_submission("correct", root / "submitted")
    path = root / "submitted" / "correct" / ASSIGNMENT / f"{NB2}.ipynb"
    nb = nbformat.read(path, as_version=4)
    marker = f"/tmp/perfaudit-forged-{uuid.uuid4().hex}"
    forged = nbformat.v4.new_code_cell(f"open({marker!r}, 'w').write('ran in the grader')\n100")
    forged.metadata.nbgrader = {"grade": True, "solution": False, "locked": True, "grade_id": "two_traces",
                                "points": 100, "schema_version": 3}  # a copy of a real test's id, with other code
    nb.cells.insert(3, forged)
    nbformat.write(nb, path)
    course.nbgrader("autograde", ASSIGNMENT, "--notebook", NB2, course_dir=root)
    assert not Path(marker).exists(), "a forged test cell ran in the grader"
    assert course.scores(root)["correct"][NB2] == (FULL[NB2], FULL[NB2])
