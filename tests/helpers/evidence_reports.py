"""A consistent report.json and its JAXPR file, for the tests of the evidence checks to change one thing at a time."""

import json

from perfaudit.answer_key.reference import reference_jaxpr


def consistent_report():
    """A report every evidence check accepts."""
    steady = [3e-5, 1e-5, 2e-5, 5e-5, 4e-5]
    return {
        "audit": "performance-audit",
        "workload": "tanh(x @ x)",
        "memory_measured": False,
        "profiler_trace": False,
        "timings": {
            "shape": [16, 16], "dtype": "float32", "synchronized": True, "first_call_s": 0.06, "steady_s": steady,
            "steady_summary": {"median_s": 3e-5, "min_s": 1e-5, "max_s": 5e-5, "iqr_s": 2e-5},
        },
        "tracing": {"shapes": [[16, 16], [32, 32]], "trace_count": 2, "read_before_make_jaxpr": True},
        "artifacts": {"jaxpr": "workload.jaxpr.txt"},
        "environment": {"python": "3.11", "jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu", "device_kind": "cpu"},
    }


def write_evidence(tmp_path, report, jaxpr=None):
    """report.json and the JAXPR it names in tmp_path (the reference JAXPR unless given); tmp_path."""
    jaxpr = reference_jaxpr() if jaxpr is None else jaxpr
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "workload.jaxpr.txt").write_text(jaxpr)
    return tmp_path
