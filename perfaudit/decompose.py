"""Where the first call's time goes, measured two independent ways on fresh caches.

Ahead of time (AOT): `jitted.trace(x)`, `.lower()`, `.compile()` and the first run of the compiled
executable, each timed on its own. As it happens (observed): an ordinary first call, timed as a whole, while a
`jax.monitoring` listener collects the trace, lowering and compile durations JAX reports for that function
only. What the observed parts leave of the first call is the remainder: the first run with its dispatch, and the
jit's own work around the stages that no event times (it often exceeds the AOT first run). Each method
runs a few rounds on new functions and the median round is kept whole.

The very first lowering in a process pays a one-time cost. It is paid beforehand on an unrelated tiny function
(the warm-up), so it is not charged to the audited function, and it is measured on its own in a fresh process.

    python -m perfaudit.decompose   # the one-time lowering cost of a fresh process, as JSON
"""

import itertools
import json
import os
import subprocess
import sys
import time

import jax
import numpy as np

from perfaudit import fresh

EVENT_PARTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "compile_s",
}
_names = itertools.count()


def _fresh_jit(fn, role):
    """jax.jit of a new function object with a name used nowhere else: its caches are cold, and the
    monitoring events that carry its name are its own."""

    def audited(x):
        return fn(x)

    audited.__name__ = audited.__qualname__ = f"perfaudit_{role}_{os.getpid()}_{next(_names)}"
    return jax.jit(audited), audited.__name__


def _seconds_since(start):
    return time.perf_counter() - start


STEADY_RUNS = 20  # steady runs of the compiled program, after its first run


def aot_parts(fn, x, time_stages):
    """The AOT stages of a fresh jit of fn at x, timed by time_stages(jitted, x, steady_runs): trace_s, lower_s,
    compile_s, first_run_s and their sum_s, with the median of the steady runs. Notebook 4 hands in the student's
    own time_stages; the instructor's tests and benchmarks hand in the reference (perfaudit/answer_key/answers.py)."""
    jitted, _ = _fresh_jit(fn, "aot")
    stages = time_stages(jitted, x, STEADY_RUNS)
    parts = {key: float(stages[key]) for key in ("trace_s", "lower_s", "compile_s", "first_run_s")}
    steady = sorted(float(s) for s in stages["steady_run_s"])
    return {**parts, "sum_s": sum(parts.values()), "steady_run_median_s": steady[len(steady) // 2]}


def observed_first_call(fn, x):
    """Time an ordinary first call of a fresh jit of fn, with the monitoring events JAX reports for it."""
    jitted, name = _fresh_jit(fn, "observed")
    parts = dict.fromkeys(EVENT_PARTS.values(), 0.0)

    def listener(event, duration_s, **kwargs):
        # Listeners are process-wide: keep only this function's events (trace: "f"; lower, compile: "jit(f)").
        if event in EVENT_PARTS and kwargs.get("fun_name") in (name, f"jit({name})"):
            parts[EVENT_PARTS[event]] += duration_s

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        start = time.perf_counter()
        jitted(x).block_until_ready()
        first_call_s = _seconds_since(start)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    observed_sum = sum(parts.values())
    return first_call_s, {**parts, "sum_s": observed_sum, "remainder_s": first_call_s - observed_sum}


def warm_up_lowering():
    """Trace, lower, compile and run two unrelated tiny functions; return how long each lowering took.

    In a fresh process the first lowering carries the one-time cost and the second does not."""
    lower_s = []
    for tiny in (lambda v: v + 1, lambda v: v * 2):
        tiny_traced = jax.jit(tiny).trace(np.float32(1))
        start = time.perf_counter()
        tiny_lowered = tiny_traced.lower()
        lower_s.append(_seconds_since(start))
        tiny_lowered.compile()(np.float32(1)).block_until_ready()
    return {"first_lower_s": lower_s[0], "second_lower_s": lower_s[1]}


def one_time_lowering_in_fresh_process():
    """The warm-up run in a new Python process, where its first lowering is the process's first. Beside an
    accelerator it measures the CPU (perfaudit/fresh.py): its backend says which."""
    done = subprocess.run([sys.executable, "-m", "perfaudit.decompose"], capture_output=True, text=True,
                          env=fresh.environment(jax.default_backend(), JAX_ENABLE_COMPILATION_CACHE="false"))
    if done.returncode != 0:
        raise RuntimeError(f"the fresh process measuring the one-time lowering cost failed:\n{done.stderr[-2000:]}")
    warm_up = json.loads(done.stdout)
    return {
        "measured_in": "a fresh Python process",
        **warm_up,
        "one_time_s": warm_up["first_lower_s"] - warm_up["second_lower_s"],
    }


def cost_analysis(compiled):
    """XLA's static cost model of the compiled program: counted operations, not a measurement."""
    cost = compiled.cost_analysis()
    return {
        "flops": float(cost.get("flops", 0.0)),
        "transcendentals": float(cost.get("transcendentals", 0.0)),
        "bytes_accessed": float(cost.get("bytes accessed", 0.0)),
    }


def memory_estimate(compiled):
    """The compiler's memory estimate for the compiled program, taken at compile time, not measured."""
    stats = compiled.memory_analysis()
    fields = ("argument", "output", "temp", "alias", "generated_code")
    return {"is_estimate": True, "source": "compiled.memory_analysis()",
            **{f"{f}_size_in_bytes": int(getattr(stats, f"{f}_size_in_bytes")) for f in fields}}


def _median(rounds, key):
    """The round whose key is the median (the upper one of two middles): one whole, consistent round."""
    return sorted(rounds, key=key)[len(rounds) // 2]


def first_call(fn, x, time_stages, rounds=3, one_time_lowering=True):
    """Decompose the first call of jax.jit(fn) at x both ways, with what the compiler says about the program.

    Each method runs `rounds` times, each time on a new function after jax.clear_caches(); the round with the
    median first call (observed) and the round with the median sum (AOT) are reported whole, so one stall of a
    busy machine does not decide the result. time_stages times the AOT rounds (see aot_parts).
    Clears JAX's in-memory caches: jitted functions compiled before recompile on their next call. Returns a dict:
    decomposition, cost_analysis, memory_estimate (report sections) and stablehlo_text (the lowered program, for a
    file beside the JAXPR).
    """
    print("warming up lowering on two unrelated tiny functions ...", flush=True)
    warm_up = warm_up_lowering()
    observed_rounds, aot_rounds = [], []
    for round_ in range(1, rounds + 1):
        print(f"round {round_}/{rounds}: an ordinary first call observed through jax.monitoring, "
              "then trace, lower, compile and first run ahead of time ...", flush=True)
        jax.clear_caches()
        observed_rounds.append(observed_first_call(fn, x))
        jax.clear_caches()
        aot_rounds.append(aot_parts(fn, x, time_stages))
    first_call_s, observed = _median(observed_rounds, key=lambda r: r[0])
    aot = _median(aot_rounds, key=lambda r: r["sum_s"])
    program, _ = _fresh_jit(fn, "program")
    lowered = program.trace(x).lower()  # untimed: what the compiler says about the program, and its StableHLO
    executable = lowered.compile()
    decomposition = {
        "shape": list(x.shape),
        "dtype": str(x.dtype),
        "rounds": rounds,
        "first_call_rounds_s": [r[0] for r in observed_rounds],
        "aot_sum_rounds_s": [r["sum_s"] for r in aot_rounds],
        "first_call_s": first_call_s,
        "observed": observed,
        "aot": aot,
        "warm_up": warm_up,
    }
    if one_time_lowering:
        print("measuring the one-time lowering cost in a fresh Python process ...", flush=True)
        decomposition["one_time_lowering"] = one_time_lowering_in_fresh_process()
    return {
        "decomposition": decomposition,
        "cost_analysis": cost_analysis(executable),
        "memory_estimate": memory_estimate(executable),
        "stablehlo_text": lowered.as_text(),
    }


def table(decomposition):
    """The two decompositions side by side, in milliseconds, as text."""
    observed, aot = decomposition["observed"], decomposition["aot"]

    def ms(seconds):
        return f"{seconds * 1e3:12.3f}"

    lines = [f"{'part':<24}{'observed ms':>12}{'AOT ms':>12}"]
    for part in ("trace", "lower", "compile"):
        lines.append(f"{part:<24}{ms(observed[part + '_s'])}{ms(aot[part + '_s'])}")
    lines.append(f"{'remainder / first run':<24}{ms(observed['remainder_s'])}{ms(aot['first_run_s'])}"
                 "   (observed: what the events leave of the first call; AOT: the first run)")
    lines.append(f"{'trace + lower + compile':<24}{ms(observed['sum_s'])}"
                 f"{ms(aot['trace_s'] + aot['lower_s'] + aot['compile_s'])}")
    lines.append(f"{'total':<24}{ms(decomposition['first_call_s'])}{ms(aot['sum_s'])}"
                 "   (observed: the first call itself; AOT: the sum of its parts)")
    if "steady_run_median_s" in aot:
        lines.append(f"{'steady run (median)':<24}{'':>12}{ms(aot['steady_run_median_s'])}"
                     "   (AOT: the compiled program's later runs)")
    lines.append(f"first call, wall clock: {decomposition['first_call_s'] * 1e3:.3f} ms; "
                 f"the events cover {observed['sum_s'] / decomposition['first_call_s']:.0%} of it")
    lines.append(f"the remainder is {observed['remainder_s'] / aot['first_run_s']:.1f}x the AOT first run"
                 + (f" and {observed['remainder_s'] / aot['steady_run_median_s']:,.0f}x a steady run"
                    if aot.get("steady_run_median_s") else ""))
    if "one_time_lowering" in decomposition:
        once = decomposition["one_time_lowering"]
        lines.append(f"one-time lowering cost of a fresh process: {once['one_time_s'] * 1e3:.3f} ms "
                     f"(first lowering {once['first_lower_s'] * 1e3:.3f} ms, "
                     f"second {once['second_lower_s'] * 1e3:.3f} ms)")
        if "backend" in once:
            lines.append(f"  measured in {fresh.measured_on(once['backend'], jax.default_backend())}")
    return "\n".join(lines)


if __name__ == "__main__":
    backend = jax.default_backend()  # a fresh process beside a TPU measures the CPU: say which
    print(json.dumps({**warm_up_lowering(), "backend": backend}), flush=True)
    # Done: skip the interpreter's shutdown, which with JAX's backend started takes 0.15-0.2 s here (its thread
    # pools) that the notebook waiting for this process would count.
    os._exit(0)
