"""What the notebooks' claims look like on whichever backend JAX runs on: a measurement script, not a test.

    python benchmarks/backend_check.py            # JSON on stdout, a summary on stderr

- matrix-product precision: the largest error of tanh(A @ A) against float64 NumPy over random A (the check's
  sizes), under each jax_default_matmul_precision, beside the tolerance checks.check_random_output would use and
  whether the check passes (also with the old fixed 1e-4);
- the trace-count answers of notebook 2's Part C (checks.trace_count_answers()) on this backend;
- the steady-call sweep of notebook 1's going further (perfaudit.sweep).

It runs where only NumPy and JAX are installed: jsonschema, which the checks import for the report's schema, is
stubbed when it is missing (nothing here validates a report).
"""

import json
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
try:
    import jsonschema  # noqa: F401
except ImportError:
    sys.modules["jsonschema"] = types.ModuleType("jsonschema")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from perfaudit import checks, sweep  # noqa: E402

PRECISIONS = (None, "highest", "high", "tensorfloat32", "bfloat16", "default")


def workload(x):
    return jnp.tanh(x @ x)


def precision_rows(seeds=40):
    rows = []
    for setting in PRECISIONS:
        worst = 0.0
        passes = old_passes = 0
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            n = int(rng.integers(5, 48))  # as check_random_output draws them
            a = checks.random_matrix(rng, n)
            expected = np.tanh(a.astype(np.float64) @ a.astype(np.float64))
            with jax.default_matmul_precision(setting) if setting else _nothing():
                found = np.asarray(jax.jit(workload)(jax.device_put(a)), dtype=np.float64)
                tolerance, assumed = checks.output_tolerance()
                try:
                    checks.check_random_output(jax.jit(workload), rng=np.random.default_rng(seed))
                    passes += 1
                except AssertionError:
                    pass
            error = float(np.abs(found - expected).max())
            worst = max(worst, error)
            old_passes += error <= 1e-4
        rows.append({"setting": setting, "worst_error": worst, "tolerance": tolerance, "assumed": assumed,
                     "check_passes": f"{passes}/{seeds}", "old_1e-4_passes": f"{old_passes}/{seeds}"})
    return rows


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main():
    started = time.perf_counter()
    result = {"jax": jax.__version__, "backend": jax.default_backend(), "device": jax.devices()[0].device_kind}
    result["precision"] = precision_rows()
    result["trace_count_answers"] = checks.trace_count_answers()
    sizes = (4, 16, 64, 256, 1024) + ((4096,) if jax.default_backend() != "cpu" else ())
    result["sweep"] = sweep.measure(workload, sizes=sizes)
    result["seconds"] = time.perf_counter() - started
    print(json.dumps(result, indent=1))
    print(f"jax {result['jax']} on {result['backend']} ({result['device']})", file=sys.stderr)
    for row in result["precision"]:
        print(f"  precision {row['setting']!s:<14} worst error {row['worst_error']:.2e}  "
              f"tolerance {row['tolerance']:g} "
              f"({row['assumed']})  check passes {row['check_passes']}, old 1e-4 {row['old_1e-4_passes']}",
              file=sys.stderr)
    print(sweep.table(result["sweep"]), file=sys.stderr)


if __name__ == "__main__":
    main()
