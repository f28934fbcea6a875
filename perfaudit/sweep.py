"""Where computation overtakes dispatch: steady calls of a jitted function across input sizes, timed three ways.

- synchronized: one call, timed until its result is ready (what notebook 1 measures at 16x16);
- unsynchronized: one call, timed until it returns (the dispatch; the result may still be computing);
- in a loop: k applications inside one compiled `jax.lax.fori_loop`, timed together and divided by k, so one
  dispatch is shared by k computations: an estimate of the computation alone, not a bound on it. The loop's
  bookkeeping and 1/k of a dispatch add to it; data that stays in cache from one application to the next takes
  from it, and a lone call may not find its input in cache (at 64x64 a profiler trace has shown the product's
  fusion taking longer in a steady call than a step of the loop). The fastest of the repeats is kept: the
  computation's cost is what it takes when nothing interrupts it, while the calls' medians show what a caller
  waits for.

`reading` prints what notebook 1's questions rest on, from the rows of this run: how much the synchronized call
grew against the work, and the share of a 16x16 call that the hand-off between threads took.

Every size gets its own compile before any timing: these are steady calls only. Nothing here asserts a time;
`tests/test_sweep.py` checks relations between the measurements.

    python -m perfaudit.sweep --sizes 16 1024              # this process: JSON rows
    python -m perfaudit.sweep --sizes 16 --sync-dispatch   # a fresh process with CPU async dispatch off
"""

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from perfaudit import fresh

SIZES = (16, 32, 64, 128, 256, 512, 1024)
LOOP_FLOPS = 1e7  # a loop runs about this many flops: one dispatch is a small share of it, and it is short
# enough that on a busy machine some repeats run without being interrupted (the loop's fastest repeat is kept)
SWEEP_PNG = "steady-by-size.png"
COLOURS = {"synchronized": "#2ca02c", "unsynchronized": "#7f7f7f", "in_loop": "#1f77b4", "sync_dispatch": "#ff7f0e"}


def flops(n):
    """Floating-point operations of tanh(x @ x) at n x n as XLA's cost model counts them (2n^3)."""
    return 2 * n**3


def loop_length(n):
    """How many applications one timed loop holds at n x n: about LOOP_FLOPS in all, and at least 2."""
    return max(2, math.ceil(LOOP_FLOPS / flops(n)))


def calls_per_clock(n, repeats):
    """How many calls each clock times at n x n: up to 50 where calls are cheap, never fewer than `repeats`."""
    return max(repeats, min(50, int(LOOP_FLOPS // flops(n))))


def _median_seconds(samples):
    return float(np.median(samples))


def measure_size(fn, n, repeats=5, rng=None):
    """One row: the steady call of jax.jit(fn) at n x n float32, timed three ways: the medians of
    calls_per_clock(n, repeats) calls synchronized and unsynchronized, and the fastest of `repeats` loops per
    application."""
    rng = rng or np.random.default_rng(0)
    # Scaled so that tanh stays away from saturation, however often the loop applies it.
    x = jax.device_put((rng.standard_normal((n, n)) / math.sqrt(n)).astype(np.float32))
    jitted = jax.jit(fn)
    jitted(x).block_until_ready()  # compile for this size first: steady calls only

    calls = calls_per_clock(n, repeats)
    synchronized = []
    for _ in range(calls):
        start = time.perf_counter()
        jitted(x).block_until_ready()
        synchronized.append(time.perf_counter() - start)

    unsynchronized, ready = [], []
    for _ in range(calls):
        start = time.perf_counter()
        out = jitted(x)
        unsynchronized.append(time.perf_counter() - start)
        ready.append(out.is_ready())  # True: the call returned with its result already computed
        out.block_until_ready()  # drain outside the clock, so calls do not queue up behind each other

    k = loop_length(n)
    looped = jax.jit(lambda x, k: jax.lax.fori_loop(0, k, lambda _, y: fn(y), x))  # k traced: one compile
    looped(x, k).block_until_ready()
    in_loop = []
    for _ in range(repeats):
        start = time.perf_counter()
        looped(x, k).block_until_ready()
        in_loop.append((time.perf_counter() - start) / k)

    backend = jax.default_backend()  # where the rows were measured: a fresh process beside a TPU measures the CPU
    return {
        "n": n,
        "backend": backend,
        "flops": flops(n),
        "synchronized_s": _median_seconds(synchronized),
        "unsynchronized_s": _median_seconds(unsynchronized),
        "in_loop_s": min(in_loop),
        "calls": calls,
        "loop_length": k,
        "ready_on_return": sum(ready) / len(ready),
    }


def measure(fn, sizes=SIZES, repeats=5):
    """A row per size (see measure_size), smallest first."""
    rng = np.random.default_rng(0)
    return [measure_size(fn, n, repeats, rng) for n in sorted(sizes)]


def workload(x):
    return jnp.tanh(x @ x)


def measure_in_fresh_process(sizes=(16,), repeats=5, async_dispatch=False):
    """The sweep of this module's tanh(x @ x) in a new Python process, with CPU asynchronous dispatch on or off.

    The switch (jax_cpu_enable_async_dispatch) only takes effect before JAX starts its CPU backend, so it cannot
    be flipped in a process that has already run JAX: hence a fresh one. Beside an accelerator it measures the CPU
    (perfaudit/fresh.py): each row's backend says which."""
    command = [sys.executable, "-m", "perfaudit.sweep", "--repeats", str(repeats), "--sizes", *map(str, sizes)]
    if not async_dispatch:
        command.append("--sync-dispatch")
    done = subprocess.run(command, capture_output=True, text=True,
                          env=fresh.environment(jax.default_backend(), JAX_ENABLE_COMPILATION_CACHE="false"))
    if done.returncode != 0:
        raise RuntimeError(f"the fresh process measuring the sweep failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def overtakes(rows):
    """The smallest n whose in-loop computation takes at least as long as the rest of a synchronized call
    (dispatch and hand-off: synchronized minus in-loop), or None when no size in rows gets there."""
    for row in rows:
        if row["in_loop_s"] >= row["synchronized_s"] - row["in_loop_s"]:
            return row["n"]
    return None


def growth(rows, low=16, high=64):
    """From n = low to n = high, as measured: (how many times the work grew, how many times the synchronized call
    grew, the in-loop computation's share of the synchronized call at high), or None where a size is missing."""
    by_n = {row["n"]: row for row in rows}
    if low not in by_n or high not in by_n:
        return None
    a, b = by_n[low], by_n[high]
    return b["flops"] / a["flops"], b["synchronized_s"] / a["synchronized_s"], b["in_loop_s"] / b["synchronized_s"]


def handoff_share(rows, sync_dispatch_rows, n=16):
    """(synchronized - synchronized with async dispatch off) / synchronized at n x n: the share of the call that
    handing the work to another thread took in this run (negative where the async-off call was the slower). None
    where either is missing, or where the async-off call ran on another backend (beside a TPU it measures the
    CPU): a share of one backend's call by another's means nothing."""
    on = next((row for row in rows if row["n"] == n), None)
    off = next((row for row in sync_dispatch_rows or [] if row["n"] == n), None)
    if on is None or off is None or off.get("backend", on.get("backend")) != on.get("backend", off.get("backend")):
        return None
    return (on["synchronized_s"] - off["synchronized_s"]) / on["synchronized_s"]


def reading(rows, sync_dispatch_rows=None):
    """What this run's rows say to notebook 1's questions, as text: growth() and handoff_share()."""
    lines = []
    grown = growth(rows)
    if grown is not None:
        work, call, share = grown
        lines.append(f"from 16x16 to 64x64 the work grew {work:.0f}x and the synchronized call {call:.1f}x; at 64x64 "
                     f"the in-loop computation is {share:.0%} of the synchronized call")
    handoff = handoff_share(rows, sync_dispatch_rows)
    if handoff is not None:
        lines.append(f"at 16x16 the hand-off between threads (synchronized minus async off) took {handoff:.0%} of "
                     "the synchronized call in this run")
    return "\n".join(lines)


def _sync_dispatch_label(rows, sync_dispatch_rows, words="sync, async off us"):
    """The async-off measurement's label, naming its backend where it is not the other rows' (beside a TPU a fresh
    process measures the CPU)."""
    backend = sync_dispatch_rows[0].get("backend")
    return words if backend in (None, rows[0].get("backend")) else f"{words} ({backend})"


def table(rows, sync_dispatch_rows=None):
    """The rows as text, in microseconds."""
    off = {r["n"]: r for r in sync_dispatch_rows or []}
    lines = [f"{'n':>5} {'flops':>14} {'synchronized us':>16} {'unsynchronized us':>18} {'in loop us':>11} "
             f"{'ready on return':>16}" + (f" {_sync_dispatch_label(rows, sync_dispatch_rows):>19}" if off else "")]
    for r in rows:
        line = (f"{r['n']:>5} {r['flops']:>14,} {r['synchronized_s'] * 1e6:>16.1f} "
                f"{r['unsynchronized_s'] * 1e6:>18.1f} "
                f"{r['in_loop_s'] * 1e6:>11.2f} {r['ready_on_return']:>16.0%}")
        if off:
            line += f" {off[r['n']]['synchronized_s'] * 1e6:>19.1f}" if r["n"] in off else f" {'':>19}"
        lines.append(line)
    return "\n".join(lines)


def chart(rows, path, sync_dispatch_rows=None):
    """Microseconds per steady call against n, both on log scales: synchronized, unsynchronized and in-loop
    medians (and the synchronized call with async dispatch off, when given). Saves a PNG; returns its path."""
    # charts (matplotlib: seconds) only when drawing: `python -m perfaudit.sweep` measures in fresh processes
    from perfaudit.charts import _figure

    figure = _figure(8, 4.2)
    axes = figure.add_subplot()
    n = [r["n"] for r in rows]
    for key, label, style in (
        ("synchronized_s", "synchronized call (median)", "o-"),
        ("unsynchronized_s", "unsynchronized call: dispatch only (median)", "s--"),
        ("in_loop_s", "computation: in a compiled loop, per application (fastest)", "^-"),
    ):
        axes.plot(n, [r[key] * 1e6 for r in rows], style, color=COLOURS[key.removesuffix("_s")], label=label)
    if sync_dispatch_rows:
        axes.plot([r["n"] for r in sync_dispatch_rows], [r["synchronized_s"] * 1e6 for r in sync_dispatch_rows],
                  "D", color=COLOURS["sync_dispatch"],
                  label=_sync_dispatch_label(rows, sync_dispatch_rows,
                                             "synchronized call, async dispatch off (fresh process)"))
    crossing = overtakes(rows)
    if crossing is not None:
        axes.axvline(crossing, color="#444444", linestyle=":", linewidth=1)
        axes.annotate(f" computation overtakes\n dispatch at n = {crossing}", (crossing, axes.get_ylim()[1]),
                      va="top", fontsize=8)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks(n, [str(v) for v in n])
    axes.set_xlabel("n (an n x n float32 input)")
    axes.set_ylabel("microseconds per call (log scale)")
    axes.set_title("Steady calls of tanh(x @ x): dispatch against computation")
    axes.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(path)
    return Path(path)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m perfaudit.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sync-dispatch", action="store_true",
                        help="turn CPU asynchronous dispatch off before JAX starts (jax_cpu_enable_async_dispatch)")
    args = parser.parse_args(argv)
    if args.sync_dispatch:
        jax.config.update("jax_cpu_enable_async_dispatch", False)
    print(json.dumps(measure(workload, args.sizes, args.repeats)))


if __name__ == "__main__":
    main()
