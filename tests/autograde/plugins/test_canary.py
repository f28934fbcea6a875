"""A broken grading environment stops grading before anyone is graded; after the fix everyone is graded normally.

Each way of breaking it is real: the course package copied elsewhere (the grader imports the copy, the sandbox's
kernel cannot import the installed one), JAX not installed (gone from site-packages in a mount namespace of the
test's own), a JAX the kernel cannot start, an XLA flag that crashes the kernel, a full disk.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from courses import FULL, NB2, make_course, uninstalled

from perfaudit import ASSIGNMENT, paths
from perfaudit.autograde.plugins.canary import DISK_FULL
from perfaudit.fixtures import samples
from perfaudit.instructor import course

pytestmark = pytest.mark.slow


def _grade(root, env=None, *args, within=()):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **(env or {})}
    return subprocess.run([*within, sys.executable, "-m", "perfaudit.grade", "--no-progress", "--no-feedback", *args],
                          cwd=root, env=env, capture_output=True, text=True)


NO_JAX = ("jax", "jax-*.dist-info")


@pytest.fixture
def class_of_two(tmp_path):
    """Two students who each submitted notebook 2 (the instructor's solution, the release): the environment check
    covers every notebook of source/ whatever a class submitted, and one notebook each shows a class graded."""
    root = make_course(tmp_path / "course")
    for name in ("correct", "untouched"):
        samples.write_submission(name, root / "submitted", stages=[2])
    return root


def _nobody_graded(root):
    assert not any((root / "autograded").glob(f"*/{ASSIGNMENT}")), "a student was graded"
    assert course.scores(root) == {}


@pytest.mark.parametrize("broken, where, cause", [
    ("course package elsewhere", "the first failing cell is 'setup'",
     "ModuleNotFoundError: No module named 'perfaudit'"),
    ("JAX not installed", "the grader itself failed on source/", "ModuleNotFoundError: No module named 'jax'"),
    # The grader makes notebook 1's locked constants itself (a JAX array): its own JAX fails first.
    ("JAX_PLATFORMS=tpu", "the grader itself failed on source/", "Unable to initialize backend 'tpu'"),
])
def test_a_broken_environment_grades_nobody_then_the_fixed_one_grades_everyone(class_of_two, tmp_path, broken, where,
                                                                                cause):
    env, within = {}, ()
    if broken == "course package elsewhere":
        # `python -m` in a course folder holding a copy of the package: the grader imports the copy (the working
        # folder comes first on its path), the sandbox binds that copy only, the kernel looks for the installed one.
        # (A copy the grader found through PYTHONPATH is the kernel's too: sandbox.package_seen_installed.)
        shutil.copytree(paths.ROOT / "perfaudit", class_of_two / "perfaudit")
    elif broken == "JAX not installed":
        within = uninstalled(*NO_JAX)
    else:
        env = {"JAX_PLATFORMS": "tpu"}
    failed = _grade(class_of_two, env, within=within)
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert where in failed.stderr and cause in failed.stderr, failed.stderr
    assert "No student was graded" in failed.stderr
    _nobody_graded(class_of_two)
    shutil.rmtree(class_of_two / "perfaudit", ignore_errors=True)
    fixed = _grade(class_of_two)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Environment check: passed" in fixed.stdout
    assert course.totals(class_of_two) == {"correct": FULL[NB2], "untouched": 0}


@pytest.mark.parametrize("broken", ["XLA_FLAGS=--xla_no_such_flag", "JAX not installed"])
def test_plain_nbgrader_fails_loudly_instead_of_writing_zeros(class_of_two, broken):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    within = uninstalled(*NO_JAX) if broken == "JAX not installed" else []
    if not within:
        env["XLA_FLAGS"] = "--xla_no_such_flag"
    done = subprocess.run([*within, sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--student=correct",
                           "--notebook=02-retracing"], cwd=class_of_two, env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert "GradingEnvironmentError" in done.stdout + done.stderr
    assert "No student was graded" in done.stdout + done.stderr
    assert not (class_of_two / "autograded" / "correct" / ASSIGNMENT / "02-retracing.ipynb").exists()


def test_plain_nbgrader_skips_its_canary_where_the_batch_command_s_check_passed_for_this_environment(class_of_two):
    """The course is a copy of one the batch command checked (its record beside the gradebook): plain nbgrader says
    so and grades at once. A setting given on the command line is not in the fingerprint: the canary runs."""
    said = course.nbgrader("autograde", ASSIGNMENT, "--student=correct", "--notebook=02-retracing",
                           course_dir=class_of_two)
    assert "environment check for 02-retracing: passed earlier for this environment" in said, said
    assert course.scores(class_of_two)["correct"]["02-retracing"] == (FULL[NB2], FULL[NB2])
    said = course.nbgrader("autograde", ASSIGNMENT, "--student=untouched", "--notebook=02-retracing",
                           "--Execute.timeout=600", course_dir=class_of_two)
    assert "passed earlier" not in said, said
    assert course.scores(class_of_two)["untouched"]["02-retracing"] == (0, FULL[NB2])


def test_skipping_the_check_is_said_in_the_summary(class_of_two):
    (class_of_two / "submitted" / "untouched").rename(class_of_two / "untouched-elsewhere")
    # and with a PATH that lacks the venv's bin: the command finds nbgrader's `alembic` itself
    done = _grade(class_of_two, {"PATH": "/usr/bin:/bin"}, "--skip-canary")
    assert done.returncode == 0 and "Environment check: SKIPPED" in done.stdout


def test_without_the_check_a_missing_package_marks_notebooks_not_graded_never_zero(class_of_two):
    """The grader cannot import what the instructor's cells import: each notebook is 'not graded: environment'."""
    shutil.rmtree(class_of_two / "submitted" / "untouched")
    failed = _grade(class_of_two, None, "--skip-canary", within=uninstalled(*NO_JAX))
    said = failed.stdout + failed.stderr
    assert failed.returncode == 3, said
    assert "NOT GRADED (the grading environment's fault, not the student's): correct" in failed.stdout, said
    assert "No module named 'jax'" in failed.stdout and "1 student(s) not graded" in failed.stderr, said
    _nobody_graded(class_of_two)
    fixed = _grade(class_of_two, None, "--skip-canary")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert course.totals(class_of_two) == {"correct": FULL[NB2]}


def test_a_submission_that_breaks_the_setup_cell_itself_is_graded_not_excused(class_of_two):
    """A jax.py of the student's own shadows JAX in their kernel: their fault, so graded (0), not 'environment'."""
    folder = class_of_two / "submitted" / "correct" / ASSIGNMENT
    (folder / "jax.py").write_text("raise ImportError('a jax.py of my own')\n")
    shutil.rmtree(class_of_two / "submitted" / "untouched")
    done = _grade(class_of_two)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NOT GRADED" not in done.stdout
    assert course.totals(class_of_two)["correct"] < FULL[NB2]



FULL_DISK_RUN = """
set -u
cp -a "$COURSE" "$FULL/course" && cd "$FULL/course"
head -c 200000000 /dev/zero > "$FULL/ballast" 2>/dev/null  # until the disk is full
python -m perfaudit.grade --no-progress --no-feedback; echo "FIRST RUN EXIT $?"
python -c "from perfaudit.instructor import course; print('AFTER FIRST RUN', sorted(course.scores('.')))"
rm "$FULL/ballast"
python -m perfaudit.grade --no-progress --no-feedback; echo "SECOND RUN EXIT $?"
python -c "from perfaudit.instructor import course; print('SCORES', {s: int(t) for s, t in course.totals('.').items()})"
"""


def test_a_full_disk_grades_nobody_says_so_and_the_next_run_grades_everyone(class_of_two):
    """The course's disk, really full: a size-capped file system in a mount namespace of the test's own (bwrap),
    holding the course and the grader's temporary folder, filled before grading. Its path is short: the kernels'
    sockets live under TMPDIR, and a socket's path may not pass 107 bytes (a test process's own tmp_path can)."""
    full = Path(tempfile.mkdtemp(prefix="full-", dir="/tmp"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "COURSE": str(class_of_two), "FULL": str(full), "TMPDIR": str(full)}
    try:
        run = subprocess.run(["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                              "--size", str(64 * 2**20), "--tmpfs", str(full), "bash", "-c", FULL_DISK_RUN],
                             env=env, capture_output=True, text=True, timeout=1200)
    finally:
        shutil.rmtree(full, ignore_errors=True)
    said = run.stdout + run.stderr
    assert "FIRST RUN EXIT 3" in said, said
    # The first write to fail names it: a file's (No space left on device) or the gradebook's (sqlite's words).
    assert "the disk is full" in said and any(sign in said for sign in DISK_FULL) and "run again" in said
    assert "AFTER FIRST RUN []" in said  # nobody graded
    assert "SECOND RUN EXIT 0" in said, said
    assert f"SCORES {{'correct': {FULL[NB2]}, 'untouched': 0}}" in said, said


def test_a_test_the_instructor_s_solution_fails_is_named_and_no_skip_is_offered(class_of_two):
    """A hidden test edited so that the instructor's own solution fails it: the refusal names the test and its
    message and says to fix it; skipping the check would grade the class with the broken test, so it is not offered."""
    source = class_of_two / "source" / ASSIGNMENT / "02-retracing.ipynb"
    text = source.read_text()
    hidden = '### BEGIN HIDDEN TESTS\\n",\n    "checks.check_trace_count(traces_after_two_shapes)\\n"'
    edited = text.replace(hidden, hidden.replace("traces_after_two_shapes)", "traces_after_two_shapes, expected=3)"))
    assert edited != text
    source.write_text(edited)
    failed = _grade(class_of_two)
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert ("the instructor's solution of 02-retracing fails its own test 'two_traces' (AssertionError: expected "
            "exactly 3 traces (one per input shape); found 2.") in failed.stderr, failed.stderr
    assert "so the test is at fault, not the environment. No student was graded." in failed.stderr
    assert "make check STAGE=2 IMPLEMENTATION=solution" in failed.stderr
    assert "PERFAUDIT_SKIP_CANARY" not in failed.stderr and "--skip-canary" not in failed.stderr
    _nobody_graded(class_of_two)
