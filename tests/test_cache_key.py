"""Notebook 2's key concepts on what the jit cache key holds, kept as experiments on the installed JAX.

A trace is counted with a Python side effect in the traced body; a compile with JAX's own compile event
(`backend_compile_duration` in `jax.monitoring`, for the function's name only). Counts only, never a time.
"""

import contextlib
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_names = itertools.count()


class Counted:
    """A new function object, tanh(x @ x) * k, whose traces and compiles are counted."""

    def __init__(self):
        self.traces = self.compiles = 0
        self.name = f"cache_key_{next(_names)}"

        def body(x, k=2):
            self.traces += 1  # a Python side effect: it runs while JAX traces, never when the program runs
            return jnp.tanh(x @ x) * k

        body.__name__ = body.__qualname__ = self.name
        self.fn = body

    @contextlib.contextmanager
    def counting(self):
        def listener(event, duration_s, **kwargs):
            if event == COMPILE_EVENT and kwargs.get("fun_name") in (self.name, f"jit({self.name})"):
                self.compiles += 1

        jax.monitoring.register_event_duration_secs_listener(listener)
        try:
            yield
        finally:
            jax.monitoring.unregister_event_duration_listener(listener)

    def added(self, call):
        """(new traces, new compiles) of call(), run to its result."""
        traces, compiles = self.traces, self.compiles
        with self.counting():
            jax.block_until_ready(call())
        return self.traces - traces, self.compiles - compiles


def x16():
    return jax.device_put(np.eye(16, dtype=np.float32))


@pytest.fixture
def counted():
    counted = Counted()
    assert counted.added(lambda: jax.jit(counted.fn)(x16())) == (1, 1), "the first call traces and compiles"
    return counted


def single_device():
    return jax.sharding.SingleDeviceSharding(jax.devices()[0])


@pytest.mark.parametrize("options, expected", [
    ({}, (0, 0)),  # a second wrapper of the same function: its trace and its compiled program are reused
    ({"inline": True}, (0, 0)),
    ({"keep_unused": True}, (0, 0)),
    ({"donate_argnums": 0}, (0, 1)),  # the same trace, compiled again
    ({"out_shardings": single_device}, (0, 1)),  # made in the test: no backend started while collecting
    ({"compiler_options": {"xla_cpu_enable_fast_math": True}}, (0, 1)),
], ids=["a second wrapper", "inline", "keep_unused", "donate_argnums", "out_shardings", "compiler_options"])
def test_options_of_jax_jit_other_than_static_arguments_never_trace_again(counted, options, expected):
    options = {name: value() if callable(value) else value for name, value in options.items()}
    assert counted.added(lambda: jax.jit(counted.fn, **options)(x16())) == expected


def test_static_arguments_and_their_values_trace_again(counted):
    static = jax.jit(counted.fn, static_argnums=1)
    assert counted.added(lambda: static(x16(), 3)) == (1, 1), "a new static value: a new trace"
    assert counted.added(lambda: static(x16(), 3)) == (0, 0), "a seen static value"
    assert counted.added(lambda: static(x16(), 4)) == (1, 1)
    # The same values, static by name: called by keyword, the arguments are another key.
    assert counted.added(lambda: jax.jit(counted.fn, static_argnames="k")(x16(), k=3)) == (1, 1)


def test_the_configuration_in_force_is_in_the_key(counted):
    jitted = jax.jit(counted.fn)
    with jax.default_matmul_precision("highest"):
        assert counted.added(lambda: jitted(x16())) == (1, 1)
    assert counted.added(lambda: jitted(x16())) == (0, 0), "back to the default: the first trace again"
