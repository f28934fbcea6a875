"""Notebook 4's own stage timing (perfaudit/checks/stages.py).

Relations only: a part must cover that stage as the grader's jit held it, and fit in the call; no time is compared
with a fixed number.
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit import decompose
from perfaudit.autograde.evidence import instruments, measured, products
from perfaudit.checks import stages


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def time_stages(jitted, x, steady_runs=20):
    trace_s_, traced = _timed(lambda: jitted.trace(x))[::-1]
    lower_s_, lowered = _timed(traced.lower)[::-1]
    compile_s_, compiled = _timed(lowered.compile)[::-1]
    runs = [_timed(lambda: compiled(x).block_until_ready())[1] for _ in range(steady_runs + 1)]
    return {"trace_s": trace_s_, "lower_s": lower_s_, "compile_s": compile_s_, "first_run_s": runs[0],
            "steady_run_s": runs[1:]}


def as_arrays(jitted, x, steady_runs=20):
    """The same, written another way: a NumPy array of runs, np.float64 parts, a warm-up compile first."""
    jax.jit(lambda v: v + 1).trace(np.float32(1)).lower().compile()
    found = time_stages(jitted, x, steady_runs)
    return {**{k: np.float64(v) for k, v in found.items() if k != "steady_run_s"},
            "steady_run_s": np.asarray(found["steady_run_s"])}


def in_milliseconds(jitted, x, steady_runs=20):
    found = time_stages(jitted, x, steady_runs)
    return {k: [s * 1e3 for s in v] if k == "steady_run_s" else v * 1e3 for k, v in found.items()}


def lower_and_compile_swapped(jitted, x, steady_runs=20):
    """Every stage measured, then lower_s and compile_s reported each in the other's place."""
    found = time_stages(jitted, x, steady_runs)
    return {**found, "lower_s": found["compile_s"], "compile_s": found["lower_s"]}


def trace_and_lower_swapped(jitted, x, steady_runs=20):
    found = time_stages(jitted, x, steady_runs)
    return {**found, "trace_s": found["lower_s"], "lower_s": found["trace_s"]}


def compile_left_out(jitted, x, steady_runs=20):
    """Times the trace and lowering, then compiles off the clock and reports a made-up compile time."""
    found = time_stages(jitted, x, steady_runs)
    return {**found, "compile_s": 1e-6}


def lowered_in_one_call(jitted, x, steady_runs=20):
    """Honest too: the trace timed alone, then jitted.lower(x) (which traces again, from the cache) timed as lower,
    its compile and the runs of what that compiled: one chain."""
    trace_s = _timed(lambda: jitted.trace(x))[1]
    lowered, lower_s = _timed(lambda: jitted.lower(x))
    compiled, compile_s = _timed(lowered.compile)
    runs = [_timed(lambda: compiled(x).block_until_ready())[1] for _ in range(steady_runs + 1)]
    return {"trace_s": trace_s, "lower_s": lower_s, "compile_s": compile_s, "first_run_s": runs[0],
            "steady_run_s": runs[1:]}


def second_chain_timed(jitted, x, steady_runs=20):
    """The chain run once off the clock, then a second chain timed: its stages come from JAX's caches."""
    time_stages(jitted, x, steady_runs)
    return time_stages(jitted, x, steady_runs)


def first_run_warmed_by_a_call(jitted, x, steady_runs=20):
    """The chain timed, but jitted(x) called before the compiled program's first run, off the clock."""
    traced, trace_s = _timed(lambda: jitted.trace(x))
    lowered, lower_s = _timed(traced.lower)
    compiled, compile_s = _timed(lowered.compile)
    jitted(x).block_until_ready()
    runs = [_timed(lambda: compiled(x).block_until_ready())[1] for _ in range(steady_runs + 1)]
    return {"trace_s": trace_s, "lower_s": lower_s, "compile_s": compile_s, "first_run_s": runs[0],
            "steady_run_s": runs[1:]}


def stages_after_a_call(jitted, x, steady_runs=20):
    """jitted(x) called before the stages, off the clock: trace, lower and compile then come from JAX's caches."""
    jitted(x).block_until_ready()
    return time_stages(jitted, x, steady_runs)


def even_split(jitted, x, steady_runs=20):
    """Times the whole chain and reports a third of it for each stage."""
    traced, trace_s = _timed(lambda: jitted.trace(x))
    lowered, lower_s = _timed(traced.lower)
    compiled, compile_s = _timed(lowered.compile)
    found = time_stages(jitted, x, steady_runs)
    third = (trace_s + lower_s + compile_s) / 3
    return {**found, "trace_s": third, "lower_s": third, "compile_s": third}


def invented_plausibly(jitted, x, steady_runs=20):
    """Runs the chain, and reports 15 ms for each stage, a figure that looks like one."""
    found = time_stages(jitted, x, steady_runs)
    return {**found, "trace_s": 0.015, "lower_s": 0.015, "compile_s": 0.015}


def feeds_the_listener(jitted, x, steady_runs=20):
    """Runs no stage: tells jax.monitoring's listeners each took a microsecond, and reports two."""
    for event in ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration"):
        jax.monitoring.record_event_duration_secs(event, 1e-6, fun_name=jitted.__name__)
    return {"trace_s": 2e-6, "lower_s": 2e-6, "compile_s": 2e-6, "first_run_s": 2e-6,
            "steady_run_s": [2e-6] * steady_runs}


def warm_first_run(jitted, x, steady_runs=20):
    """Runs the compiled program once off the clock, then times the next run as the first."""
    traced, trace_s = _timed(lambda: jitted.trace(x))
    lowered, lower_s = _timed(traced.lower)
    compiled, compile_s = _timed(lowered.compile)
    compiled(x).block_until_ready()
    runs = [_timed(lambda: compiled(x).block_until_ready())[1] for _ in range(steady_runs + 1)]
    return {"trace_s": trace_s, "lower_s": lower_s, "compile_s": compile_s, "first_run_s": runs[0],
            "steady_run_s": runs[1:]}


def runs_not_waited_for(jitted, x, steady_runs=20):
    """Times each run until compiled(x) returns, without waiting for the result."""
    traced, trace_s = _timed(lambda: jitted.trace(x))
    lowered, lower_s = _timed(traced.lower)
    compiled, compile_s = _timed(lowered.compile)
    runs = [_timed(lambda: compiled(x))[1] for _ in range(steady_runs + 1)]
    return {"trace_s": trace_s, "lower_s": lower_s, "compile_s": compile_s, "first_run_s": runs[0],
            "steady_run_s": runs[1:]}


def one_timing_for_two_stages(jitted, x, steady_runs=20):
    """Times trace and lower together and reports that one timing for both stages."""
    found = time_stages(jitted, x, steady_runs)
    return {**found, "trace_s": found["trace_s"] + found["lower_s"], "lower_s": found["trace_s"] + found["lower_s"]}


def one_chain_timing_padded(jitted, x, steady_runs=20):
    """Times the whole chain once, reports it for each stage, and sleeps off the clock so the parts fit the call."""
    start = time.perf_counter()
    compiled = jitted.trace(x).lower().compile()
    chain_s = time.perf_counter() - start
    runs = [_timed(lambda: compiled(x).block_until_ready())[1] for _ in range(steady_runs + 1)]
    time.sleep(2 * chain_s + 0.01)
    return {"trace_s": chain_s, "lower_s": chain_s, "compile_s": chain_s, "first_run_s": runs[0],
            "steady_run_s": runs[1:]}


def one_clock_for_everything_padded(jitted, x, steady_runs=20):
    """One clock around the chain and every run, reported for each part, padded off the clock."""
    start = time.perf_counter()
    compiled = jitted.trace(x).lower().compile()
    for _ in range(steady_runs + 1):
        compiled(x).block_until_ready()
    whole_s = time.perf_counter() - start
    time.sleep(whole_s * (steady_runs + 4) + 0.01)
    return {"trace_s": whole_s, "lower_s": whole_s, "compile_s": whole_s, "first_run_s": whole_s,
            "steady_run_s": [whole_s] * steady_runs}


def never_compiles(jitted, x, steady_runs=20):
    return {"trace_s": 1e-4, "lower_s": 1e-4, "compile_s": 1e-4, "first_run_s": 1e-4,
            "steady_run_s": [1e-5] * steady_runs}


@pytest.mark.parametrize("honest", [time_stages, as_arrays, lowered_in_one_call])
def test_time_stages_written_honestly_passes(honest):
    measured.check_time_stages(honest)


@pytest.mark.parametrize("wrong, message", [
    (in_milliseconds, "Milliseconds instead of seconds"),
    (compile_left_out, "compile_s is"),
    (lower_and_compile_swapped, "shorter than"),
    (trace_and_lower_swapped, "shorter than"),
    (never_compiles, r"never called jitted.trace\(x\)"),
    (invented_plausibly, "shorter than"),
    (feeds_the_listener, r"never called jitted.trace\(x\)"),
    (warm_first_run, "a warm first run\\? Was it run before the run you timed"),
    (runs_not_waited_for, "first run was never waited for"),
    (one_timing_for_two_stages, "add up to"),
    (one_chain_timing_padded, "could have taken on a clock around it alone"),
    (one_clock_for_everything_padded, "could have taken on a clock around it alone"),
    (second_chain_timed, "shorter than|could have taken on a clock around it alone"),
    (first_run_warmed_by_a_call, "called the jitted function itself before the compiled program's first run"),
    (stages_after_a_call, r"called jitted\(x\) before jitted.trace\(x\): that call traced and compiled"),
])
def test_time_stages_not_measured_fails_with_what_was_found(wrong, message):
    with pytest.raises(AssertionError, match=message):
        measured.check_time_stages(wrong)


def _prompts_of(jitted):
    """The grader's jit's prompt function, read out of jitted.trace's closure, as a student's code can."""
    trace = jitted.trace
    return dict(zip(trace.__code__.co_freevars, (cell.cell_contents for cell in trace.__closure__)))["ask_about"]


def _speaks_the_protocol(jitted, x, steady_runs, product=lambda stage: None, entries=lambda answer: ()):
    """Runs no stage and no program: asks the grader's jit for each stage's hold and each run itself, with the
    product and entries given, and times the answers."""
    ask = _prompts_of(jitted)

    def stage_s(stage):
        return _timed(lambda: ask("perfaudit-stage", stage, *filter(None, [product(stage)])))[1]

    def run_s():
        start = time.perf_counter()
        answer = ask("perfaudit-run")
        ask("perfaudit-run-ready", answer.split(" ")[0], *entries(answer))
        return time.perf_counter() - start

    trace_s, lower_s, compile_s = (stage_s(stage) for stage in ("trace", "lower", "compile"))
    return {"trace_s": trace_s, "lower_s": lower_s, "compile_s": compile_s, "first_run_s": run_s(),
            "steady_run_s": [run_s() for _ in range(steady_runs)]}


def speaks_the_protocol(jitted, x, steady_runs=20):
    return _speaks_the_protocol(jitted, x, steady_runs)


def speaks_it_with_another_chains_products(jitted, x, steady_runs=20):
    """The products of JAX's own chain of tanh(x @ x.T) at x, and each run's entries computed in NumPy."""
    traced = jax.jit(lambda v: jnp.tanh(v @ v.T)).trace(x)
    made = {"trace": traced, "lower": traced.lower()}
    made["compile"] = made["lower"].compile()
    fingerprints = {stage: products.fingerprint(stage, made[stage], made["lower"]) for stage in made}
    a = np.asarray(x, dtype=np.float64)

    def entries(answer):
        seed = int(answer.split(" ")[1])
        return [f"{np.tanh(a[i] @ a[:, j]):.6g}" for i, j in instruments.probed_at(seed, len(a))]

    return _speaks_the_protocol(jitted, x, steady_runs, fingerprints.get, entries)


def runs_spoken_for(jitted, x, steady_runs=20):
    """Every stage run and timed, then each run asked for and waited on through the prompts, with no program run."""
    traced, trace_s = _timed(lambda: jitted.trace(x))
    lowered, lower_s = _timed(traced.lower)
    compile_s = _timed(lowered.compile)[1]
    found = _speaks_the_protocol(jitted, x, steady_runs)
    return {**found, "trace_s": trace_s, "lower_s": lower_s, "compile_s": compile_s}


@pytest.mark.parametrize("wrong, message", [
    (speaks_the_protocol, r"never called jitted.trace\(x\) .*\(3 stage\(s\) were asked for with no product"),
    (speaks_it_with_another_chains_products, r"never called jitted.trace\(x\)"),
    (runs_spoken_for, r"a run of the compiled program did not give tanh\(x @ x\)"),
])
def test_a_stage_or_run_asked_for_without_jax_s_product_is_none(wrong, message):
    """Each stage's prompt must carry the fingerprint of what JAX's stage made, as the grader's own chain of the
    computation makes it, and each run the entries of its output for the grader's x: a time_stages that asks the
    grader's jit for its holds itself, with nothing or with another computation's products, times no stage."""
    with pytest.raises(AssertionError, match=message):
        measured.check_time_stages(wrong)


@pytest.mark.parametrize("found, message", [
    ([], "should return a dict"),
    ({"trace_s": 1.0}, "lower_s, compile_s, first_run_s, steady_run_s are missing"),
    ({"trace_s": 1, "lower_s": 1.0, "compile_s": 1.0, "first_run_s": 1.0, "steady_run_s": [1.0]}, "found int 1"),
    ({"trace_s": 1.0, "lower_s": 1.0, "compile_s": 1.0, "first_run_s": 1.0, "steady_run_s": [1.0] * 3},
     "sequence of 5 timings in seconds, one per steady run of the compiled program; it holds 3"),
])
def test_stage_self_check_names_what_it_found(found, message):
    with pytest.raises(AssertionError, match=message):
        stages.check_stages(found, 5)


def test_the_decomposition_takes_its_aot_column_from_the_students_function():
    calls = []

    def recording(jitted, x, steady_runs):
        calls.append(steady_runs)
        return time_stages(jitted, x, steady_runs)

    first = decompose.first_call(lambda x: jnp.tanh(x @ x), jax.device_put(np.eye(16, dtype=np.float32)), recording,
                                 rounds=1, one_time_lowering=False)
    assert calls == [decompose.STEADY_RUNS]
    aot = first["decomposition"]["aot"]
    assert aot["steady_run_median_s"] > 0 and aot["sum_s"] == pytest.approx(
        sum(aot[k] for k in ("trace_s", "lower_s", "compile_s", "first_run_s")))
    assert "stablehlo.dot_general" in first["stablehlo_text"]
