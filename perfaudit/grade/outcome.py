"""What a finished grading task means, one rule for the batch (run.py) and the service (perfaudit/serve/service.py).

`classify` takes what a grading task (perfaudit/grade/task.py) came back with, its result or the exception it
raised, or that it ran past the service's time for a task, and returns an Outcome: one of four kinds, the cause,
and the words each grader says it with. Each grader only maps the kind to its own action:

=============  =========================================  ==================================  =========================
kind           when                                       the batch (run._run_tasks)          the service (harvest)
=============  =========================================  ==================================  =========================
graded         a plain GradingResult, its environment     write it                            write it, release the
               sound                                                                          feedback (writing fails:
                                                                                              pause)
zero           the task killed its worker allowed-        0 with the why per notebook, go on  0 with the why, told to
               failures + 1 times; it ran past                                                the student (fail), go on
               task_timeout_s (the service's only)
not graded     the grader raised; its result is not       the student in batch.environment    pause: grading stops, the
               plain data; nbgrader failed for a          (nothing of theirs written, exit    students in hand queued
               reason that is the environment's           3), go on                           again and told
stop           the worker's environment check (the        cancel the rest, raise: nobody      pause
               canary) failed; the worker's disk is full  more is graded
=============  =========================================  ==================================  =========================

The student is never given a 0 for the grader's or the environment's failure: only the submission's own doing
(a crash or a hang of the process grading it) is a zero. Changing what a failure means is a change here, and
both graders follow.
"""

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from perfaudit.autograde.plugins import canary
from perfaudit.grade import engine
from perfaudit.grade.task import GradingResult, is_plain_result


class Kind(Enum):
    GRADED = "graded"  # write the result
    ZERO = "zero"  # the submission's doing: 0 with the reason, the others go on
    NOT_GRADED = "not graded"  # the grader or the environment failed for this student: never a score
    STOP = "stop"  # the environment is broken: grade nobody more


class Cause(Enum):
    GRADED = "graded"
    KILLED_WORKER = "killed its worker"
    HUNG = "ran past the time for a task"
    GRADER_FAILED = "the grader raised"
    NOT_PLAIN = "its result is not plain data"
    ENVIRONMENT = "nbgrader failed for the environment"
    CANARY = "the environment check failed"
    DISK_FULL = "the disk is full"


KIND_OF = {
    Cause.GRADED: Kind.GRADED,
    Cause.KILLED_WORKER: Kind.ZERO,
    Cause.HUNG: Kind.ZERO,
    Cause.GRADER_FAILED: Kind.NOT_GRADED,
    Cause.NOT_PLAIN: Kind.NOT_GRADED,
    Cause.ENVIRONMENT: Kind.NOT_GRADED,
    Cause.CANARY: Kind.STOP,
    Cause.DISK_FULL: Kind.STOP,
}
EVERY_NOTEBOOK = "every notebook"  # the key of a why that is not one notebook's


@dataclass(frozen=True)
class Outcome:
    """A finished grading task, classified: what it was, why, and the words each grader uses for it."""

    cause: Cause
    result: GradingResult | None = None  # what the task returned (a plain GradingResult only)
    error: BaseException | None = None  # what the task raised
    whys: dict[str, str] = field(default_factory=dict)  # the batch's words: {notebook or EVERY_NOTEBOOK: why}
    said: str = ""  # the service's words: the student's reason (zero) or why grading stopped (not graded, stop)

    @property
    def kind(self) -> Kind:
        return KIND_OF[self.cause]


def classify(notebooks: list[str], result: Any = None, error: BaseException | None = None,
             timed_out_after_s: float | None = None) -> Outcome:
    """The Outcome of a grading task that grades `notebooks`: from the time it ran past (timed_out_after_s, the
    service's task_timeout_s: it never finished), else the exception it raised (error), else its result."""
    if timed_out_after_s is not None:
        return Outcome(Cause.HUNG, whys=dict.fromkeys(notebooks, f"grading it took longer than {timed_out_after_s} s: "
                                                                  "stopped"),
                       said=f"Grading this submission took longer than {timed_out_after_s} s, so it was stopped: it "
                            "was not graded and counts as 0 for now. Look for a loop that never ends or a call that "
                            "waits forever.")
    if isinstance(error, engine.KilledWorker):
        tries = error.allowed_failures + 1
        return Outcome(Cause.KILLED_WORKER, error=error,
                       whys=dict.fromkeys(notebooks, f"grading it killed the worker process {tries} times: not tried "
                                                     "again (distributed.scheduler.allowed-failures)"),
                       said=f"Grading this submission stopped the grader's worker process {tries} times (a crash, or "
                            "more memory than a submission may use): it was not graded and counts as 0 for now.")
    if error is not None:  # the grader's own code failed on that worker: never the student's 0
        said = f"{type(error).__name__}: {error}"
        return Outcome(Cause.DISK_FULL if canary.disk_full(error) else Cause.GRADER_FAILED, error=error,
                       whys={EVERY_NOTEBOOK: f"the grader failed ({said})"},
                       said=f"the grader failed on a worker ({said})")
    if not is_plain_result(result):
        return Outcome(Cause.NOT_PLAIN, whys={EVERY_NOTEBOOK: "the grader failed (its result was not plain data)"},
                       said="a grading task returned something that is not plain data")
    if result.canary:  # this worker's environment is broken: nobody more is graded
        return Outcome(Cause.CANARY, result=result,
                       whys={EVERY_NOTEBOOK: f"{result.canary} (Dask worker on {result.host}, process {result.pid})"},
                       said=f"{result.canary} (worker on {result.host}, process {result.pid})")
    if result.environment:
        return Outcome(Cause.ENVIRONMENT, result=result, whys=dict(result.environment),
                       said="; ".join(f"{nb}: {why}" for nb, why in sorted(result.environment.items())))
    return Outcome(Cause.GRADED, result=result)


def of_future(future: Any, notebooks: list[str]) -> Outcome:
    """classify() of a finished Dask future: its result, or what it raised."""
    try:
        result = future.result()
    except Exception as error:  # noqa: BLE001 - every exception is classified, none is the student's 0 unseen
        return classify(notebooks, error=error)
    return classify(notebooks, result=result)
