"""make demo grades its samples in demo/, a course folder of its own: the class's grades never hold them."""

import csv
import io

import pytest
from courses import make_course

from perfaudit.fixtures import samples
from perfaudit.grade.run import Options, run
from perfaudit.instructor import demo

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")]


def _students(grades_csv):
    with open(grades_csv, newline="") as handle:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}


def test_the_class_s_grades_after_demo_then_grade_hold_no_sample_student(tmp_path, capsys):
    root = make_course(tmp_path)
    (root / "submitted").mkdir()
    # A class student who handed in the untouched release of notebook 1 (the sample's notebook under the student's
    # own name): one notebook puts the student in the class's gradebook, which is all the test reads of it.
    samples.write_submission("untouched", root / "submitted", stages=[1]).parent.rename(
        root / "submitted" / "doejane_12345")

    assert demo.main(["--course", str(root)]) == 0
    said = capsys.readouterr().out
    assert "a course folder of its own" in said and "the class's gradebook.db" in said
    run(Options(course_dir=root, workers=2, progress=False, canary=False, feedback=False), out=io.StringIO())

    assert _students(root / "grades.csv") == {"doejane_12345": 0.0}
    assert _students(root / demo.DEMO_DIR / "grades.csv") == {"correct": 26.0, "partly-right": 11.0, "untouched": 0.0}
    assert not (root / "autograded" / "grades-by-notebook.csv").exists()


def test_without_bubblewrap_the_demo_grades_its_trusted_samples_and_says_so_once(tmp_path, capsys, monkeypatch):
    from perfaudit.autograde.plugins import canary
    from perfaudit.autograde.isolation import sandbox

    root = make_course(tmp_path)
    monkeypatch.setenv(sandbox.BWRAP, str(tmp_path / "no-bwrap"))
    # Unset now and afterwards: the demo sets it for itself, and a delenv of an unset variable restores nothing (it
    # stayed set in this test process, and every later grading there counted as another environment).
    monkeypatch.setenv(sandbox.UNSANDBOXED, "")
    monkeypatch.delenv(sandbox.UNSANDBOXED)
    monkeypatch.setattr(demo, "DEMO_STUDENTS", ("correct",))  # one sample is enough to show it grades
    # Without plain nbgrader's environment check (8 kernels, twice the grading's 4): the test above runs the
    # demo with it, and this one is about the sandbox missing.
    monkeypatch.setenv(canary.SKIP, "1")
    assert demo.main(["--course", str(root)]) == 0
    said = capsys.readouterr().out
    assert [line for line in said.splitlines() if "sandbox" in line] == [
        f"No sandbox here (bubblewrap is not installed (no `{tmp_path / 'no-bwrap'}`)): the demo grades its bundled "
        "samples without one. Grading students needs it: sudo apt-get install bubblewrap"], said
    assert _students(root / demo.DEMO_DIR / "grades.csv") == {"correct": 26.0}
