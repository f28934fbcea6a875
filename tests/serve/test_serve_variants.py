"""The grading service grades notebook 5 against the variant of the student who submitted it (the exchange's
student id), not the notebook's: a classmate's findings from another variant lose their point, and the feedback
the student fetches says which variant they name and which is theirs. The classmate of that other variant hands in
their own audit, graded in the same run by the same worker: full marks. Each graded notebook printed its own
student's variant, and nothing of the other's."""

import nbformat
import pytest
from courses import FULL, NB5
from nbgrader.utils import get_username
from serve_course import course_with_exchange, fetch_feedback, service, student_home, wait_for

from perfaudit import ASSIGNMENT, handout, paths, variants
from perfaudit.fixtures import samples
from perfaudit.instructor import course

pytestmark = pytest.mark.slow  # two notebook 5s graded by the service: a few minutes

STUDENT = get_username()  # the exchange's student id: the account that submits
OWN = variants.assigned(STUDENT).variant
OTHER = next(v for v in handout.VARIANTS if v != OWN)
# The classmate whose variant's findings STUDENT hands in; they submit from this account under their own id
# (`nbgrader submit --student`), so the service's owner check is off.
CLASSMATE = next(f"classmate-{n}" for n in range(1000) if variants.assigned(f"classmate-{n}").variant == OTHER)
SETTINGS = "c.GradingService.poll_seconds = 0.5\nc.GradingService.check_owner = False"


def _hand_in(home, sample, *options):
    (home / ASSIGNMENT).mkdir()
    nbformat.write(samples.submission(sample, 5), home / ASSIGNMENT / paths.STAGES[5])
    course.nbgrader("submit", ASSIGNMENT, *options, course_dir=home)


def test_the_service_grades_each_submitter_against_their_own_variant(tmp_path):
    root = course_with_exchange(tmp_path / "course", stages=(5,), settings=SETTINGS)
    student = student_home(tmp_path / "student", root / "exchange")
    classmate = student_home(tmp_path / "classmate", root / "exchange")
    copied = samples.Sample(replaced={(5, "findings"): lambda solution: solution.replace(
        "}[AUDIT_VARIANT]", f'}}["{OTHER}"]')})
    _hand_in(student, copied)
    _hand_in(classmate, samples.SAMPLES["correct"], f"--student={CLASSMATE}")
    with service(root, "--workers", "1", "--skip-canary") as running:
        wait_for(root, lambda found: sorted(r["status"] for r in found.values()) == ["graded", "graded"],
                 "both submissions graded", service=running)
    assert course.scores(root) == {STUDENT: {NB5: (FULL[NB5] - 1, FULL[NB5])}, CLASSMATE: {NB5: (FULL[NB5], FULL[NB5])}}
    page = next(iter(fetch_feedback(student).values()))[NB5]
    assert (f"findings names the problems of variant {OTHER}, but this notebook is graded against variant {OWN}"
            in page), page[-3000:]
    for who, other in ((STUDENT, CLASSMATE), (CLASSMATE, STUDENT)):
        graded_nb = (root / "autograded" / who / ASSIGNMENT / f"{NB5}.ipynb").read_text()
        assigned = variants.assigned(who)
        assert f"student '{who}': variant {assigned.variant}, data seed {assigned.seed}" in graded_nb, who
        assert f"student '{other}'" not in graded_nb, who
