"""Notebook 4's stages, checked: trace, lower, compile and the compiled program's runs, timed by the student.

Relations only, never a time against a fixed number: every part is a positive float of seconds, each of trace,
lower and compile lasts at least as long as that stage of the function handed in took (the hidden test hands in a
function of the grader's jit, which holds each stage for a time it keeps to itself:
perfaudit/autograde/instruments.py), and all of them fit in the call as the grader timed it. The first run of the
compiled program is usually slower than its steady runs, but a busy machine can invert that, so nothing asks it.
Re-exported by perfaudit.checks.
"""

import math
import time

import numpy as np

from perfaudit.checks.failure import fail as _fail
from perfaudit.checks.outputs import device_matrix, random_matrix

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


def check_time_stages(time_stages, rng=None):
    """time_stages on a new function of the grader's jit, a random matrix and a steady_runs chosen now: every part
    measured during the call; each of trace, lower and compile covering that stage as the grader held it; the first
    run covering the compiled program's very first run, waited for; each steady run covering a later run of its own.
    The grader holds each run of the compiled program and lets its result be ready when it chooses
    (perfaudit/autograde/instruments.py): a warm run timed as the first, or a run not waited for, does not fit."""
    from perfaudit.checks.measured import covers, grader_jit

    rng = rng or np.random.default_rng()
    n, steady_runs = int(rng.integers(8, 48)), int(rng.integers(5, 20))
    jit = grader_jit(rng)
    x = device_matrix(random_matrix(rng, n))
    started = time.perf_counter()
    stages = time_stages(jit.new_workload(), x, steady_runs)
    outer_s = time.perf_counter() - started
    what = f"time_stages(jitted, x, {steady_runs})"
    stages = check_stages(stages, steady_runs, what)
    record = jit.functions[0] if jit.functions else None
    held = {f"{stage}_s": [span for done, span, *_ in (record.stages if record else []) if done == stage]
            for stage in ("trace", "lower", "compile")}
    for part, spans in held.items():
        if not spans:
            _fail(f"{what} never called {STAGE_WORDS[part]} on the function it was given: build the chain from it, "
                  "jitted.trace(x).lower().compile(), and time each step.")
        if stages[part] + CLOCK_SLACK_S < min(spans):
            _fail(f"{what}: {part} is {stages[part] * 1e3:.3f} ms, shorter than {STAGE_WORDS[part]} took during the "
                  "call: time it alone, from just before it until it returns.")
    runs = record.runs if record else []
    if not runs:
        _fail(f"{what} never ran the program it compiled: time compiled(x) for the first run and the steady runs.")
    if runs[0].span_s is None:
        _fail(f"{what}: the compiled program's first run was never waited for, so first_run_s cannot include it. "
              "Call block_until_ready() on its result before you stop the clock.")
    if stages["first_run_s"] + CLOCK_SLACK_S < runs[0].span_s:
        _fail(f"{what}: first_run_s ({stages['first_run_s'] * 1e3:.3f} ms) is shorter than the compiled program's "
              "first run took. Was it run before the run you timed? Time its very first run, from just before "
              "compiled(x) until block_until_ready() returns, and nothing before it.")
    later = [run.span_s for run in runs[1:] if run.span_s is not None]
    if not covers(stages["steady_run_s"], later, CLOCK_SLACK_S):
        _fail(f"{what}: the steady runs do not each cover a later run of the compiled program of their own, waited "
              f"for ({len(later)} later runs were waited for): time each steady run from just before compiled(x) "
              "until block_until_ready() returns.")
    total = sum(stages[part] for part in STAGE_PARTS) + sum(stages["steady_run_s"])
    if total > outer_s + CLOCK_SLACK_S:
        _fail(f"{what}: the parts add up to {total:.6f} s, more than the {outer_s:.6f} s the whole call "
              "took: they were not all measured during this call. (Milliseconds instead of seconds?)")
    _check_each_part_is_its_own(record, stages, started, outer_s, what)


def _check_each_part_is_its_own(record, stages, started, outer_s, what):
    """Each part no longer than its stage or run could have taken on a clock around it alone: from the release of
    the event before it (a lower's own trace, which jitted.lower(x) makes first, counted in) until the arrival of the
    next (measured.windows). One timing given to several stages, or padded by a wait outside the timed parts, does
    not fit."""
    from perfaudit.checks.measured import fits, windows

    events = sorted([(arrival, release, kind) for kind, _, arrival, release in record.stages] +
                    [(run.started, None if run.span_s is None else run.started + run.span_s, "run")
                     for run in record.runs])
    timed = [(arrival, release) for arrival, release, _ in events]
    longest = windows(timed, started, started + outer_s)
    for i, (_, _, kind) in enumerate(events):
        if kind == "lower" and i > 0 and events[i - 1][2] == "trace":  # jitted.lower(x): its trace, then the lowering
            longest[i] = windows(timed[:i - 1] + timed[i:], started, started + outer_s)[i - 1]
    bounds = {kind: [(release - arrival, longest[i]) for i, (arrival, release, done) in enumerate(events)
                     if done == kind and release is not None] for kind in ("trace", "lower", "compile", "run")}
    for part in ("trace_s", "lower_s", "compile_s"):
        if not fits([stages[part]], bounds[part[:-2]], CLOCK_SLACK_S):
            _fail(f"{what}: {part} ({stages[part] * 1e3:.3f} ms) is longer than {STAGE_WORDS[part]} could have taken "
                  "on a clock around it alone: time each stage on its own, from just before it until it returns.")
    runs = bounds["run"]
    if not fits([stages["first_run_s"]], runs[:1], CLOCK_SLACK_S) or \
            not fits(stages["steady_run_s"], runs[1:], CLOCK_SLACK_S):
        _fail(f"{what}: a run's timing is longer than that run could have taken on a clock around it alone: time "
              "each run of the compiled program on its own, from just before compiled(x) until its result is ready.")
