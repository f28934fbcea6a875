"""Timings: synchronized seconds, the first call apart from the steady calls, their summary."""

import math
import time

import numpy as np

from perfaudit.checks.failure import fail
from perfaudit.checks.held import FreshJit, SlowFunction
from perfaudit.checks.outputs import device_matrix

SYNC_DELAY_S = 0.05  # how long the probe's result takes to become ready
STEADY_CALLS_MIN = 5


def check_seconds(seconds, what, outer_s=None):
    """A duration as time_call must report it: a finite float of seconds, within the time the call took."""
    if not isinstance(seconds, float):
        fail(f"{what} should be a float number of seconds (time.perf_counter() differences are); found "
              f"{type(seconds).__name__} {seconds!r:.40}. Report seconds, not milliseconds or nanoseconds.")
    if not math.isfinite(seconds) or seconds <= 0:
        fail(f"{what} should be a positive, finite number of seconds; found {seconds!r}.")
    if outer_s is not None and seconds > outer_s:
        fail(f"{what} is {seconds:.6f} s, longer than the {outer_s:.6f} s the whole call took when the grader "
              "timed it from outside: that is not a measurement of this call. (Milliseconds instead of seconds?)")
    return seconds


def _timed(time_call, fn, x):
    """(what time_call reported, seconds the caller saw the whole call take)."""
    started = time.perf_counter()
    seconds = time_call(fn, x)
    return seconds, time.perf_counter() - started


def check_time_call(time_call, rng=None):
    """time_call(fn, x) must start the clock before the call and stop it only once fn's result is ready: checked on
    calls and results that take delays chosen now, and against the caller's own clock."""
    rng = rng or np.random.default_rng()
    # Each call is held 5 to 205 ms, drawn now: a clock started after the call and padded by a guessed hold falls
    # between what the call took and the caller's clock around it only by luck, three times over.
    for low, high in ((0.02, 0.05), (0.08, 0.15), (0.02, 0.15)):
        slow = SlowFunction([float(rng.uniform(low, high))], call_delays_s=[float(rng.uniform(0.005, 0.205))])
        # a real input, as the notebook's calls give: time_call may convert or wait on it (jnp.asarray(x))
        seconds, outer = _timed(time_call, slow, device_matrix(np.eye(16)))
        _check_one_call(slow, 1, "time_call(fn, x)")
        seconds = check_seconds(seconds, "time_call's result", outer)
        waited = slow.waited(0)
        if waited is None:
            fail("time_call never waited for the result of the call it timed: JAX returns before the work is done. "
                  "Stop the clock only after out.block_until_ready().")
        if seconds < waited:
            fail(
                f"time_call measured {seconds * 1e3:.3f} ms for a call that took longer from the call until its "
                "result was ready: start the clock before the call and stop it only after out.block_until_ready()."
            )


def _check_one_call(slow, calls, what):
    """time_call calls fn once: the holder counts each call's arrival (the grader's own count when it grades), so a
    warm-up call inside time_call is seen whatever the clock says."""
    made = len(slow.arrived_at) - (calls - 1)
    if made > 1:
        fail(f"{what} called fn {made} times to time one call: a warm-up call inside time_call. The call it then "
             "times finds fn already compiled, so a first call timed with it is a warm one, not the first. "
             "Call fn(x) exactly once, between starting the clock and block_until_ready(); warm up outside "
             "time_call, where a timing asks for it.")


def check_first_call_measured(time_call, workload, steady_calls=5, rng=None):
    """time_call on a fresh jit of workload: the first call, which traces and compiles, is slower than the median
    of the steady calls, and every timing covers its call from the call's arrival until the result was ready, and
    lies within the caller's clock around it."""
    rng = rng or np.random.default_rng()
    delays = [float(d) for d in rng.uniform(0.001, 0.003, size=steady_calls + 1)]
    # Every call is held 10 to 11 ms: a clock started after the call misses that and, on the first call, the tracing
    # and compiling (slow.waited counts from the call's arrival); a spread of 1 ms leaves compiling the only thing
    # that sets the first call apart from the steady ones.
    call_delays = [float(d) for d in rng.uniform(0.010, 0.011, size=steady_calls + 1)]
    slow = SlowFunction(delays, wrapped=FreshJit(workload), call_delays_s=call_delays)
    x = device_matrix(np.eye(16))
    timings = []
    for call in range(steady_calls + 1):
        seconds, outer = _timed(time_call, slow, x)
        what = "time_call's first call" if call == 0 else "time_call's steady call"
        _check_one_call(slow, call + 1, what)
        seconds = check_seconds(seconds, what, outer)
        waited = slow.waited(call)
        if waited is None:
            fail(f"{what} never waited for the result of the call it timed: stop the clock only after "
                  "block_until_ready().")
        if seconds < waited:
            fail(f"{what} reported {seconds * 1e3:.3f} ms, less than the call and its result took: start the clock "
                  "before the call and stop it after block_until_ready().")
        timings.append(seconds)
    check_timings(timings[0], timings[1:])


def check_timings(first_call_s, steady_s):
    """The first call includes tracing and compilation, so it is slower than the steady median."""
    if not isinstance(steady_s, (list, tuple, np.ndarray)) or len(steady_s) < STEADY_CALLS_MIN:
        fail(f"expected a list of at least {STEADY_CALLS_MIN} steady timings; found {steady_s!r:.60}.")
    first_call_s = check_seconds(as_float(first_call_s), "the first call's timing")
    steady = [check_seconds(as_float(s), "a steady call's timing") for s in steady_s]
    median = float(np.median(steady))
    if not first_call_s > median:
        fail(
            f"the first call ({first_call_s * 1e3:.3f} ms) should be slower than the steady median "
            f"({median * 1e3:.3f} ms) because it includes tracing and compilation. Was the function "
            "already compiled before you timed its first call? jax.clear_caches() makes the next call first again."
        )


def as_float(value):
    """NumPy's float64 is a float; other numbers stay what they are, for check_seconds to judge."""
    return float(value) if isinstance(value, np.floating) else value


SELF_CHECK_SAMPLES = (0.003, 0.001, 0.002, 0.005, 0.004)
# Their summary written out: the self-check shows no way of computing it (perfaudit/answer_key/answers.py: the
# graders' only).
SELF_CHECK_SUMMARY = {"median_s": 0.003, "min_s": 0.001, "max_s": 0.005, "iqr_s": 0.002}
# How far a statistic may be from NumPy's float64 one, relative to the largest sample: float32 rounds each step to
# 6e-8 of it, so a summary computed in float32 stays well under; another statistic (a percentile by another method,
# the range for the IQR) misses by a fraction of the gap between samples, orders of magnitude more.
SUMMARY_TOLERANCE = 1e-6


def check_summarize(summarize, samples=SELF_CHECK_SAMPLES, expected=SELF_CHECK_SUMMARY):
    """summarize(samples) returns median, min, max and interquartile range, as NumPy computes them: `expected`,
    which a hidden test computes with the answer key for samples of its own (perfaudit/autograde/hidden.py), to
    SUMMARY_TOLERANCE of the largest sample, which statistics computed in float32 meet."""
    samples = [float(s) for s in samples]
    found = summarize(list(samples))
    if not isinstance(found, dict):
        fail(f"summarize should return a dict; found {type(found).__name__}.")
    scale = max((abs(s) for s in samples), default=0.0)
    for key, value in expected.items():
        if key not in found:
            fail(f"summarize(samples) should have the key {key!r}; found keys {sorted(found)}.")
        if not math.isclose(float(found[key]), float(value), rel_tol=SUMMARY_TOLERANCE,
                            abs_tol=SUMMARY_TOLERANCE * scale + 1e-15):
            fail(f"summarize({_short(samples)})[{key!r}] should be {value:.6g}; found {found[key]!r}.")


def _short(samples):
    return repr(samples) if len(samples) <= 5 else f"{len(samples)} samples"
