"""The grader's jit for a training loop (notebook 5): hidden tests hand it to the student's fixed_train as `jit`.

Each function the loop makes with it is jax.jit of that function with the options the loop gave (static_argnums,
static_argnames, ...), and the grader counts each of its traces itself: in a graded kernel each trace asks on the
kernel's stdin, and the grader's side counts the question (perfaudit/autograde/wire/channel.py); in one process (the
checker, a test) it counts here. So "fixed_train traces once per loop" is the grader's own count, whatever the
student's count_traces says.

With `poison=True` every floating-point array the jitted functions return is NaN: a loop whose weights and losses
come from what it jitted returns NaN, and one that computes them some other way (the NumPy reference, beside a token
call of a jitted function) returns finite values. The kernel learns only that this jit poisons, which any call shows.
"""

import functools
from collections.abc import Callable
from typing import Any


class LoopJit:
    """The grader's side: `traces`, counted as each is reported. Called in one process, it is the jit itself."""

    number: int | None

    def __init__(self, poison: bool = False) -> None:
        self.poison, self.traces, self.number = poison, 0, None

    def traced(self) -> None:
        self.traces += 1

    def __call__(self, fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        return make_loop_jit(self.traced, self.poison)(fn, **options)


def make_loop_jit(traced: Callable[[], Any], poison: bool) -> Callable[..., Callable[..., Any]]:
    """The jit, where the loop runs: jax.jit(fn, **options) whose body calls traced() at each trace (and makes its
    floating-point results NaN when poison)."""
    import jax  # where the loop runs only: the grader imports this module and never starts JAX for it
    import jax.numpy as jnp

    def nan_if_float(value):
        return value * jnp.nan if jnp.issubdtype(jnp.result_type(value), jnp.floating) else value

    def jit(fn, **options):
        @functools.wraps(fn)  # jax.jit finds static_argnames in fn's signature
        def counted(*a, **k):
            traced()
            out = fn(*a, **k)
            return jax.tree_util.tree_map(nan_if_float, out) if poison else out

        return jax.jit(counted, **options)

    return jit
