"""Version drift: what grading ran with, the pins of requirements-cpu.txt, and the sentences that tell them apart.

Fast: no grading. The batch grader's use of these (record beside the gradebook, lines in the summary) is tested
through the functions it calls.
"""

import json
import subprocess
import sys
from importlib import metadata

import pytest

from perfaudit import paths
from perfaudit.bookkeeping import versions
from perfaudit.grade import summary
from perfaudit.grade.run import Batch

REQUIREMENTS = """\
# Exact versions for the CPU environment (Python 3.11; jax 0.10.2 is the last release for 3.11).
alembic==1.20.1
Jinja2==3.1.6
jax==0.10.2
jaxlib == 0.10.2   # spaces and a comment
typing_extensions==4.16.0
nbgrader[docs]==0.9.6
numpy==2.4.6 ; python_version >= "3.11"
scipy>=1.17
# pytest==1.0 commented out
-e .
"""

FOUND = {"python": "3.11.7", "jax": "0.10.2", "jaxlib": "0.10.2", "numpy": "2.4.6", "nbgrader": "0.9.6"}


@pytest.fixture
def requirements(tmp_path):
    path = tmp_path / "requirements-cpu.txt"
    path.write_text(REQUIREMENTS)
    return path


def test_pinned_reads_exact_pins_by_normalized_name(requirements):
    pins = versions.pinned(requirements)
    assert pins == {
        "python": "3.11",
        "alembic": "1.20.1",
        "jinja2": "3.1.6",
        "jax": "0.10.2",
        "jaxlib": "0.10.2",
        "typing-extensions": "4.16.0",
        "nbgrader": "0.9.6",
        "numpy": "2.4.6",
    }  # no scipy (a range, not a pin), no pytest (commented out), nothing from `-e .`


def test_python_is_left_out_when_no_comment_names_it(tmp_path):
    path = tmp_path / "requirements.txt"
    path.write_text("# pinned by hand\njax==0.10.2\n")
    assert versions.pinned(path) == {"jax": "0.10.2"}
    assert versions.drift({**FOUND, "python": "3.12.1"}, versions.pinned(path)) == []


def test_the_repository_pins_what_a_grade_depends_on():
    pins = versions.pinned(paths.ROOT / "requirements-cpu.txt")
    assert set(versions.graded_with()) <= set(pins), "python and every package a grade depends on pinned"


def test_reading_a_notebook_builds_no_iri_grammar():
    """nbformat's validator imports jsonschema, whose format extra from 4.25 brings rfc3987-syntax: a grammar built at
    import, seconds of CPU in every nbgrader command, grader and kernel setup cell (requirements-cpu.txt)."""
    pins = versions.pinned(paths.ROOT / "requirements-cpu.txt")
    assert "rfc3987-syntax" not in pins and "lark" not in pins
    code = "import sys, nbformat.validator, perfaudit.checks; print('rfc3987_syntax' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_graded_with_reads_metadata_and_never_imports_jax():
    code = (
        "import sys, json; from perfaudit.bookkeeping import versions; found = versions.graded_with(); "
        "print(json.dumps([found, 'jax' in sys.modules, 'numpy' in sys.modules]))"
    )
    found, jax_imported, numpy_imported = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    )
    assert list(found) == ["python", "jax", "jaxlib", "numpy", "nbgrader", "nbclient", "jupyter-client"]
    assert found["python"] == ".".join(map(str, sys.version_info[:3]))
    assert found["jax"] == metadata.version("jax") and found["nbgrader"] == metadata.version("nbgrader")
    assert not jax_imported and not numpy_imported


def test_no_drift_when_everything_is_pinned_as_found(requirements):
    assert versions.drift(FOUND, versions.pinned(requirements)) == []


def test_drift_older_and_newer_than_the_pins(requirements):
    found = {**FOUND, "jax": "0.10.1", "numpy": "2.5.0"}
    assert versions.drift(found, versions.pinned(requirements)) == [
        "jax 0.10.1 graded, requirements-cpu.txt pins 0.10.2",
        "numpy 2.5.0 graded, requirements-cpu.txt pins 2.4.6",
    ]


def test_drift_of_a_package_that_is_not_installed(requirements):
    assert versions.drift({**FOUND, "jaxlib": None}, versions.pinned(requirements)) == [
        "jaxlib not installed, requirements-cpu.txt pins 0.10.2"
    ]


def test_python_compares_with_the_series_its_comment_names(requirements):
    pins = versions.pinned(requirements)
    assert versions.drift({**FOUND, "python": "3.11.0"}, pins) == []
    assert versions.drift({**FOUND, "python": "3.12.1"}, pins) == [
        "python 3.12.1 graded, requirements-cpu.txt pins 3.11"
    ]
    assert versions.drift({**FOUND, "python": "3.1.4"}, pins) != []  # 3.1 is not 3.11


def test_a_missing_requirements_file_is_itself_a_warning(tmp_path):
    missing = tmp_path / "requirements-cpu.txt"
    found, drifts = versions.check(missing)
    assert found == versions.graded_with()
    assert drifts == [f"no requirements-cpu.txt at {missing}: versions not compared with any pins"]


def test_summary_lines_one_line_of_versions_then_a_warning_per_drift():
    drifts = ["jax 0.10.1 graded, requirements-cpu.txt pins 0.10.2"]
    assert versions.summary_lines({**FOUND, "jax": "0.10.1", "nbgrader": None}, drifts) == [
        "Graded with: python 3.11.7, jax 0.10.1, jaxlib 0.10.2, numpy 2.4.6, nbgrader not installed",
        "WARNING: jax 0.10.1 graded, requirements-cpu.txt pins 0.10.2",
    ]
    assert versions.summary_lines(FOUND, []) == [
        "Graded with: python 3.11.7, jax 0.10.2, jaxlib 0.10.2, numpy 2.4.6, nbgrader 0.9.6"
    ]


def test_the_summary_starts_with_the_versions(capsys):
    summary.print_versions(Batch(versions=FOUND, drift=["numpy 2.5.0 graded, requirements-cpu.txt pins 2.4.6"]),
                           sys.stdout)
    assert capsys.readouterr().out.splitlines() == [
        "Graded with: python 3.11.7, jax 0.10.2, jaxlib 0.10.2, numpy 2.4.6, nbgrader 0.9.6",
        "WARNING: numpy 2.5.0 graded, requirements-cpu.txt pins 2.4.6",
    ]


@pytest.mark.parametrize("url, beside", [
    ("sqlite:////course/gradebook.db", "/course/gradebook.db.versions.json"),
    ("sqlite:///relative/gb.sqlite", "relative/gb.sqlite.versions.json"),
    ("sqlite://", "/course/autograded/.batch-grading/versions.json"),
    ("postgresql://grader@db.example/course", "/course/autograded/.batch-grading/versions.json"),
])
def test_record_path_beside_a_sqlite_gradebook_else_in_the_batch_state(url, beside):
    assert str(versions.record_path(url, "/course/autograded")) == beside


def test_record_appends_each_run_with_a_timestamp(tmp_path):
    path = tmp_path / "gradebook.db.versions.json"
    versions.record(path, {**FOUND, "jax": "0.10.1"}, ["jax 0.10.1 graded, requirements-cpu.txt pins 0.10.2"], 3)
    versions.record(path, FOUND, [], 40)
    runs = json.loads(path.read_text())
    assert [run["versions"]["jax"] for run in runs] == ["0.10.1", "0.10.2"]
    assert [run["students_graded"] for run in runs] == [3, 40]
    assert runs[0]["drift"] == ["jax 0.10.1 graded, requirements-cpu.txt pins 0.10.2"] and runs[1]["drift"] == []
    assert all(run["graded_at"][:2] == "20" and run["host"] for run in runs)
    assert list(tmp_path.iterdir()) == [path], "written atomically: no temporary file left"
