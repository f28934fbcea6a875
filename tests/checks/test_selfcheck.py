"""Each notebook's visible self-check (perfaudit/checks/selfcheck.py): right code passes, the central mistake fails."""

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit.answer_key import answers
from perfaudit.autograde.evidence import measured
from perfaudit.checks import selfcheck


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


def _timed(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _gather_evidence(warm=False, use_jit=True, first_waited=True, steady_waited=True, wait_after_clock=False):
    """gather_evidence as a student writes it, right or with one of notebook 3's misconceptions."""
    def gather(steady_calls, jit):
        audited = (jit if use_jit else jax.jit)(workload)
        x = jax.device_put(np.eye(16, dtype=np.float32))
        if warm:
            audited(x).block_until_ready()

        def one_call(waited):
            start = time.perf_counter()
            out = audited(x)
            if waited and not wait_after_clock:
                out.block_until_ready()
            seconds = time.perf_counter() - start
            if wait_after_clock:
                out.block_until_ready()
            return seconds
        first = one_call(first_waited)
        steady = [one_call(steady_waited) for _ in range(steady_calls)]
        audited(jax.device_put(np.eye(32, dtype=np.float32))).block_until_ready()
        return {"first_call_s": first, "steady_s": steady, "shape": list(x.shape), "dtype": str(x.dtype),
                "shapes": [[16, 16], [32, 32]], "trace_count": 2, "jaxpr_text": str(jax.make_jaxpr(audited)(x))}
    return gather


def test_a_first_call_timed_cold_passes_and_a_warm_one_is_told_so():
    selfcheck.check_first_call_is_cold(_gather_evidence())
    with pytest.raises(AssertionError, match="the call you timed as the first was a warm one"):
        selfcheck.check_first_call_is_cold(_gather_evidence(warm=True))
    with pytest.raises(AssertionError, match="never called a function made by the jit it was given"):
        selfcheck.check_first_call_is_cold(_gather_evidence(use_jit=False))
    with pytest.raises(AssertionError, match="should return a dict; found list"):
        selfcheck.check_first_call_is_cold(lambda steady_calls, jit: [])


@pytest.mark.parametrize("mistake, message", [
    ({"steady_waited": False}, "of the 6 calls at \\[16, 16\\] after the first, 0 had their result waited for, and "
                               "steady_s holds 6 timings: steady calls not waited for"),
    ({"first_waited": False}, "the first call's result was never waited for"),
    ({"wait_after_clock": True}, "first_call_s .* is shorter than the first call took from the call until its result "
                                 "was ready"),
])
def test_calls_not_waited_for_are_named_whatever_the_clock_reads(mistake, message):
    """Each result is held before it is let be ready: a call never waited for has no release, and a clock stopped
    before the wait misses the whole hold, on any machine."""
    with pytest.raises(AssertionError, match=message):
        selfcheck.check_first_call_is_cold(_gather_evidence(**mistake), steady_calls=6)


def _run_audit(gather, **report):
    """run_audit as notebook 4 asks: gather, then write report.json from the evidence (fields put over it)."""
    def run_audit(folder, steady_calls, jit):
        evidence = gather(steady_calls, jit)
        written = {"timings": {"synchronized": True, **{k: evidence[k] for k in ("first_call_s", "steady_s",
                                                                                    "shape", "dtype")}},
                   "tracing": {"read_before_make_jaxpr": True, "trace_count": evidence["trace_count"],
                               "shapes": evidence["shapes"]}}
        for section, fields in report.items():
            written[section].update(fields)
        (Path(folder) / "report.json").write_text(json.dumps(written))
        return written
    return run_audit


def test_the_reports_claims_are_checked_against_the_calls_it_timed():
    selfcheck.check_audit_is_measured(_run_audit(_gather_evidence()))
    with pytest.raises(AssertionError, match='it says "synchronized": true, but of the 5 calls .* 0 had their result '
                                             'waited for'):
        selfcheck.check_audit_is_measured(_run_audit(_gather_evidence(steady_waited=False)))
    with pytest.raises(AssertionError, match='it says "synchronized": true, but the first call.s result was never'):
        selfcheck.check_audit_is_measured(_run_audit(_gather_evidence(first_waited=False)))
    with pytest.raises(AssertionError, match="tracing.shapes is .* but the function was called at"):
        selfcheck.check_audit_is_measured(_run_audit(_gather_evidence(), tracing={"shapes": [[16, 16], [64, 64]]}))
    with pytest.raises(AssertionError, match="timings.dtype is 'float64', but the calls timed were at float32"):
        selfcheck.check_audit_is_measured(_run_audit(_gather_evidence(), timings={"dtype": "float64"}))


def test_stages_timed_each_on_its_own_pass_and_one_timing_holding_two_is_told_so():
    selfcheck.check_stages_are_their_own(answers.time_stages)

    def compile_inside_lower(jitted, x, steady_runs=20):
        found = answers.time_stages(jitted, x, steady_runs)
        return {**found, "lower_s": found["lower_s"] + found["compile_s"] + found["trace_s"] + 0.05}
    with pytest.raises(AssertionError, match="lower_s is .* it timed another stage too"):
        selfcheck.check_stages_are_their_own(compile_inside_lower)


def _stages(early_call=False, warm_run=False, runs_waited=True, call_before_first_run=False):
    """time_stages as a student writes it, right or with one of notebook 4's misconceptions."""
    def time_stages(jitted, x, steady_runs=20):
        if early_call:
            jitted(x).block_until_ready()
        start = time.perf_counter()
        traced = jitted.trace(x)
        trace_s = time.perf_counter() - start
        start = time.perf_counter()
        lowered = traced.lower()
        lower_s = time.perf_counter() - start
        start = time.perf_counter()
        compiled = lowered.compile()
        compile_s = time.perf_counter() - start
        if warm_run:
            compiled(x).block_until_ready()
        if call_before_first_run:
            jitted(x).block_until_ready()
        runs = [_timed(lambda: compiled(x).block_until_ready() if runs_waited else compiled(x))
                for _ in range(steady_runs + 1)]
        return {"trace_s": trace_s, "lower_s": lower_s, "compile_s": compile_s, "first_run_s": runs[0],
                "steady_run_s": runs[1:]}
    return time_stages


@pytest.mark.parametrize("mistake, message", [
    ({"early_call": True}, "called jitted\\(x\\) before jitted.trace\\(x\\): that call traced and compiled"),
    ({"warm_run": True}, "first_run_s .* is shorter than the compiled program's first run took .* a warm first run"),
    ({"runs_waited": False}, "first run was never waited for"),
    ({"call_before_first_run": True}, "called jitted\\(x\\) before the compiled program's first run"),
])
def test_a_stage_or_first_run_made_warm_or_not_waited_for_is_named(mistake, message):
    """Seen from the order of the calls and from each run's hold, not from how long anything took."""
    selfcheck.check_stages_are_their_own(_stages())
    with pytest.raises(AssertionError, match=message):
        selfcheck.check_stages_are_their_own(_stages(**mistake))


@pytest.mark.parametrize("mistake, message", [
    ({"steady_waited": False}, "Some results were never waited for"),
    ({"first_waited": False}, "the result of the first call was never waited for"),
    ({"warm": True}, "a warm first call"),
])
def test_the_hidden_test_names_the_same_mistakes_of_notebook_3(mistake, message):
    with pytest.raises(AssertionError, match=message):
        measured.check_gather_evidence(_gather_evidence(**mistake))
