"""Each notebook's central mistake, caught by its visible self-check in the student's own kernel.

Notebook 1's (a clock that stops before the result is ready) is check_time_call in timing.py. Here: notebook 2's
counter that counts calls instead of traces, notebook 3's warm first call, notebook 4's stage timing that is not of
its stage alone. Each watches the student's code through wrappers made here, on one clock, and judges relations
only: a timing against the span of the work it must cover, never against a fixed number. Nothing here imports the
grader or the answer key: these run where the student runs them.
"""

import functools
import itertools
import os
import time

import numpy as np

from perfaudit.checks.failure import fail
from perfaudit.checks.outputs import device_matrix
from perfaudit.checks.stages import check_stages
from perfaudit.checks.timing import as_float, check_seconds

CLOCK_SLACK_S = 50e-6  # one process, one clock: rounding only
_names = itertools.count()


def _int_traces(traces):
    count = traces()
    if type(count) is not int:
        fail(f"traces() should return an int; found {type(count).__name__} {count!r:.40}.")
    return count


def check_counts_traces_not_calls(audited, traces):
    """Calls of audited at shapes it has already traced (16x16, 32x32) add no trace: a counter that rises on every
    call counts calls, not traces."""
    import jax  # JAX on first use: see perfaudit/checks/__init__.py

    before = _int_traces(traces)
    calls = [device_matrix(np.eye(16)), device_matrix(np.eye(32)), device_matrix(np.eye(16))]
    for x in calls:
        jax.block_until_ready(audited(x))
    added = _int_traces(traces) - before
    if added >= len(calls):
        fail(f"traces() went up by {added} for {len(calls)} more calls at shapes audited had already traced (16x16 and "
             "32x32): your counter counts calls, not traces. JAX runs the Python body of a jitted function only "
             "while it traces, once per new shape or dtype; later calls run the compiled program and never reach "
             "your Python code. Increment the counter inside the function you hand to jax.jit (audited = "
             "jax.jit(counted_workload)), not around the call, and call audited, not the function itself.")
    if added:
        fail(f"traces() went up by {added} for {len(calls)} calls at shapes audited had already traced (16x16 and "
             "32x32): a call at a shape jit has seen reuses its trace and adds none. Does something clear JAX's "
             "caches, or count anything besides the traced body?")


class _WatchedJit:
    """A jit for gather_evidence(steady_calls, jit): jax.jit itself, whose functions note, on the caller's clock,
    how long each call took to return and whether it traced (tracing and compiling happen inside the call)."""

    def __init__(self):
        self.calls = []  # (shape, seconds until the call returned, whether it traced)

    def __call__(self, fn, *args, **kwargs):
        import jax  # JAX on first use: see perfaudit/checks/__init__.py

        traced = [0]

        @functools.wraps(fn)
        def counted(*a, **k):
            traced[0] += 1
            return fn(*a, **k)

        return _WatchedFunction(jax.jit(counted, *args, **kwargs), traced, self.calls)


class _WatchedFunction:
    def __init__(self, jitted, traced, calls):
        self._jitted, self._traced, self._calls = jitted, traced, calls

    def __call__(self, x, *args, **kwargs):
        before, started = self._traced[0], time.perf_counter()
        out = self._jitted(x, *args, **kwargs)
        self._calls.append((tuple(getattr(x, "shape", ())), time.perf_counter() - started, self._traced[0] > before))
        return out

    def __getattr__(self, name):
        return getattr(self._jitted, name)


def check_first_call_is_cold(gather_evidence, steady_calls=5):
    """gather_evidence(steady_calls, jit) with a jit that watches its calls: first_call_s is at least as long as the
    first call at the reported shape took to return, which traced and compiled. A function called before the
    timed "first" call was already compiled: a warm first call."""
    jit = _WatchedJit()
    evidence = gather_evidence(steady_calls, jit)
    what = f"gather_evidence({steady_calls}, jit)"
    if not isinstance(evidence, dict):
        fail(f"{what} should return a dict; found {type(evidence).__name__}.")
    first = check_seconds(as_float(evidence.get("first_call_s")), f"{what}: first_call_s")
    shape = tuple(evidence.get("shape") or (16, 16))
    compiling = [seconds for call_shape, seconds, traced in jit.calls if traced and call_shape == shape]
    if not jit.calls:
        fail(f"{what} never called a function made by the jit it was given: make the audited function with "
             "audited = jit(counted_workload), using the jit argument, and time its calls.")
    if not compiling:
        fail(f"{what}: no call of the function made by the jit it was given traced at {list(shape)}, the shape the "
             "report gives: time the first call of a newly jitted function at that shape.")
    if first + CLOCK_SLACK_S < max(compiling):
        fail(f"{what}: first_call_s is {first * 1e3:.3f} ms, but the function's first call at {list(shape)} took "
             f"{max(compiling) * 1e3:.3f} ms just to trace and compile: the call you timed as the first was a warm "
             "one, made after the function was already compiled. Time the very first call of the newly jitted "
             "function, with nothing calling it before, from just before the call until block_until_ready().")


STAGE_CALLS = {"trace": "jitted.trace(x)", "lower": "traced.lower()", "compile": "lowered.compile()"}


class _Stages:
    """jitted.trace(x).lower().compile() and the compiled program's runs, each noted (stage, start, end) on one
    clock as it happens, so a timing can be set against the stages around it."""

    def __init__(self):
        self.events = []

    def timed(self, stage, call, *args, **kwargs):
        started = time.perf_counter()
        out = call(*args, **kwargs)
        self.events.append((stage, started, time.perf_counter()))
        return out


class _Watched:
    """An AOT object (jitted, traced, lowered, compiled) whose next step is noted; everything else passes through."""

    def __init__(self, inner, stages):
        self._inner, self._stages = inner, stages

    def __getattr__(self, name):
        attribute = getattr(self._inner, name)
        if name not in STAGE_CALLS:
            return attribute
        return lambda *a, **k: _Watched(self._stages.timed(name, attribute, *a, **k), self._stages)

    def __call__(self, *args, **kwargs):
        return self._stages.timed("run", self._inner, *args, **kwargs)


def check_stages_are_their_own(time_stages, steady_runs=5):
    """time_stages on a new jitted function whose trace, lower, compile and runs are noted as they happen: each of
    trace_s, lower_s and compile_s covers its stage and fits in the time between the stages before and after it,
    so no timing holds another stage too (compile timed inside lower_s, one timing reused for two stages)."""
    # JAX on first use: see perfaudit/checks/__init__.py
    import jax
    import jax.numpy as jnp

    def audited(v):
        return jnp.tanh(v @ v)

    audited.__name__ = audited.__qualname__ = f"perfaudit_selfcheck_{os.getpid()}_{next(_names)}"  # never cached
    stages = _Stages()
    x = device_matrix(np.eye(16))
    started = time.perf_counter()
    found = time_stages(_Watched(jax.jit(audited), stages), x, steady_runs)
    ended = time.perf_counter()
    what = f"time_stages(jitted, x, {steady_runs})"
    found = check_stages(found, steady_runs, what)
    events = stages.events
    for stage, words in STAGE_CALLS.items():
        seconds = found[f"{stage}_s"]
        spans, gaps = [], []
        for i, (name, start, end) in enumerate(events):
            if name == stage:
                spans.append(end - start)
                gaps.append((events[i + 1][1] if i + 1 < len(events) else ended)
                            - (events[i - 1][2] if i else started))
        if not spans:
            fail(f"{what} never called {words} on the function it was given: build the chain from it, "
                 "jitted.trace(x).lower().compile(), and time each step.")
        if seconds + CLOCK_SLACK_S < min(spans):
            fail(f"{what}: {stage}_s is {seconds * 1e3:.3f} ms, shorter than {words} took: time it alone, from just "
                 "before the call until it returns.")
        if seconds > max(gaps) + CLOCK_SLACK_S:
            fail(f"{what}: {stage}_s is {seconds * 1e3:.3f} ms, longer than {words} and the time around it until "
                 "the next stage began: it timed another stage too (compile inside the lower timing, or one timing "
                 f"reused for two stages). Give each stage a clock of its own: start it just before {words} and "
                 "stop it as soon as that returns. (Or milliseconds instead of seconds?)")
