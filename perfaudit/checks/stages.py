"""Notebook 4's stages, checked for their form: trace, lower, compile and the compiled program's runs, each a
positive float of seconds, as many steady runs as asked. Relations only, never a time against a fixed number.
Whether each part covers its own stage is judged against the grader's own clock by the hidden test
(perfaudit/autograde/evidence/measured.py, check_time_stages). Re-exported by perfaudit.checks.
"""

import math

import numpy as np

from perfaudit.checks.failure import fail as _fail

STAGE_PARTS = ("trace_s", "lower_s", "compile_s", "first_run_s")
STAGE_WORDS = {"trace_s": "jitted.trace(x)", "lower_s": "traced.lower()", "compile_s": "lowered.compile()"}
CLOCK_SLACK_S = 50e-6  # one process, one clock: rounding only


def _seconds(value, what):
    if isinstance(value, np.floating):
        value = float(value)
    if not isinstance(value, float):
        _fail(f"{what} should be a float number of seconds (time.perf_counter() differences are); found "
              f"{type(value).__name__} {value!r:.40}. Report seconds, not milliseconds.")
    if not math.isfinite(value) or value <= 0:
        _fail(f"{what} should be a positive, finite number of seconds; found {value!r}.")
    return value


def check_stages(stages, steady_runs, what="time_stages"):
    """The dict time_stages returns: trace_s, lower_s, compile_s, first_run_s and steady_runs steady runs, all
    positive floats of seconds. Returns {part: seconds} with steady_run_s as a list."""
    if not isinstance(stages, dict):
        _fail(f"{what} should return a dict; found {type(stages).__name__}.")
    missing = [key for key in (*STAGE_PARTS, "steady_run_s") if key not in stages]
    if missing:
        _fail(f"{what} should return a dict with the keys {', '.join((*STAGE_PARTS, 'steady_run_s'))}; "
              f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing.")
    found = {key: _seconds(stages[key], f"{what}: {key}") for key in STAGE_PARTS}
    steady = stages["steady_run_s"]
    if isinstance(steady, np.ndarray) and steady.ndim == 1:
        steady = steady.tolist()
    if not isinstance(steady, (list, tuple)) or len(steady) != steady_runs:
        length = f"holds {len(steady)}" if isinstance(steady, (list, tuple)) else f"is a {type(steady).__name__}"
        _fail(f"{what}: steady_run_s should be a sequence of {steady_runs} timings in seconds, one per steady run "
              f"of the compiled program; it {length}.")
    found["steady_run_s"] = [_seconds(s, f"{what}: steady_run_s[{i}]") for i, s in enumerate(steady)]
    return found
