"""Reference answers and made-up evidence the hidden tests hand a student's functions, chosen at grading time.

Instructor-only: these lines are the solutions (a summary as NumPy computes it, the closed-form cost, the report
run_audit writes), so `make student-copy` leaves this module out. perfaudit.checks imports it only where a hidden
test calls a check with inputs of its own; the visible self-checks compare with values written out in checks.py.
"""

import time

import numpy as np

from perfaudit.answer_key.reference import reference_jaxpr
from perfaudit.handout import learning_rate


def summary_of(samples):
    """Median, fastest, slowest and interquartile range of timings, as NumPy computes them."""
    q1, q3 = np.percentile(samples, [25, 75])
    return {"median_s": np.median(samples), "min_s": min(samples), "max_s": max(samples), "iqr_s": q3 - q1}


def cost_of(n):
    """tanh(x @ x) for an n x n input, counted as XLA's cost model counts it: a multiply-add is 2 flops (2n^3, the
    exact arithmetic count 2n^3 - n^2 rounded up as XLA does), and each of the n^2 tanh is one transcendental."""
    return {"flops": 2 * n**3, "transcendentals": n**2}


def evidence_of(rng=None, steady_calls=None):
    """An evidence dict as gather_evidence returns it, with timings and a JAXPR token that exist only here."""
    rng = rng or np.random.default_rng()
    steady_calls = steady_calls or int(rng.integers(5, 20))
    return {
        "first_call_s": float(rng.uniform(0.05, 0.5)),
        "steady_s": [float(s) for s in rng.uniform(1e-5, 1e-3, size=steady_calls)],
        "shape": [16, 16],
        "dtype": "float32",
        "trace_count": 2,
        "shapes": [[16, 16], [32, 32]],
        "jaxpr_text": reference_jaxpr() + f"\n# evidence {rng.integers(1 << 62):x}\n",
    }


def report_of(evidence, rng=None):
    """A stage 3 report of this evidence, as run_audit would return it."""
    rng = rng or np.random.default_rng()
    steady = np.asarray(evidence["steady_s"])
    q1, q3 = np.percentile(steady, [25, 75])
    return {
        "audit": "performance-audit", "workload": "tanh(x @ x)", "memory_measured": False, "profiler_trace": False,
        "timings": {"shape": evidence["shape"], "dtype": evidence["dtype"], "synchronized": True,
                    "first_call_s": evidence["first_call_s"], "steady_s": evidence["steady_s"],
                    "steady_summary": {"median_s": float(np.median(steady)), "min_s": float(steady.min()),
                                       "max_s": float(steady.max()), "iqr_s": float(q3 - q1)}},
        "tracing": {"shapes": evidence["shapes"], "trace_count": 2, "read_before_make_jaxpr": True},
        "artifacts": {"jaxpr": "workload.jaxpr.txt"},
        "environment": {"python": "3.11", "jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu",
                        "device_kind": f"cpu-{rng.integers(1000)}"},
    }


def first_call_of(rng=None):
    """What perfaudit.decompose.first_call returns, with consistent numbers that exist only here."""
    rng = rng or np.random.default_rng()
    first = float(rng.uniform(0.05, 0.3))
    observed = {name: first * float(share)
                for name, share in zip(("trace_s", "lower_s", "compile_s"), rng.uniform(0.05, 0.3, size=3))}
    observed["sum_s"] = sum(observed.values())
    observed["remainder_s"] = first - observed["sum_s"]
    aot = {name: first * float(share)
           for name, share in zip(("trace_s", "lower_s", "compile_s", "first_run_s"), rng.uniform(0.05, 0.3, size=4))}
    aot["sum_s"] = sum(aot.values())
    return {
        "decomposition": {
            "shape": [16, 16], "dtype": "float32", "rounds": 3,
            "first_call_rounds_s": [first * 0.9, first, first * 1.2],
            "aot_sum_rounds_s": [aot["sum_s"] * 1.1, aot["sum_s"], aot["sum_s"] * 0.95], "first_call_s": first,
            "observed": observed, "aot": aot,
            "warm_up": {"first_lower_s": float(rng.uniform(0.01, 0.1)),
                        "second_lower_s": float(rng.uniform(1e-3, 1e-2))},
            "one_time_lowering": {"measured_in": "a fresh Python process", "first_lower_s": 0.05,
                                  "second_lower_s": 0.005, "one_time_s": 0.045},
        },
        "cost_analysis": {"flops": 8192.0, "transcendentals": 256.0, "bytes_accessed": float(rng.integers(2048, 4096))},
        "memory_estimate": {"is_estimate": True, "source": "compiled.memory_analysis()", "argument_size_in_bytes": 1024,
                            "output_size_in_bytes": 1024, "temp_size_in_bytes": int(rng.integers(0, 4096))},
        "stablehlo_text": ("module @jit_workload {\n"
                           "  func.func public @main(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {\n"
                           "    %0 = stablehlo.dot_general %arg0, %arg0 : tensor<16x16xf32>\n"
                           "    %1 = stablehlo.tanh %0 : tensor<16x16xf32>\n    return %1\n  }\n}\n"
                           f"// {rng.integers(1 << 62):x}\n"),
    }


def time_stages(jitted, x, steady_runs=20):
    """Notebook 4's time_stages as the instructor writes it: trace, lower, compile, the first and the steady runs of
    the compiled program, each timed on its own, synchronized (perfaudit.decompose uses it without a student's)."""
    start = time.perf_counter()
    traced = jitted.trace(x)
    trace_s = time.perf_counter() - start
    start = time.perf_counter()
    lowered = traced.lower()
    lower_s = time.perf_counter() - start
    start = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - start
    runs = []
    for _ in range(steady_runs + 1):
        start = time.perf_counter()
        compiled(x).block_until_ready()
        runs.append(time.perf_counter() - start)
    return {"trace_s": trace_s, "lower_s": lower_s, "compile_s": compile_s, "first_run_s": runs[0],
            "steady_run_s": runs[1:]}


# --- notebook 5: the problems planted in each variant of the handed-out loop (perfaudit/handout.py) -------------

# Each is what the notebook's measurements back for that variant (checks.audit.backed_by): A's trace count rises
# with the batch sizes, B's and C's step traces at every step on batches of one size, A's and B's loops compile
# jax.numpy functions outside the step, and A's and C's benchmarks stop the clock before the pending work is done.
PLANTED = {
    "A": frozenset({"retrace-new-shape", "jnp-outside-jit", "timed-before-ready"}),
    "B": frozenset({"retrace-static-argument", "jnp-outside-jit"}),
    "C": frozenset({"retrace-static-argument", "timed-before-ready"}),
}


def original_traces(variant, batches, lr0):
    """How many times the handed-out loop of `variant` traces its step over `batches`: once per cache key, and
    every call of the loop makes its step anew (perfaudit/handout.py)."""
    sizes = [len(y) for _, y in batches]
    if variant == "A":  # a new batch size is a new shape
        return len(set(sizes))
    if variant == "B":  # the learning rate is static: each new value is a new key
        return len({(size, learning_rate(lr0, i)) for i, size in enumerate(sizes)})
    return len(set(enumerate(sizes)))  # C: the step number is static
