"""Benchmark, not a test: the first call of tanh(x @ x) decomposed in K fresh processes, and the timing loop's cost.

    python benchmarks/first_call_decomposition.py --processes 10

Each process is new, so its caches are cold and its first lowering is its first (perfaudit.decompose's warm-up
then measures the one-time lowering cost in the process itself). In each one:
1. perfaudit.decompose.first_call at 16x16 float32, as the notebook does: the ordinary first call observed
   through jax.monitoring and the ahead-of-time stages on another fresh function, three rounds of each, the
   median round reported;
2. the steady call timed two ways, side by side in alternating rounds: the notebooks' loop (a perf_counter
   pair around each synchronized call, collected in a list) and a bare timeit loop of the same synchronized call.
The parent prints each figure's median and range (min .. max) across the processes. Ratios only: they were
measured side by side in one process; the microseconds themselves belong to this machine.
"""

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import timeit

STEADY_CALLS = 50
ROUNDS = 5


def workload(x):
    import jax.numpy as jnp

    return jnp.tanh(x @ x)


def one_process():
    """Everything measured in this (fresh) process, as a dict."""
    import jax
    import numpy as np

    from perfaudit import decompose
    from perfaudit.answer_key import answers

    jax.config.update("jax_enable_compilation_cache", False)
    x = jax.device_put(np.eye(16, dtype=np.float32))
    with contextlib.redirect_stdout(sys.stderr):  # decompose's progress lines; stdout carries the JSON
        decomposition = decompose.first_call(workload, x, answers.time_stages, one_time_lowering=False)["decomposition"]

    jitted = jax.jit(workload)
    jitted(x).block_until_ready()

    def time_call(fn, x):  # the notebooks' synchronized clock
        start = time.perf_counter()
        fn(x).block_until_ready()
        return time.perf_counter() - start

    def bare_call():
        jitted(x).block_until_ready()

    loop_per_call, loop_median, bare_per_call = [], [], []
    for _ in range(ROUNDS):  # alternate the two loops so drift affects both alike
        start = time.perf_counter()
        steady_s = [time_call(jitted, x) for _ in range(STEADY_CALLS)]
        loop_per_call.append((time.perf_counter() - start) / STEADY_CALLS)
        loop_median.append(float(np.median(steady_s)))
        bare_per_call.append(timeit.Timer(bare_call).timeit(number=STEADY_CALLS) / STEADY_CALLS)
    return {
        "decomposition": decomposition,
        "loop_per_call_s": float(np.median(loop_per_call)),
        "loop_median_s": float(np.median(loop_median)),
        "bare_per_call_s": float(np.median(bare_per_call)),
    }


def figures(run):
    """The figures this benchmark reports, from one process's measurements."""
    d = run["decomposition"]
    first, observed, aot, warm_up = d["first_call_s"], d["observed"], d["aot"], d["warm_up"]
    return {
        "first call (ms)": first * 1e3,
        "observed parts / first call": observed["sum_s"] / first,
        "  observed trace / first call": observed["trace_s"] / first,
        "  observed lower / first call": observed["lower_s"] / first,
        "  observed compile / first call": observed["compile_s"] / first,
        "  remainder (dispatch + execution) / first call": observed["remainder_s"] / first,
        "AOT parts / first call": aot["sum_s"] / first,
        "  AOT trace / observed trace": aot["trace_s"] / observed["trace_s"],
        "  AOT lower / observed lower": aot["lower_s"] / observed["lower_s"],
        "  AOT compile / observed compile": aot["compile_s"] / observed["compile_s"],
        "one-time lowering: first - second lowering (ms)": (warm_up["first_lower_s"] - warm_up["second_lower_s"]) * 1e3,
        "steady loop per call / bare timeit per call": run["loop_per_call_s"] / run["bare_per_call_s"],
        "steady median (notebook) / bare timeit per call": run["loop_median_s"] / run["bare_per_call_s"],
        "bare timeit per call (us)": run["bare_per_call_s"] * 1e6,
    }


def machine():
    model = platform.processor() or platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), model)
    import jax

    return (f"{model}, {os.cpu_count()} CPUs; Python {platform.python_version()}, jax {jax.__version__}, "
            f"backend {jax.default_backend()}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=10, help="fresh processes to run (default 10)")
    parser.add_argument("--one-process", action="store_true", help=argparse.SUPPRESS)  # what each child runs
    args = parser.parse_args(argv)
    if args.one_process:
        print(json.dumps(one_process()))
        return 0

    env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"}
    rows = []
    for k in range(1, args.processes + 1):
        print(f"process {k}/{args.processes} ...", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, __file__, "--one-process"], capture_output=True, text=True,
                              env=env, check=True)
        rows.append(figures(json.loads(done.stdout.splitlines()[-1])))

    print(f"first call of tanh(x @ x), 16x16 float32, in {args.processes} fresh processes; "
          f"steady loops: {ROUNDS} alternating rounds of {STEADY_CALLS} calls")
    print(f"machine: {machine()}")
    print(f"{'figure':<50}{'median':>10}   range")
    for name in rows[0]:
        values = [row[name] for row in rows]
        print(f"{name:<50}{statistics.median(values):>10.3f}   {min(values):.3f} .. {max(values):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
