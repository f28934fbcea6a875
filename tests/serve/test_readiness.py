"""The grading service's check of what it runs (perfaudit/serve/readiness.py), and what students read when it cannot
grade: a command that does not run is named in one line; a service that cannot start tells each waiting submission
"not graded yet" and writes the reason in the course's log."""

import os
import sys

import pytest
from serve_course import course_with_exchange, fetch_feedback, service, student_home, submit

from perfaudit import paths
from perfaudit.serve import notes, readiness

STEM = paths.STAGES[1].removesuffix(".ipynb")


def _command(folder, name, text, mode=0o755):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(mode)


def test_a_command_that_does_not_run_is_named_with_why(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    # nbgrader's `alembic` whose first line names a Python this account cannot run: the hub's first failure
    _command(bin_dir, "alembic", f"#!{tmp_path / 'private' / 'python'}\n")
    _command(bin_dir, "broken", "#!/bin/sh\necho 'no module named nbgrader' >&2\nexit 1\n")
    _command(bin_dir, "fine", "#!/bin/sh\necho 1.0\n")
    monkeypatch.setenv("PATH", str(bin_dir))
    assert readiness.command_problem("fine") is None
    assert readiness.command_problem("absent") == f"no `absent` on PATH ({bin_dir})"
    assert readiness.command_problem("alembic").startswith(f"`{bin_dir / 'alembic'}` does not run: ")
    failed = readiness.command_problem("broken")
    assert failed == f"`{bin_dir / 'broken'} --version` failed (1): no module named nbgrader"


def test_a_folder_the_service_makes_counts_as_the_folder_it_is_made_in(tmp_path):
    assert readiness.folder_problem(tmp_path / "autograded" / "x", os.W_OK, "write in") is None
    assert readiness.one_line("grader", ["a", "b"]) == "The grading service cannot grade as grader: a; b."


def test_the_service_here_can_grade(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    assert readiness.problems(tmp_path, [tmp_path / "autograded"], tmp_path / "exchange" / "inbound") == []


@pytest.mark.slow  # a course released, a submission, the service started
def test_a_service_that_cannot_grade_tells_the_waiting_student_and_its_log(tmp_path, monkeypatch):
    root = course_with_exchange(tmp_path / "course", settings="c.GradingService.poll_seconds = 0.5")
    student = student_home(tmp_path / "student", root / "exchange")
    submit(student, "correct")
    monkeypatch.setenv("PERFAUDIT_BWRAP", str(tmp_path / "no-bwrap"))  # no sandbox: the service refuses to grade
    with service(root, "--workers", "1", "--skip-canary") as broken:
        assert broken.process.wait(timeout=300) == 2, broken.log()
    log = (root / "autograded" / ".batch-grading" / "serve.log").read_text()
    assert "Grading refuses to run student code without a sandbox" in log, log
    assert "1 waiting submission(s) told 'not graded yet" in log, log
    [page] = fetch_feedback(student).values()
    assert notes.REPAIR in page[STEM] and "Score:" not in page[STEM]
