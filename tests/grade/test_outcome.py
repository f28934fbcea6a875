"""What a finished grading task means (perfaudit/grade/outcome.py), and that the batch and the service act on it alike.

classify is fed results and exceptions made here, no kernel. """

from types import SimpleNamespace

import pytest
from distributed import KilledWorker

from perfaudit.grade import outcome
from perfaudit.grade.outcome import EVERY_NOTEBOOK, KIND_OF, Cause, Kind, classify
from perfaudit.grade.task import GradingResult

NOTEBOOKS = ["01-first", "02-second"]
WORKER = SimpleNamespace(address="tcp://127.0.0.1:4711")  # the scheduler's record of the last worker that tried


def result(**fields):
    return GradingResult(student="ada", host="node7", pid=4242, machine={}, submitted_sha256={}, **fields)


def killed(allowed_failures=2):
    return KilledWorker("grade-ada-1234", WORKER, allowed_failures)


def test_a_plain_result_with_a_sound_environment_is_graded():
    graded = result(results={"01-first": {}})
    found = classify(NOTEBOOKS, result=graded)
    assert (found.kind, found.cause, found.result, found.error) == (Kind.GRADED, Cause.GRADED, graded, None)
    # failures nbgrader met grading the student's notebooks are the student's: graded, the writer gives their 0
    assert classify(NOTEBOOKS, result=result(failures={"01-first": "malformed JSON"})).kind is Kind.GRADED


def test_a_task_that_killed_its_worker_is_a_zero_with_the_why_for_each_notebook():
    found = classify(NOTEBOOKS, error=killed(allowed_failures=2))
    assert (found.kind, found.cause) == (Kind.ZERO, Cause.KILLED_WORKER)
    assert found.whys == dict.fromkeys(NOTEBOOKS, "grading it killed the worker process 3 times: not tried again "
                                                  "(distributed.scheduler.allowed-failures)")
    assert found.said == ("Grading this submission stopped the grader's worker process 3 times (a crash, or more "
                          "memory than a submission may use): it was not graded and counts as 0 for now.")


def test_a_task_that_ran_past_its_time_is_a_zero_whatever_it_holds():
    found = classify(NOTEBOOKS, result=result(canary="broken"), timed_out_after_s=40)
    assert (found.kind, found.cause) == (Kind.ZERO, Cause.HUNG)
    assert found.said == ("Grading this submission took longer than 40 s, so it was stopped: it was not graded and "
                          "counts as 0 for now. Look for a loop that never ends or a call that waits forever.")
    assert set(found.whys) == set(NOTEBOOKS)


def test_the_grader_raising_is_not_graded_never_a_zero():
    error = RuntimeError("the gradebook is locked")
    found = classify(NOTEBOOKS, error=error)
    assert (found.kind, found.cause, found.error) == (Kind.NOT_GRADED, Cause.GRADER_FAILED, error)
    assert found.whys == {EVERY_NOTEBOOK: "the grader failed (RuntimeError: the gradebook is locked)"}
    assert found.said == "the grader failed on a worker (RuntimeError: the gradebook is locked)"


def test_a_full_disk_stops_grading():
    error = OSError(28, "No space left on device")
    found = classify(NOTEBOOKS, error=error)
    assert (found.kind, found.cause, found.error) == (Kind.STOP, Cause.DISK_FULL, error)
    assert found.said == "the grader failed on a worker (OSError: [Errno 28] No space left on device)"


@pytest.mark.parametrize("returned", [None, {"student": "ada"}, result(results={"01-first": {1, 2}}),
                                      SimpleNamespace(canary=None, environment={})])
def test_what_is_not_a_plain_grading_result_is_not_graded(returned):
    found = classify(NOTEBOOKS, result=returned)
    assert (found.kind, found.cause, found.result) == (Kind.NOT_GRADED, Cause.NOT_PLAIN, None)
    assert found.whys == {EVERY_NOTEBOOK: "the grader failed (its result was not plain data)"}
    assert found.said == "a grading task returned something that is not plain data"


def test_a_failed_environment_check_stops_grading_and_names_the_process():
    found = classify(NOTEBOOKS, result=result(canary="the solution of 01-first fails its test 'a'"))
    assert (found.kind, found.cause) == (Kind.STOP, Cause.CANARY)
    assert found.whys == {EVERY_NOTEBOOK: "the solution of 01-first fails its test 'a' (Dask worker on node7, "
                                          "process 4242)"}
    assert found.said == "the solution of 01-first fails its test 'a' (worker on node7, process 4242)"


def test_nbgrader_failing_for_the_environment_is_not_graded_with_its_reasons():
    failed = result(environment={"02-second": "the kernel never started", "01-first": "no space"})
    found = classify(NOTEBOOKS, result=failed)
    assert (found.kind, found.cause, found.result) == (Kind.NOT_GRADED, Cause.ENVIRONMENT, failed)
    assert found.whys == {"02-second": "the kernel never started", "01-first": "no space"}
    assert found.said == "01-first: no space; 02-second: the kernel never started"


def test_every_cause_has_a_kind_and_the_table_names_every_kind():
    assert set(KIND_OF) == set(Cause)
    table = outcome.__doc__
    assert all(f"\n{kind.value} " in table for kind in Kind)


def test_a_future_is_classified_by_what_it_returned_or_raised():
    class Finished:
        def __init__(self, value=None, error=None):
            self.value, self.error = value, error

        def result(self):
            if self.error:
                raise self.error
            return self.value

    graded = result()
    assert outcome.of_future(Finished(graded), NOTEBOOKS).result is graded
    assert outcome.of_future(Finished(error=killed()), NOTEBOOKS).cause is Cause.KILLED_WORKER
    assert outcome.of_future(Finished(error=ValueError("x")), NOTEBOOKS).cause is Cause.GRADER_FAILED
