"""The course's loops as the grader hands them in (notebook 5): made anew, where the loop runs, from the grader's copy
of perfaudit/handout.py, never looked up in the student's namespace or the kernel's `handout` module.

A hidden test that times the handed-out loop, or has count_traces count it, must measure the loop the course handed
out: `original_train` in the notebook is the student's to rebind, and the kernel's `handout` module is the student's
to patch, so a loop found there could sleep and make any fix look fast. The grader sends the text of its handout.py
instead (the wire's `handout` value, perfaudit/autograde/wire/protocol.py); the kernel runs it in a namespace of its
own and hands the named function to the call. In one process (the checker, a test) it is made here.

The kernel stays the student's process: a loop made there runs with the kernel's JAX, which the student's code
could still patch (docs/grading-security.md). What this closes is every way that needs no code against the grader.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfaudit import handout

HANDOUT_PY = Path(handout.__file__)


class HandedOut:
    """handout.py's function `name`, made anew (made_from) where it runs, each time it is handed in."""

    def __init__(self, name: str) -> None:
        if not callable(getattr(handout, name, None)):
            raise ValueError(f"handout.py has no function {name!r}")
        self.name, self.source = name, HANDOUT_PY.read_text()

    @classmethod
    def loop_of(cls, variant: str) -> "HandedOut":
        """The handed-out training loop of a variant (handout.train_of), named as handout.py names it: not by the
        module's table, which the process it runs in may have changed."""
        if variant not in handout.VARIANTS:
            raise ValueError(f"AUDIT_VARIANT should be one of {', '.join(handout.VARIANTS)}; found {variant!r:.20}.")
        return cls(f"train_{variant.lower()}")

    def made(self) -> Callable[..., Any]:
        """The function, made in this process."""
        return made_from(self.source, self.name)


def beside(student_function: Any, function: HandedOut, called: bool = False) -> Any:
    """function where student_function runs. In one process, the function made here. Beside a reference to a
    kernel's object (the wire's RemoteRef, which has `beside`): the HandedOut itself, made in the kernel when the
    student's function is handed it as an argument; or, called=True, a function whose calls make and run it in that
    kernel. The type is asked, not the object: a student's object answers any attribute."""
    in_kernel = getattr(type(student_function), "beside", None)
    if in_kernel is None:
        return function.made()
    return in_kernel(student_function, function) if called else function


def made_from(source: str, name: str) -> Callable[..., Any]:
    """Function `name` of a fresh module run from source, the text of handout.py (it imports JAX in its functions
    only, so this is cheap)."""
    namespace: dict[str, Any] = {"__name__": "perfaudit_handed_out"}
    exec(compile(source, "<the grader's handout.py>", "exec"), namespace)  # noqa: S102 - the grader's own file
    return namespace[name]
