"""What a finished grading task means (perfaudit/grade/outcome.py), and that the batch and the service act on it alike.

classify is fed results and exceptions made here, no kernel. The last tests run real Dask tasks that fail one way
each on an in-process cluster, and hand the same futures' kind of failure to the batch's loop (run._run_tasks) and
the service's (Service.harvest): each does what the table of outcome.py says for that kind.
"""

import io
import threading
import uuid
from types import SimpleNamespace

import pytest
from distributed import Client, KilledWorker, wait

from perfaudit.grade import outcome, run
from perfaudit.grade.outcome import EVERY_NOTEBOOK, KIND_OF, Cause, Kind, classify
from perfaudit.grade.task import GradingResult
from perfaudit.serve.service import Service

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


# --- the batch and the service, on the same failures ------------------------------------------------------------

def kills_its_worker(*_):
    raise KilledWorker("grade-ada-1234", WORKER, 1)


def grader_raises(*_):
    raise RuntimeError("the grader's own bug")


def disk_full(*_):
    raise OSError(28, "No space left on device")


def not_plain(*_):
    return {"scores": "as a dict"}


def canary_fails(student, *_):
    return GradingResult(student=student, host="node7", pid=4242, machine={}, submitted_sha256={},
                         canary="the release scores points")


def environment_fails(student, *_):
    return GradingResult(student=student, host="node7", pid=4242, machine={}, submitted_sha256={},
                         environment={"01-first": "the kernel never started"})


def graded(student, *_):
    return GradingResult(student=student, host="node7", pid=4242, machine={}, submitted_sha256={}, results=None)


LET_GO = threading.Event()


def hangs():
    LET_GO.wait(60)


TASKS = {Cause.KILLED_WORKER: kills_its_worker, Cause.GRADER_FAILED: grader_raises, Cause.DISK_FULL: disk_full,
         Cause.NOT_PLAIN: not_plain, Cause.CANARY: canary_fails, Cause.ENVIRONMENT: environment_fails,
         Cause.GRADED: graded}
# What each grader does with each kind: outcome.py's table.
BATCH_DOES = {Kind.GRADED: "write", Kind.ZERO: "zero", Kind.NOT_GRADED: "not graded", Kind.STOP: "stop"}
SERVICE_DOES = {Kind.GRADED: "write", Kind.ZERO: "fail", Kind.NOT_GRADED: "pause", Kind.STOP: "pause"}


@pytest.fixture(scope="module")
def client():
    with Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as dask:
        yield dask


class Grading:
    """A session's part the graders' loops use: submit() runs the given function as the grading task."""

    def __init__(self, client, function):
        self.client, self.function = client, function
        self.coursedir = SimpleNamespace(ignore=[])

    def submit(self, student, files, notebooks, feedback, key_prefix):
        return self.client.submit(self.function, student, files, notebooks,
                                  key=f"{key_prefix}-{student}-{uuid.uuid4().hex}", pure=False)


class Results:
    """The one writer, as the batch's _Writer calls it: what it was asked to write."""

    def __init__(self):
        self.written = []

    def write_result(self, student, *args, **kwargs):
        self.written.append((student, kwargs.get("failures")))


def batch_does(client, function, tmp_path):
    """What run._run_tasks does with the task: its action, and the batch."""
    batch, results = run.Batch(), Results()
    writer = run._Writer(results, {"ada": (SimpleNamespace(), "fingerprint")}, batch, run.Progress(1, False))
    writer.submitted_folder = lambda student: tmp_path / student
    try:
        stopped = run._run_tasks(Grading(client, function), {"ada": NOTEBOOKS}, False, writer)
    except OSError:
        return "stop", batch
    if stopped:
        return "stop", batch
    if "ada" in batch.environment:
        return "not graded", batch
    (student, failures), = results.written
    return ("zero" if failures else "write"), batch


def service_does(client, function):
    """What Service.harvest does with the task: its action, and what the service logged."""
    done = []
    stand_in = SimpleNamespace(in_flight={}, limits=SimpleNamespace(task_timeout_s=600), out=io.StringIO(),
                               client=client, ledger=SimpleNamespace(submissions={"ada+1": {"student": "ada"}}))
    stand_in.write_and_release = lambda name, found, fingerprint, result, failure=None: done.append(
        "fail" if failure else "write")
    stand_in.pause = lambda client, name, why, disk_full=False: done.append("pause")
    for method in ("harvest", "act", "fail"):
        setattr(stand_in, method, getattr(Service, method).__get__(stand_in))
    future = Grading(client, function).submit("ada", {}, NOTEBOOKS, True, "serve")
    wait([future])
    stand_in.in_flight[future] = ("ada+1", 0.0, SimpleNamespace(gradable=NOTEBOOKS), "fingerprint")
    stand_in.harvest(client)
    assert stand_in.in_flight == {}
    return done, stand_in.out.getvalue()


@pytest.mark.parametrize("cause", list(TASKS), ids=[cause.name.lower() for cause in TASKS])
def test_the_batch_and_the_service_act_on_the_same_failure_by_its_one_classification(client, cause, tmp_path):
    future = client.submit(TASKS[cause], "ada", {}, NOTEBOOKS, pure=False)
    wait([future])
    kind = outcome.of_future(future, NOTEBOOKS).kind
    assert kind is KIND_OF[cause]
    assert batch_does(client, TASKS[cause], tmp_path)[0] == BATCH_DOES[kind]
    assert service_does(client, TASKS[cause])[0] == [SERVICE_DOES[kind]]


def test_a_killed_worker_is_the_same_zero_in_both_with_each_one_s_words(client, tmp_path):
    _, batch = batch_does(client, kills_its_worker, tmp_path)
    assert batch.graded == ["ada"] and batch.environment == {}
    _, said = service_does(client, kills_its_worker)
    assert "FAILED ada+1: Grading this submission stopped the grader's worker process 2 times" in said


def test_the_grader_raising_is_not_graded_in_the_batch_and_pauses_the_service(client, tmp_path):
    _, batch = batch_does(client, grader_raises, tmp_path)
    assert batch.environment == {"ada": ["every notebook: the grader failed (RuntimeError: the grader's own bug)"]}
    assert batch.graded == []


def test_a_task_past_the_service_s_time_is_stopped_and_its_student_told(client):
    """The service's own case: its worker restarted, 0 for now with the reason; the batch has no time per task."""
    done, restarted = [], []
    stand_in = SimpleNamespace(in_flight={}, limits=SimpleNamespace(task_timeout_s=0), out=io.StringIO(),
                               client=client, ledger=SimpleNamespace(submissions={"ada+1": {"student": "ada"}}))
    stand_in.write_and_release = lambda name, found, fingerprint, result, failure=None: done.append(failure)
    stand_in.restart_worker = lambda client, future: restarted.append(future)
    for method in ("harvest", "act", "fail"):
        setattr(stand_in, method, getattr(Service, method).__get__(stand_in))
    future = client.submit(hangs, key=f"serve-ada-{uuid.uuid4().hex}", pure=False)
    stand_in.in_flight[future] = ("ada+1", 0.0, SimpleNamespace(gradable=NOTEBOOKS), "fingerprint")
    stand_in.harvest(client)
    assert restarted == [future] and stand_in.in_flight == {}
    assert done == ["Grading this submission took longer than 0 s, so it was stopped: it was not graded and counts "
                    "as 0 for now. Look for a loop that never ends or a call that waits forever."]
    LET_GO.set()  # the in-process worker's thread
