"""The benchmark script runs and prints every figure it promises: structure only, never times."""

import re
import subprocess
import sys

from perfaudit import paths

SCRIPT = paths.ROOT / "benchmarks" / "first_call_decomposition.py"
FIGURES = [
    "first call (ms)",
    "observed parts / first call",
    "remainder (dispatch + execution) / first call",
    "AOT parts / first call",
    "one-time lowering: first - second lowering (ms)",
    "steady loop per call / bare timeit per call",
    "steady median (notebook) / bare timeit per call",
]
NUMBER = r"-?\d+\.\d{3}"


def test_benchmark_prints_median_and_range_of_each_figure_over_fresh_processes():
    done = subprocess.run([sys.executable, str(SCRIPT), "--processes", "2"], capture_output=True, text=True,
                          check=True, cwd=paths.ROOT)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("first call of tanh(x @ x), 16x16 float32, in 2 fresh processes")
    assert lines[1].startswith("machine: ") and ", jax " in lines[1]
    rows = {line[:50].strip(): line[50:] for line in lines[3:]}
    for figure in FIGURES:
        assert re.fullmatch(rf"\s*{NUMBER}   {NUMBER} \.\. {NUMBER}", rows[figure]), (figure, rows.get(figure))
    assert done.stderr.count("process ") >= 2, "progress for each process goes to stderr"
