"""Check helpers that must run where the student's objects live.

A hidden test runs in the student's own kernel when a student or the stage checker runs a notebook, and in the
grader when it is autograded (perfaudit/autograde/): there the student's functions are proxies and every call
crosses to the kernel as plain data. A helper marked `@in_student_process` (a fresh jit of the student's
function, clearing JAX's caches) must act on the kernel's JAX, not the grader's: while the grader runs a test
it installs a forwarder, and the helper's call goes to the kernel by name. Anywhere else it runs right here.
"""

import contextvars
import functools

_forwarder = contextvars.ContextVar("perfaudit_forwarder", default=None)
MARK = "__perfaudit_in_student_process__"


def in_student_process(fn):
    """Run fn where the student's objects live (see the module docstring)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        forward = _forwarder.get()
        if forward is None:
            return fn(*args, **kwargs)
        return forward(fn.__module__, fn.__qualname__, args, kwargs)

    setattr(wrapper, MARK, True)
    return wrapper


def forwarding_to(forward):
    """Context manager: while it is open, marked helpers call forward(module, name, args, kwargs)."""
    return _Forwarding(forward)


class _Forwarding:
    def __init__(self, forward):
        self.forward, self.token = forward, None

    def __enter__(self):
        self.token = _forwarder.set(self.forward)
        return self

    def __exit__(self, *exc):
        _forwarder.reset(self.token)
