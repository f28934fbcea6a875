"""Benchmark: notebook 5's speed-up floor on a busy machine, each handed-out loop against each valid fix.

    python benchmarks/speedup_floor_under_load.py [--busy 8] [--repeats 5]

Starts --busy busy-loop processes (default 8; verdicts_under_load.Load, stopped at the end), then, for each variant
of the handed-out loop (perfaudit/handout.py: A, B, C) and each fix (the instructor's fixed_train from
source/performance-audit/05-audit.ipynb and each valid one of perfaudit/fixtures/catalog/valid.py), measures the
speed-up as the hidden test does: perfaudit/autograde/evidence/audit_evidence.grader_speedup, the code
check_speedup_measured runs (ROUNDS rounds on new data, each loop counted by its fastest round), here in one
process where the grader runs the loops in the student's kernel. --repeats measurements of each pair, taking turns.
Prints the minimum and median speed-up of each pair against SPEEDUP_MIN, and the load average while measuring.
Nothing here is a test: timings depend on the machine and on what else runs on it.
"""

import argparse
import functools
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from perfaudit import handout, notebooks, paths
from perfaudit.autograde.evidence import audit_evidence
from perfaudit.checks import audit
from perfaudit.fixtures import samples
from perfaudit.fixtures.catalog import valid
from verdicts_under_load import Load  # noqa: E402 (this folder is on the path when the script runs)


def fixes():
    """{name: fixed_train}: the instructor's solution of notebook 5, then each valid fix of the catalog."""
    source = notebooks.read(paths.SOURCE / paths.STAGES[5])
    cells = {notebooks.nbgrader_meta(c).get("grade_id"): c for c in source.cells}
    codes = {"solution": samples.instructor_solution(cells["fixed_train"])}
    for name, case in valid.VALID.items():
        code = case.replaced.get((5, "fixed_train"))
        if isinstance(code, str):
            codes[name.removeprefix("valid-loop-audit-")] = code
    found = {}
    for name, code in codes.items():
        namespace = {"functools": functools, "time": time, "np": np, "jax": jax, "jnp": jnp, "handout": handout}
        exec(compile(code, f"<fixed_train: {name}>", "exec"), namespace)
        found[name] = namespace["fixed_train"]
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=8, help="busy-loop processes while measuring (0: none)")
    parser.add_argument("--repeats", type=int, default=5, help="measurements of each (variant, fix)")
    parser.add_argument("--warmup-s", type=float, default=5.0, help="busy loops alone before the first measurement")
    args = parser.parse_args(argv)
    fixed = fixes()
    rng = np.random.default_rng()
    # JAX's first calls in this process, as the notebook's cells made them in the kernel before the test: each
    # variant's loop once, each fix once
    for variant, fix in [(v, fixed["solution"]) for v in handout.VARIANTS] + [("A", fix) for fix in fixed.values()]:
        audit_evidence.grader_speedup(fix, variant, rng)
    load_before = os.getloadavg()
    measured = {(variant, name): [] for variant in handout.VARIANTS for name in fixed}
    started = time.perf_counter()
    with Load(args.busy, max_seconds=3600) as load:
        time.sleep(args.warmup_s)
        load.restart_samples()
        for repeat in range(args.repeats):
            for (variant, name), speedups in measured.items():
                fix = fixed[name]
                speedups.append(audit_evidence.grader_speedup(fix, variant, rng))
            print(f"repeat {repeat + 1} of {args.repeats} done, {time.perf_counter() - started:.0f} s", file=sys.stderr,
                  flush=True)
    samples_ = load.samples or [os.getloadavg()[0]]
    print(f"speed-up floor under load: {len(measured)} (variant, fix) pairs x {args.repeats} repeats, "
          f"{audit_evidence.ROUNDS} rounds each (fastest of each loop), {args.busy} busy processes, "
          f"{os.cpu_count()} cores")
    print(f"load average (1 min) before {load_before[0]:.1f}; while measuring min {min(samples_):.1f}, "
          f"median {statistics.median(samples_):.1f}, max {max(samples_):.1f}; busy loops alive at the end "
          f"{load.still_running_at_end} of {args.busy}")
    print(f"{'variant':8} {'fix':42} {'min':>7} {'median':>7}  SPEEDUP_MIN {audit.SPEEDUP_MIN:g}")
    for (variant, name), speedups in measured.items():
        low = min(speedups)
        verdict = "below the floor" if low < audit.SPEEDUP_MIN else f"margin {low / audit.SPEEDUP_MIN:.2f}x"
        print(f"{variant:8} {name:42} {low:6.2f}x {statistics.median(speedups):6.2f}x  {verdict}")
    lowest = min(min(s) for s in measured.values())
    below = sum(s < audit.SPEEDUP_MIN for speedups in measured.values() for s in speedups)
    print(f"lowest of all: {lowest:.2f}x against SPEEDUP_MIN {audit.SPEEDUP_MIN:g}; measurements below it: {below} of "
          f"{sum(len(s) for s in measured.values())}")

if __name__ == "__main__":
    main()
