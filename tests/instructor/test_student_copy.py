"""The student copy (make student-copy): the release and the public package, never a solution or hidden test.

Its checker is run from the unzipped folder, on the copy's own package, as a student runs it on their own machine
(no hub login, no grader's id): notebook 5 asks for the student's id until they state it, then hands out the
variant drawn from it.
"""

import math
import os
import re
import subprocess
import sys
import zipfile

import nbformat
import pytest
from courses import instructor_only_lines

from perfaudit import ASSIGNMENT, checks, paths, variants
from perfaudit.answer_key import answers
from perfaudit.fixtures import samples
from perfaudit.instructor import student_copy

# Lines the public side holds by necessity, each saying nothing of an answer: a key of the public report schema
# opening its section, a key set from the variable of its name, an argument converted, and a call of the student's
# own function by the name and parameters the release gives it.
PUBLIC_BY_DESIGN = [
    re.compile(r'^"\w+": \{$'),
    re.compile(r'^"(\w+)": \1,$'),
    re.compile(r"^(\w+) = Path\(\1\)$"),
    re.compile(r"^evidence = gather_evidence\([\w, ]*\)$"),
]


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zip")
    return student_copy.write(folder / "student.zip")


@pytest.fixture(scope="module")
def unzipped(archive, tmp_path_factory):
    folder = tmp_path_factory.mktemp("student")
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(folder)
    return folder / student_copy.TOP


def _texts(copy):
    """{file: its text}, a notebook's cell sources added so that no JSON escaping hides a line."""
    texts = {}
    for path in sorted(p for p in copy.rglob("*") if p.is_file()):
        text = path.read_text()
        if path.suffix == ".ipynb":
            text += "\n".join(cell.source for cell in nbformat.reads(text, as_version=4).cells)
        texts[path.relative_to(copy).as_posix()] = text
    return texts


def test_no_file_holds_a_solution_or_hidden_test_line(unzipped):
    secret = {line for line in instructor_only_lines() if not any(p.match(line) for p in PUBLIC_BY_DESIGN)}
    assert len(secret) > 50, "the source notebooks should hold solutions and hidden tests"
    leaked = {name: sorted(line for line in secret if line in text) for name, text in _texts(unzipped).items()}
    assert not {name: lines for name, lines in leaked.items() if lines}


def test_it_holds_the_release_and_the_public_package_only(unzipped):
    names = set(_texts(unzipped))
    assert {f"notebooks/{ASSIGNMENT}/{n}" for n in paths.STAGES.values()} <= names
    assert {"README.md", "docs/students.md", "Makefile", "requirements-cpu.txt", "pyproject.toml", "nbgrader_config.py",
            "perfaudit/checks/__init__.py", "perfaudit/checks/timing.py", "perfaudit/check.py", "perfaudit/lab.py",
            "perfaudit/charts.py",
            "perfaudit/report.schema.json", "perfaudit/student_lab/jupyter_server_config.json"} <= names
    instructor_only = [n for n in names if n.startswith(("source/", "perfaudit/instructor/", "perfaudit/autograde/",
                                                          "perfaudit/grade/", "perfaudit/serve/", "perfaudit/hub/",
                                                          "perfaudit/fixtures/", "tests/"))]
    assert not instructor_only


def test_the_self_checks_written_out_values_are_the_answers():
    expected = answers.summary_of(list(checks.SELF_CHECK_SAMPLES))
    assert all(math.isclose(float(expected[k]), v, rel_tol=1e-12) for k, v in checks.SELF_CHECK_SUMMARY.items())
    assert all(answers.cost_of(n) == cost for n, cost in checks.SELF_CHECK_COST.items())


def _check(copy, *args):
    # PYTHONPATH first: the copy's own package, not the course's, in the checker and in its kernels. A student's own
    # machine: no hub login or grader's id to take a student id from (perfaudit/variants.py).
    env = {name: value for name, value in os.environ.items() if name not in (variants.STUDENT_ENV,
                                                                            variants.HUB_USER_ENV)}
    env["PYTHONPATH"] = str(copy)
    return subprocess.run([sys.executable, "-m", "perfaudit.check", *args], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_its_checker_runs_the_visible_checks_on_the_students_notebook(unzipped):
    where = subprocess.run([sys.executable, "-c", "import perfaudit; print(perfaudit.__file__)"], cwd=unzipped,
                           env={**os.environ, "PYTHONPATH": str(unzipped)}, capture_output=True, text=True)
    assert where.stdout.strip() == str(unzipped / "perfaudit" / "__init__.py")

    untouched = _check(unzipped, "--stage", "2")
    assert untouched.returncode == 1, untouched.stderr
    lines = untouched.stdout.splitlines()
    assert lines[0].startswith("FAIL performance-audit stage 2 (your notebook work/performance-audit/02-retracing")
    assert lines[1].startswith("  Hidden tests run only when your work is graded")
    assert "Not filled in yet: counted_workload" in untouched.stdout
    assert "Traceback" not in untouched.stdout

    work = unzipped / "work" / ASSIGNMENT / paths.STAGES[2]
    nbformat.write(samples.submission(samples.SAMPLES["correct"], 2), work)
    solved = _check(unzipped, "--stage", "2")
    assert solved.stdout.startswith("PASS performance-audit stage 2"), solved.stdout + solved.stderr
    assert "Hidden tests run only when your work is graded" in solved.stdout

    instructor = _check(unzipped, "--implementation", "starter", "--stage", "2")
    assert instructor.returncode == 2 and "holds no instructor notebooks (source/)" in instructor.stderr


@pytest.mark.slow
def test_notebook_5_in_a_copy_asks_for_the_student_s_id_then_hands_out_the_variant_drawn_from_it(archive, tmp_path):
    """No student-id.txt comes in the zip: the checker on stage 5 says how to state one (the setup cell's
    NoStudentId), and once the student states it (--id) hands out their variant and says which."""
    with zipfile.ZipFile(archive) as zipped:
        assert [name for name in zipped.namelist() if name.rsplit("/", 1)[-1] == variants.ID_FILE] == []
        zipped.extractall(tmp_path)
    copy = tmp_path / student_copy.TOP
    with pytest.raises(variants.NoStudentId) as no_id:
        variants.mine(env={}, start=copy)

    untold = _check(copy, "--stage", "5")
    assert untold.returncode == 1, untold.stderr
    assert f"  - cell setup: NoStudentId: {no_id.value}" in untold.stdout.splitlines(), untold.stdout
    assert "make id ID=yourid" in str(no_id.value) and "data seed" not in untold.stdout

    told = _check(copy, "--id", "jdoe", "--stage", "5")
    jdoe = variants.assigned("jdoe")
    assert (copy / variants.ID_FILE).read_text() == "jdoe\n"
    lines = told.stdout.splitlines()
    assert lines[0].startswith(f"{copy / variants.ID_FILE}: student 'jdoe': variant {jdoe.variant}, data seed "
                               f"{jdoe.seed}. Notebook 5 hands you that variant's loop"), told.stdout + told.stderr
    assert lines[-1] == f"  student 'jdoe': variant {jdoe.variant}, data seed {jdoe.seed}", told.stdout
    assert "NoStudentId" not in told.stdout and "cell setup" not in told.stdout
