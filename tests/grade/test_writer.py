"""The one writer of a grading result (perfaudit/grade/writer.py), with the gradebook's steps recorded, not run."""

import pytest
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from perfaudit.bookkeeping.statefolder import State
from perfaudit.grade import writer
from perfaudit.grade.diagnose import Diagnosis
from perfaudit.grade.task import GradingResult

A = "performance-audit"


@pytest.fixture
def course(tmp_path, monkeypatch):
    """(ResultWriter, [gradebook steps it took], [results recorded]) for a course in tmp_path."""
    steps, recorded = [], []
    for name in ("apply_submission", "record_empty", "withhold"):
        monkeypatch.setattr(writer.gradebook, name, lambda gb, *args, _name=name: steps.append((_name, *args)))
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    coursedir = CourseDirectory(config=config)
    recorder = type("Recorder", (), {"append": lambda self, result: recorded.append(result)})()
    return writer.ResultWriter("gradebook", coursedir, A, State(tmp_path / "autograded"), recorder), steps, recorded


def _result(**given):
    return GradingResult(student="ann", host="h", pid=1, machine={}, submitted_sha256={}, **given)


def test_a_graded_student_s_scores_pages_record_and_state_are_written(course, tmp_path):
    write, steps, recorded = course
    (tmp_path / "submitted" / "ann" / A).mkdir(parents=True)
    (tmp_path / "submitted" / "ann" / A / "timestamp.txt").write_text("2026-01-02 10:00:00.000000 UTC")
    old = tmp_path / "autograded" / "ann" / A / "old.ipynb"
    old.parent.mkdir(parents=True)
    old.write_text("an earlier grading's")
    results = {"timestamp": None, "notebooks": {}}
    result = _result(results=results, failures={"02": "nbgrader failed"}, feedback_failure="no page",
                     autograded={"01.ipynb": b"graded"}, feedback={"01.html": b"page"})
    diagnosis = Diagnosis(gradable=["01"], reasons={"02": ["two cells share an id"]}, withheld=["03"])
    reasons = write.write_result("ann", diagnosis, "f1", result, failures={"01": "too slow"}, graded_by="batch")
    assert reasons == {"02": ["two cells share an id", "nbgrader failed"], "01": ["too slow"]}
    assert diagnosis.reasons == {"02": ["two cells share an id"]}  # the diagnosis is left as it was
    assert steps == [("apply_submission", A, "ann", results), ("withhold", A, "ann", ["03"])]
    assert recorded == [result]
    assert not old.exists() and (tmp_path / "autograded" / "ann" / A / "01.ipynb").read_bytes() == b"graded"
    assert (tmp_path / "feedback" / "ann" / A / "01.html").read_bytes() == b"page"
    assert (tmp_path / "feedback" / "ann" / A / "timestamp.txt").read_text() == "2026-01-02 10:00:00.000000 UTC"
    kept = write.state.record("ann")
    assert {k: kept[k] for k in ("fingerprint", "reasons", "graded_by", "feedback_failure")} == {
        "fingerprint": "f1", "reasons": reasons, "graded_by": "batch", "feedback_failure": "no page"}


def test_a_student_with_nothing_graded_gets_a_0_and_the_reasons(course, tmp_path):
    write, steps, recorded = course
    page = tmp_path / "feedback" / "ann" / A / "01.html"
    page.parent.mkdir(parents=True)
    page.write_text("an earlier page")
    reasons = write.write_result("ann", Diagnosis(reasons={"01": ["missing: no 01.ipynb"]}), "f2",
                          _result(failures={"01": "not run"}))
    assert reasons == {"01": ["missing: no 01.ipynb", "not run"]}
    assert steps == [("record_empty", A, "ann"), ("withhold", A, "ann", [])] and recorded == []
    assert not page.exists()
    assert write.state.record("ann")["reasons"] == reasons and "feedback_failure" not in write.state.record("ann")
    assert write.write_result("ann", Diagnosis(), "f3") == {}
    assert steps[-2:] == [("record_empty", A, "ann"), ("withhold", A, "ann", [])]
