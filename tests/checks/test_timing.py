"""The timing checks (perfaudit/checks/timing.py): synchronized time_call, seconds within the caller's clock, the
first call, summarize.

Each check passes on right answers and fails, with a useful message, on wrong ones."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit import checks
from perfaudit.autograde import hidden


def workload(x):
    return jnp.tanh(x @ x)


def test_time_call_probe_tells_synchronized_from_unsynchronized():
    def synchronized(fn, x):
        start = time.perf_counter()
        fn(x).block_until_ready()
        return time.perf_counter() - start

    def via_jax(fn, x):
        start = time.perf_counter()
        jax.block_until_ready(fn(x))
        return time.perf_counter() - start

    def unsynchronized(fn, x):
        start = time.perf_counter()
        fn(x)
        return time.perf_counter() - start

    def converts_its_input(fn, x):
        x = jnp.asarray(x)  # the check hands in a real input, as the notebook's calls do
        start = time.perf_counter()
        fn(x).block_until_ready()
        return time.perf_counter() - start

    checks.check_time_call(synchronized)
    checks.check_time_call(via_jax)
    checks.check_time_call(converts_its_input)
    with pytest.raises(AssertionError, match="block_until_ready"):
        checks.check_time_call(unsynchronized)


def test_time_call_that_polls_is_ready_or_copies_to_the_host_first_is_synchronized():
    """jax.Array's own ways of waiting: polling is_ready() until it is True, or copy_to_host_async() then reading."""
    def polls(fn, x):
        start = time.perf_counter()
        out = fn(x)
        while not out.is_ready():
            pass
        return time.perf_counter() - start

    def copies(fn, x):
        start = time.perf_counter()
        out = fn(x)
        out.copy_to_host_async()
        np.asarray(out)
        return time.perf_counter() - start

    checks.check_time_call(polls)
    checks.check_time_call(copies)
    checks.check_first_call_measured(polls, workload)


def test_timings_relation():
    checks.check_timings(0.05, [1e-5] * 10)
    with pytest.raises(AssertionError, match="slower than the steady median"):
        checks.check_timings(1e-5, [2e-5] * 10)
    with pytest.raises(AssertionError, match="at least 5"):
        checks.check_timings(0.05, [1e-5] * 2)


def test_summarize_check():
    def summarize(samples):
        q1, q3 = np.percentile(samples, [25, 75])
        return {"median_s": np.median(samples), "min_s": min(samples), "max_s": max(samples), "iqr_s": q3 - q1}

    checks.check_summarize(summarize)
    hidden.check_summarize(summarize, np.random.default_rng(1).exponential(1e-4, size=37))
    with pytest.raises(AssertionError, match="iqr_s"):
        checks.check_summarize(lambda s: {**summarize(s), "iqr_s": max(s) - min(s)})


def test_a_summary_in_float32_passes_and_another_statistic_still_fails():
    """float32 statistics round 0.003 to 0.003000000026: within the tolerance; a percentile by another method is not."""
    def in_float32(samples):
        samples = jnp.asarray(samples, dtype=jnp.float32)
        q1, q3 = jnp.percentile(samples, jnp.array([25.0, 75.0]))
        return {"median_s": jnp.median(samples), "min_s": samples.min(), "max_s": samples.max(), "iqr_s": q3 - q1}

    def nearest(samples):
        q1, q3 = np.percentile(samples, [25, 75], method="nearest")
        return {**in_float32(samples), "iqr_s": q3 - q1}

    samples = np.random.default_rng(1).exponential(1e-4, size=38)  # quartiles between samples: methods differ
    checks.check_summarize(in_float32)
    hidden.check_summarize(in_float32, samples)
    with pytest.raises(AssertionError, match="iqr_s"):
        hidden.check_summarize(nearest, samples)


@pytest.mark.parametrize("seconds, message", [
    (float("nan"), "positive, finite"), (float("inf"), "positive, finite"), (-0.01, "positive, finite"),
    (50, "float number of seconds"), (50_000_000, "float number of seconds"), (80.0, "longer than"),
])
def test_seconds_must_be_finite_floats_within_the_callers_clock(seconds, message):
    checks.check_seconds(0.05, "t", outer_s=0.06)
    with pytest.raises(AssertionError, match=message):
        checks.check_seconds(seconds, "t", outer_s=0.06)


def test_time_call_in_milliseconds_or_a_constant_fails():
    def milliseconds(fn, x):
        start = time.perf_counter()
        fn(x).block_until_ready()
        return (time.perf_counter() - start) * 1e3

    with pytest.raises(AssertionError, match="longer than"):
        checks.check_time_call(milliseconds)
    with pytest.raises(AssertionError):
        checks.check_time_call(lambda fn, x: 0.06)


def test_first_call_is_measured_on_a_fresh_jit_under_the_callers_clock():
    def synchronized(fn, x):
        start = time.perf_counter()
        fn(x).block_until_ready()
        return time.perf_counter() - start

    checks.check_first_call_measured(synchronized, workload)
    rng = np.random.default_rng(0)
    with pytest.raises(AssertionError):  # numbers within plausible bounds, but not measured
        checks.check_first_call_measured(lambda fn, x: float(rng.uniform(1e-6, 1e-4)), workload)


def test_a_clock_started_after_the_call_is_caught():
    def after_the_call(fn, x):
        out = fn(x)
        start = time.perf_counter()
        out.block_until_ready()
        return time.perf_counter() - start

    with pytest.raises(AssertionError, match="start the clock before the call"):
        checks.check_time_call(after_the_call)


def test_a_clock_started_after_the_call_and_padded_by_the_hold_is_caught():
    def padded_by(pad_s):
        def time_call(fn, x):
            out = fn(x)
            start = time.perf_counter()
            out.block_until_ready()
            return time.perf_counter() - start + pad_s

        return time_call

    # The hold timing.py gives each call of the first-call check: the first call's tracing and compiling are missed.
    with pytest.raises(AssertionError, match="time_call's first call reported .* start the clock before the call"):
        checks.check_first_call_measured(padded_by(0.0105), workload)
    # The middle of a time_call probe's holds: right for three holds drawn at random only by luck.
    with pytest.raises(AssertionError):
        checks.check_time_call(padded_by(0.105))


def _warms_up_first(fn, x):
    """A warm-up call inside time_call, then the call it times: the first call it reports is a warm one."""
    fn(x).block_until_ready()
    start = time.perf_counter()
    fn(x).block_until_ready()
    return time.perf_counter() - start


def test_a_warm_up_call_inside_time_call_is_named_every_time():
    """Counted, not timed: the holder sees two calls arrive for one time_call, whatever the machine's load."""
    for _ in range(3):
        with pytest.raises(AssertionError, match="called fn 2 times to time one call: a warm-up call inside time_call"):
            checks.check_time_call(_warms_up_first)
    with pytest.raises(AssertionError, match="first call called fn 2 times .* a warm-up call inside time_call"):
        checks.check_first_call_measured(_warms_up_first, workload)
