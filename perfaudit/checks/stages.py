"""Notebook 4's stages, checked: trace, lower, compile and the compiled program's runs, timed by the student.

Relations only, never a time against a fixed number: every part is a positive float of seconds, each of trace,
lower and compile lasts at least as long as that stage of the function handed in took (the hidden test hands in a
function of the grader's jit, which holds each stage for a time it keeps to itself:
perfaudit/autograde/instruments.py), and all of them fit in the call as the grader timed it. The first run of the compiled
program is usually slower than its steady runs, but a busy machine can invert that, so nothing asks it.
Re-exported by perfaudit.checks.
"""

import itertools
import math
import os
import time

import numpy as np

from perfaudit.checks.failure import fail as _fail
from perfaudit.kernelside import in_student_process

STAGE_PARTS = ("trace_s", "lower_s", "compile_s", "first_run_s")
STAGE_WORDS = {"trace_s": "jitted.trace(x)", "lower_s": "traced.lower()", "compile_s": "lowered.compile()"}
CLOCK_SLACK_S = 50e-6  # one process, one clock: rounding only
_names = itertools.count()


def _seconds(value, what):
    if isinstance(value, np.floating):
        value = float(value)
    if not isinstance(value, float):
        _fail(f"{what} should be a float number of seconds (time.perf_counter() differences are); found "
              f"{type(value).__name__} {value!r:.40}. Report seconds, not milliseconds.")
    if not math.isfinite(value) or value <= 0:
        _fail(f"{what} should be a positive, finite number of seconds; found {value!r}.")
    return value


def check_stages(stages, steady_runs, what="time_stages"):
    """The dict time_stages returns: trace_s, lower_s, compile_s, first_run_s and steady_runs steady runs, all
    positive floats of seconds. Returns {part: seconds} with steady_run_s as a list."""
    if not isinstance(stages, dict):
        _fail(f"{what} should return a dict; found {type(stages).__name__}.")
    missing = [key for key in (*STAGE_PARTS, "steady_run_s") if key not in stages]
    if missing:
        _fail(f"{what} should return a dict with the keys {', '.join((*STAGE_PARTS, 'steady_run_s'))}; "
              f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing.")
    found = {key: _seconds(stages[key], f"{what}: {key}") for key in STAGE_PARTS}
    steady = stages["steady_run_s"]
    if isinstance(steady, np.ndarray) and steady.ndim == 1:
        steady = steady.tolist()
    if not isinstance(steady, (list, tuple)) or len(steady) != steady_runs:
        length = f"holds {len(steady)}" if isinstance(steady, (list, tuple)) else f"is a {type(steady).__name__}"
        _fail(f"{what}: steady_run_s should be a sequence of {steady_runs} timings in seconds, one per steady run "
              f"of the compiled program; it {length}.")
    found["steady_run_s"] = [_seconds(s, f"{what}: steady_run_s[{i}]") for i, s in enumerate(steady)]
    return found


@in_student_process
def observe_time_stages(time_stages, n, steady_runs, jit=None):
    """time_stages(jitted, x, steady_runs) on a new jit (`jit`, or jax.jit) of tanh(x @ x) at n x n, made here and
    never called. Runs where the student's functions live. Returns {"stages": what time_stages returned,
    "outer_s": seconds the call took}."""
    import jax
    import jax.numpy as jnp

    def audited(x):
        return jnp.tanh(x @ x)

    audited.__name__ = audited.__qualname__ = f"perfaudit_stages_{os.getpid()}_{next(_names)}"
    x = jax.device_put(np.random.default_rng().standard_normal((n, n)).astype(np.float32) / np.sqrt(n))
    jitted = (jit or jax.jit)(audited)
    started = time.perf_counter()
    stages = time_stages(jitted, x, steady_runs)
    return {"stages": stages, "outer_s": time.perf_counter() - started}


def check_time_stages(time_stages, rng=None):
    """time_stages on a new function of the grader's jit and a steady_runs chosen now: every part measured during
    the call, each of trace, lower and compile covering that stage as the grader held it."""
    from perfaudit.checks.measured import grader_jit

    rng = rng or np.random.default_rng()
    n, steady_runs = int(rng.integers(8, 48)), int(rng.integers(5, 20))
    jit = grader_jit(rng)
    started = time.perf_counter()
    observed = observe_time_stages(time_stages, n, steady_runs, jit)
    outer_s = min(time.perf_counter() - started, observed["outer_s"] if isinstance(observed["outer_s"], float)
                  else math.inf)
    what = f"time_stages(jitted, x, {steady_runs})"
    stages = check_stages(observed["stages"], steady_runs, what)
    held = {f"{stage}_s": [span for done, span in (jit.functions[0].stages if jit.functions else []) if done == stage]
            for stage in ("trace", "lower", "compile")}
    for part, spans in held.items():
        if not spans:
            _fail(f"{what} never called {STAGE_WORDS[part]} on the function it was given: build the chain from it, "
                  "jitted.trace(x).lower().compile(), and time each step.")
        if stages[part] + CLOCK_SLACK_S < min(spans):
            _fail(f"{what}: {part} is {stages[part] * 1e3:.3f} ms, shorter than {STAGE_WORDS[part]} took during the "
                  "call: time it alone, from just before it until it returns.")
    total = sum(stages[part] for part in STAGE_PARTS) + sum(stages["steady_run_s"])
    if total > outer_s + CLOCK_SLACK_S:
        _fail(f"{what}: the parts add up to {total:.6f} s, more than the {outer_s:.6f} s the whole call "
              "took: they were not all measured during this call. (Milliseconds instead of seconds?)")
