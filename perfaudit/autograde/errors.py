"""The exceptions the grader's plug-ins raise, in one place: the environment's faults (grading stops), the
kernel's end, the student's code failing a request, and what breaks the wire or the sandbox.

Kept free of imports: the kernel's side of the wire (perfaudit/autograde/wire/agent.py) imports it too."""


class UnsafeSubmission(ValueError):
    """The submitted folder holds something the grader does not read; the message lists each entry and why."""


class SandboxUnavailable(RuntimeError):
    pass


class BoundaryCrossed(RuntimeError):
    """Student code left something where only the grader's kernel puts things (its socket folder, before the kernel
    answered): the grader does not use that kernel, and the submission is graded as it is, with nothing run."""


class WireError(ValueError):
    """What crossed the wire breaks the protocol (the message says how, for the student)."""


class KernelGone(Exception):
    """The kernel can answer no more requests (it died, hung past an interrupt, or its channel broke)."""

    def __init__(self, message: str, died: bool = False) -> None:
        super().__init__(message)
        self.died = died  # the kernel process is gone (not merely unresponsive)


class StudentError(Exception):
    """The student's code raised, or answered with something that is not plain data."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Timeout(StudentError):
    pass


class RaisedInKernel(StudentError):
    """The student's code raised: its type and message are the kernel's, written while a test's inputs were there."""


class GradingEnvironmentError(RuntimeError):
    """The grading environment is broken: nothing was graded, and the message says what to fix."""


class SolutionFailsItsTest(GradingEnvironmentError):
    """The instructor's solution fails one of its own tests, the error raised in that test's cell and every cell
    before it run clean: the test is at fault, not the environment, and skipping the check would grade the class
    with it. Nothing was graded."""
