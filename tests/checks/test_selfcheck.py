"""Each notebook's visible self-check (perfaudit/checks/selfcheck.py): right code passes, the central mistake fails."""

import time

import jax
import jax.numpy as jnp
import pytest

from perfaudit.checks import selfcheck
from perfaudit.instructor import answers


def workload(x):
    return jnp.tanh(x @ x)


def _counter(count_calls):
    """(audited, traces) as notebook 2 leaves them: counting traces, or, wrongly, calls."""
    count = [0]

    def counted(x):
        count[0] += 0 if count_calls else 1
        return workload(x)
    jitted = jax.jit(counted)

    def audited(x):
        count[0] += 1 if count_calls else 0
        return jitted(x)
    for n in (16, 32):  # the shapes notebook 2 has traced before its self-check
        audited(jnp.eye(n))
    return audited, lambda: count[0]


def test_a_counter_of_traces_passes_and_a_counter_of_calls_is_told_what_it_counts():
    selfcheck.check_counts_traces_not_calls(*_counter(count_calls=False))
    with pytest.raises(AssertionError, match="your counter counts calls, not traces"):
        selfcheck.check_counts_traces_not_calls(*_counter(count_calls=True))
    with pytest.raises(AssertionError, match="traces\\(\\) should return an int; found float 0.0"):
        selfcheck.check_counts_traces_not_calls(_counter(False)[0], lambda: 0.0)


def _gather_evidence(warm=False, use_jit=True):
    def gather(steady_calls, jit):
        audited = (jit if use_jit else jax.jit)(workload)
        x = jnp.eye(16)
        if warm:
            audited(x).block_until_ready()
        start = time.perf_counter()
        audited(x).block_until_ready()
        return {"first_call_s": time.perf_counter() - start, "shape": [16, 16]}
    return gather


def test_a_first_call_timed_cold_passes_and_a_warm_one_is_told_so():
    selfcheck.check_first_call_is_cold(_gather_evidence())
    with pytest.raises(AssertionError, match="the call you timed as the first was a warm one"):
        selfcheck.check_first_call_is_cold(_gather_evidence(warm=True))
    with pytest.raises(AssertionError, match="never called a function made by the jit it was given"):
        selfcheck.check_first_call_is_cold(_gather_evidence(use_jit=False))
    with pytest.raises(AssertionError, match="should return a dict; found list"):
        selfcheck.check_first_call_is_cold(lambda steady_calls, jit: [])


def test_stages_timed_each_on_its_own_pass_and_one_timing_holding_two_is_told_so():
    selfcheck.check_stages_are_their_own(answers.time_stages)

    def compile_inside_lower(jitted, x, steady_runs=20):
        found = answers.time_stages(jitted, x, steady_runs)
        return {**found, "lower_s": found["lower_s"] + found["compile_s"] + found["trace_s"] + 0.05}
    with pytest.raises(AssertionError, match="lower_s is .* it timed another stage too"):
        selfcheck.check_stages_are_their_own(compile_inside_lower)
