"""python -m perfaudit.grade (perfaudit/grade/__main__.py) run in this process, its steps stood in for."""

import errno
import types

import pytest

from perfaudit.grade import __main__ as command


@pytest.fixture
def course(tmp_path, monkeypatch):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_an_export_to_an_lms_needs_its_roster(capsys):
    with pytest.raises(SystemExit):
        command.parse(["--export", "canvas"])
    assert "--export needs --roster: the file the LMS gives you to fill in" in capsys.readouterr().err
    assert command.parse(["--export", "records"]).roster is None


def test_options_go_to_the_run_as_given(course, monkeypatch):
    given = []
    monkeypatch.setattr(command, "run", lambda options: given.append(options) or types.SimpleNamespace(environment={}))
    assert command.main(["--workers", "3", "--regrade", "--no-feedback", "--cell-timeout", "9"]) == 0
    [options] = given
    assert (options.workers, options.regrade, options.feedback, options.cell_timeout, options.canary) == (
        3, True, False, 9, True)
    assert options.course_dir.resolve() == course.resolve()


def test_each_refusal_and_failure_has_its_exit_status(course, monkeypatch, capsys):
    def refuse(options):
        raise command.NothingToGrade("Nothing to grade: no student's folder.")
    monkeypatch.setattr(command, "run", refuse)
    assert command.main([]) == 2 and capsys.readouterr().err == "Nothing to grade: no student's folder.\n"

    def disk_full(options):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(command, "run", disk_full)
    assert command.main([]) == 3 and capsys.readouterr().err.startswith(
        "Grading stopped: the disk is full (OSError: [Errno 28] No space left on device).")

    def bug(options):
        raise KeyError("a bug")
    monkeypatch.setattr(command, "run", bug)
    with pytest.raises(KeyError):
        command.main([])
    monkeypatch.setattr(command, "run", lambda options: types.SimpleNamespace(environment={"ann": ["no JAX"]}))
    assert command.main([]) == 3 and capsys.readouterr().err.startswith(
        "1 student(s) not graded: the grading environment failed (see above).")


def test_reports_and_exports_grade_nobody(course, monkeypatch, capsys):
    monkeypatch.setattr(command, "run", lambda options: pytest.fail("graded"))
    monkeypatch.setattr(command.classreport, "build_for", lambda course_dir, db_url: (course / "report.html", 1.5))
    monkeypatch.setattr(command.records, "export_course", lambda course_dir, db_url: ["records: 0 of 0"])
    monkeypatch.setattr(command.feedback, "refresh", lambda course_dir, db_url: ([], ["failed"], ["feedback: ..."]))
    monkeypatch.setattr(command.export, "export", lambda lms, course_dir, roster, column, db_url: types.SimpleNamespace(
        lines=[f"{lms} from {roster.name}, column {column}"]))
    (course / "roster.csv").write_text("")
    assert command.main(["--report"]) == 0
    assert command.main(["--export", "records"]) == 0
    assert command.main(["--feedback-only"]) == 3
    assert command.main(["--export", "moodle", "--roster", "roster.csv", "--lms-column", "A1"]) == 0
    assert capsys.readouterr().out == (f"Class report: {course / 'report.html'} (built in 1.5 s)\nrecords: 0 of 0\n"
                                       "feedback: ...\nmoodle from roster.csv, column A1\n")
