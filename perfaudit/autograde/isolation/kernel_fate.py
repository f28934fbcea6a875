"""Whose doing a kernel's end was, and whether its notebook is run once more: the one rule both graders follow.

TrustedExecute asks it whenever a kernel dies or never answers, under plain `nbgrader autograde` and
`python -m perfaudit.grade` alike. The only other layer is Dask's, in the batch and the service: a task whose
worker process dies is handed to another worker, up to `distributed.scheduler.allowed-failures` times
(perfaudit/grade/engine.py).

- The student's doing: the kernel exited, crashed, killed itself or went over the submission's own memory limit.
  Graded as it is: the cells it had not finished are not run, the tests before keep their points.
- Killed from outside: the machine's own records name a cause outside the submission (the OOM killer chose the
  kernel for the machine's memory or for another group's limit: memory.MemoryLimit.killed_from_outside). Run once
  more, from the submitted notebook.
- Crossed the boundary: code of the submission ran at the kernel's start and left something in the kernel's socket
  folder (perfaudit/autograde/isolation/boundary.py): the student's doing; nothing is run.
- Never started: the kernel died or gave up before it answered, so no student code ran (nbgrader's log then says
  "Kernel died before replying to kernel_info"): kernels started at the same moment can be handed the same free
  TCP port (jupyter_client picks ports before a kernel binds them), a busy machine can miss the start's time limit.
  Run once more, in a new kernel. If it fails again, the environment check decides whether the environment or the
  submission is at fault (TrustedExecute._judge, canary.py).

A notebook is run at most RUNS times, whatever happened in each run.
"""

import enum
from dataclasses import dataclass
from typing import Protocol

from perfaudit.autograde.errors import BoundaryCrossed


class Fate(enum.Enum):
    """How a kernel ended, when it ended before its notebook did."""

    STUDENTS_DOING = "the student's doing"
    KILLED_FROM_OUTSIDE = "killed from outside"
    NEVER_STARTED = "never started"


RUNS = 2  # a notebook's runs at most: once, and once more when its kernel's end was not the student's doing
DIED = "the kernel died: it crashed, exited, or ran out of memory"


@dataclass(frozen=True)
class Ending:
    """How one run's kernel ended (fate) and the reason, in words for the log."""

    fate: Fate
    why: str


class OutsideRecords(Protocol):
    """What the machine recorded of a kernel's processes (memory.MemoryLimit)."""

    def killed_from_outside(self) -> str | None: ...


def of_dead_kernel(records: OutsideRecords | None) -> Ending:
    """A kernel that died while it ran the notebook: the student's doing, unless the machine's records (the kernel's
    memory limit; None where it had none) name a cause outside the submission."""
    outside = records.killed_from_outside() if records is not None else None
    if outside:
        return Ending(Fate.KILLED_FROM_OUTSIDE, outside)
    return Ending(Fate.STUDENTS_DOING, DIED)


def of_failed_start(error: BaseException, crossed: str | None = None) -> Ending:
    """A kernel that never answered: nothing of the student's ran yet, unless its sandbox shows that code of the
    submission ran at the kernel's start and crossed the boundary (BoundaryCrossed, or `crossed`: what the kernel
    manager found at its sealed sockets): that is the student's doing."""
    if isinstance(error, BoundaryCrossed):
        return Ending(Fate.STUDENTS_DOING, f"the kernel was not used: {error}")
    if crossed:
        return Ending(Fate.STUDENTS_DOING, f"the kernel did not answer: {crossed}")
    return Ending(Fate.NEVER_STARTED, f"the kernel did not start ({type(error).__name__}: {error})")


def run_once_more(ending: Ending | None, runs: int) -> bool:
    """Whether a notebook whose last run (of `runs` so far) ended so is run once more."""
    return ending is not None and ending.fate is not Fate.STUDENTS_DOING and runs < RUNS
