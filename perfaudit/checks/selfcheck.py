"""Each notebook's central mistake, caught by its visible self-check in the student's own kernel.

Notebook 1's (a clock that stops before the result is ready, a warm-up call inside time_call) is check_time_call
in timing.py. Here: notebook 2's counter that counts calls instead of traces; notebook 3's warm first call and
calls not waited for (the first or the steady ones); notebook 4's report claims ("synchronized": true, the shapes)
against the calls it timed, a stage timing that is not of its stage alone, jitted(x) called before the stages and
a warm first run. Whether a result was waited for is seen, not guessed: each result is held a few milliseconds
before it is let be ready (watched.py), so a clock stopped before the wait is short by the whole hold. Each watches
the student's code through wrappers made here, on one clock, and judges relations only: a timing against the span
of the work it must cover, never against a fixed number. Nothing here imports the grader or the answer key: these
run where the student runs them.
"""

import collections.abc
import itertools
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from perfaudit.checks.failure import fail
from perfaudit.checks.held import HeldResult
from perfaudit.checks.outputs import device_matrix
from perfaudit.checks.stages import check_stages
from perfaudit.checks.timing import as_float, check_seconds
from perfaudit.checks.watched import HOLD_S, Call, WatchedJit

CLOCK_SLACK_S = 50e-6  # one process, one clock: rounding only
_names = itertools.count()


def _int_traces(traces):
    count = traces()
    if type(count) is not int:
        fail(f"traces() should return an int; found {type(count).__name__} {count!r:.40}.")
    return count


def check_counts_traces_not_calls(audited, traces):
    """Calls of audited at shapes it has already traced (16x16, 32x32) add no trace: a counter that rises on every
    call counts calls, not traces."""
    import jax  # JAX on first use: see perfaudit/checks/__init__.py

    before = _int_traces(traces)
    calls = [device_matrix(np.eye(16)), device_matrix(np.eye(32)), device_matrix(np.eye(16))]
    for x in calls:
        jax.block_until_ready(audited(x))
    added = _int_traces(traces) - before
    if added >= len(calls):
        fail(f"traces() went up by {added} for {len(calls)} more calls at shapes audited had already traced (16x16 and "
             "32x32): your counter counts calls, not traces. JAX runs the Python body of a jitted function only "
             "while it traces, once per new shape or dtype; later calls run the compiled program and never reach "
             "your Python code. Increment the counter inside the function you hand to jax.jit (audited = "
             "jax.jit(counted_workload)), not around the call, and call audited, not the function itself.")
    if added:
        fail(f"traces() went up by {added} for {len(calls)} calls at shapes audited had already traced (16x16 and "
             "32x32): a call at a shape jit has seen reuses its trace and adds none. Does something clear JAX's "
             "caches, or count anything besides the traced body?")


def _steady_list(steady, steady_calls, what):
    """steady_s as a list: any 1-D sequence of numbers (a list, a tuple, a deque, a NumPy array)."""
    if isinstance(steady, np.ndarray) and steady.ndim == 1:
        steady = steady.tolist()
    elif isinstance(steady, collections.abc.Iterable) and not isinstance(steady, (str, bytes, dict, np.ndarray)):
        steady = list(steady)
    if not isinstance(steady, (list, tuple)) or len(steady) != steady_calls:
        found = f"it holds {len(steady)}" if isinstance(steady, (list, tuple)) else f"found {type(steady).__name__}"
        fail(f"{what}: steady_s should be a sequence of {steady_calls} timings in seconds, one per steady call; "
             f"{found}.")
    return [check_seconds(as_float(s), f"{what}: steady_s[{i}]") for i, s in enumerate(steady)]


def _covers(timings, spans):
    """Whether each timing can be of a call of its own that it is no shorter than (sorted: any order is fine)."""
    spans = sorted(spans)[:len(timings)]
    return len(spans) == len(timings) and all(t + CLOCK_SLACK_S >= s for t, s in zip(sorted(timings), spans))


def check_timings_of_watched_calls(jit, first, steady, shape, what, claim=""):
    """first_call_s and steady_s against the calls `jit` (watched.WatchedJit) saw: the first call at `shape` traced
    and compiled and is covered by first_call_s, result waited for; each steady timing covers a later call of its
    own at that shape, result waited for. claim: words put before each failure (a report's claim it contradicts).
    Returns the timed first call (watched.Call)."""
    def failed(message):
        fail(f"{what}: {claim}{message}")

    calls = jit.calls
    if not calls:
        fail(f"{what} never called a function made by the jit it was given: make the audited function with "
             "audited = jit(counted_workload), using the jit argument, and time its calls.")
    compiling = [i for i, call in enumerate(calls) if call.traced and call.shape == shape]
    if not compiling:
        failed(f"no call of the function made by the jit it was given traced at {list(shape)}, the shape the report "
               "gives: time the first call of a newly jitted function at that shape.")
    first_call = calls[compiling[-1]]  # of the function timed: the last made that traced at that shape
    if first + CLOCK_SLACK_S < first_call.returned_s:
        failed(f"first_call_s is {first * 1e3:.3f} ms, but the function's first call at {list(shape)} took "
               f"{first_call.returned_s * 1e3:.3f} ms just to trace and compile: the call you timed as the first "
               "was a warm one, made after the function was already compiled. Time the very first call of the newly "
               "jitted function, with nothing calling it before, from just before the call until "
               "block_until_ready().")
    if first_call.span_s is None:
        failed("the first call's result was never waited for: first_call_s stopped the clock when the call "
               "returned, which holds the tracing and compiling but not the run. Call block_until_ready() on the "
               "first call's result before you stop the clock.")
    if first + CLOCK_SLACK_S < first_call.span_s:
        failed(f"first_call_s ({first * 1e3:.3f} ms) is shorter than the first call took from the call until its "
               f"result was ready ({first_call.span_s * 1e3:.3f} ms): the clock stopped before the result was "
               "ready, and block_until_ready() came after it. Stop the clock only after block_until_ready().")
    later = [call for call in calls[compiling[-1] + 1:] if call.shape == shape and call.function == first_call.function]
    waited = [call.span_s for call in later if call.span_s is not None]
    if len(waited) < len(steady):
        failed(f"of the {len(later)} calls at {list(shape)} after the first, {len(waited)} had their result "
               f"waited for, and steady_s holds {len(steady)} timings: steady calls not waited for. A clock stopped "
               "when the call returns times only the hand-off of the work, not the work. Call block_until_ready() "
               "on each steady call's result before you stop its clock.")
    if not _covers(steady, waited):
        failed("a steady timing is shorter than the call it times took from the call until its result was ready: "
               "the clock stopped before block_until_ready() returned. Time each steady call from just before "
               "the call until block_until_ready() returns.")
    return first_call


def check_first_call_is_cold(gather_evidence, steady_calls=5):
    """gather_evidence(steady_calls, jit) with a jit that watches its calls and holds each result (watched.py):
    first_call_s is at least as long as the first call at the reported shape took to trace, compile and give its
    result (a function called before the timed "first" call was already compiled: a warm first call), and each
    timing covers its call until its result was ready (a clock stopped when the call returns misses the hold)."""
    jit = WatchedJit()
    evidence = gather_evidence(steady_calls, jit)
    what = f"gather_evidence({steady_calls}, jit)"
    if not isinstance(evidence, dict):
        fail(f"{what} should return a dict; found {type(evidence).__name__}.")
    first = check_seconds(as_float(evidence.get("first_call_s")), f"{what}: first_call_s")
    steady = _steady_list(evidence.get("steady_s"), steady_calls, what)
    check_timings_of_watched_calls(jit, first, steady, tuple(evidence.get("shape") or (16, 16)), what)


def check_audit_is_measured(run_audit, steady_calls=5):
    """run_audit(a new folder, steady_calls, a watched jit): the report it wrote says what the calls were, as the
    jit saw them: "synchronized": true only when each timing covers its call until its result was ready (the first
    call cold), the shape and dtype of the first call, the shapes called, and a trace count read before
    jax.make_jaxpr ("read_before_make_jaxpr": true)."""
    jit = WatchedJit()
    what = f"report.json from run_audit(folder, {steady_calls}, jit)"
    with tempfile.TemporaryDirectory(prefix="perfaudit-selfcheck-") as folder:
        run_audit(folder, steady_calls, jit)
        path = Path(folder) / "report.json"
        if not path.is_file():
            fail(f"run_audit(folder, {steady_calls}, jit) wrote no report.json into the folder it was given.")
        report = json.loads(path.read_text())
    timings, tracing = report.get("timings") or {}, report.get("tracing") or {}
    first = check_seconds(as_float(timings.get("first_call_s")), f"{what}: timings.first_call_s")
    steady = _steady_list(timings.get("steady_s"), steady_calls, what)
    shape = tuple(timings.get("shape") or ())
    claim = "it says \"synchronized\": true, but " if timings.get("synchronized") is True else ""
    timed = check_timings_of_watched_calls(jit, first, steady, shape, what, claim)
    calls = [call for call in jit.calls if call.function == timed.function]
    if timings.get("dtype") != timed.dtype:
        fail(f"{what}: timings.dtype is {timings.get('dtype')!r}, but the calls timed were at {timed.dtype}: "
             "take it from the input (str(x.dtype)), not typed in.")
    called = sorted({call.shape for call in calls})
    said = sorted(tuple(s) for s in tracing.get("shapes") or [] if isinstance(s, (list, tuple)))
    if said != called:
        fail(f"{what}: tracing.shapes is {tracing.get('shapes')!r}, but the function was called at "
             f"{[list(s) for s in called]}: take the shapes from the inputs you called it with (list(x.shape)).")
    before_jaxpr = jit.jaxpr_traces[timed.function]
    if before_jaxpr and tracing.get("read_before_make_jaxpr") is True and \
            tracing.get("trace_count") != before_jaxpr[0]:
        fail(f"{what}: it says \"read_before_make_jaxpr\": true, but trace_count is {tracing.get('trace_count')!r} "
             f"and the function had traced {before_jaxpr[0]} times when jax.make_jaxpr began: read the counter "
             "after the last call and before jax.make_jaxpr.")


STAGE_CALLS = {"trace": "jitted.trace(x)", "lower": "traced.lower()", "compile": "lowered.compile()"}


FIRST_RUN_HOLD_S = (0.04, 0.06)  # the first run's hold: a later run timed as the first falls short by most of it


class _Stages:
    """jitted.trace(x).lower().compile(), calls of jitted itself and the compiled program's runs, each noted (stage,
    start, end) on one clock as it happens, so a timing can be set against the stages around it. Each run's result
    is held before it is let be ready (watched.Call), the first run's longest: `runs` notes when each was."""

    def __init__(self, rng):
        self.events, self.runs, self.rng = [], [], rng

    def timed(self, stage, call, *args, **kwargs):
        started = time.perf_counter()
        out = call(*args, **kwargs)
        self.events.append((stage, started, time.perf_counter()))
        return out

    def run(self, compiled, *args, **kwargs):
        import jax  # JAX on first use: see perfaudit/checks/__init__.py

        run = Call((), "", time.perf_counter(), float(self.rng.uniform(*(HOLD_S if self.runs else FIRST_RUN_HOLD_S))))
        out = self.timed("run", compiled, *args, **kwargs)
        self.runs.append(run)
        if not isinstance(out, jax.Array):
            run.released = run.arrived
            return out
        return HeldResult(out, run.wait, run.poll)


class _Watched:
    """An AOT object (jitted, traced, lowered, compiled) whose next step is noted; everything else passes through.
    Calling it is a call of jitted itself ("call") or, once compiled, a run of the program ("run")."""

    def __init__(self, inner, stages, kind="call"):
        self._inner, self._stages, self._kind = inner, stages, kind

    def __getattr__(self, name):
        attribute = getattr(self._inner, name)
        if name not in STAGE_CALLS:
            return attribute
        kind = "run" if name == "compile" else self._kind
        return lambda *a, **k: _Watched(self._stages.timed(name, attribute, *a, **k), self._stages, kind)

    def __call__(self, *args, **kwargs):
        if self._kind == "run":
            return self._stages.run(self._inner, *args, **kwargs)
        return self._stages.timed("call", self._inner, *args, **kwargs)


def _check_runs(found, stages, what):
    """first_run_s covers the compiled program's very first run, waited for; each steady run a later run of its
    own, waited for; no call of jitted itself before the first run (it runs the same program)."""
    events, runs = stages.events, stages.runs
    first_run = next((start for name, start, _ in events if name == "run"), None)
    if first_run is None:
        fail(f"{what} never ran the program it compiled: time compiled(x), the program lowered.compile() "
             "returned, for the first run and each steady run.")
    if any(name == "call" and start < first_run for name, start, _ in events):
        fail(f"{what} called jitted(x) before the compiled program's first run: jitted(x) runs that same program, "
             "so the run you timed as the first was a warm first run. Time compiled(x) first, before anything "
             "else runs it.")
    if runs[0].span_s is None:
        fail(f"{what}: the compiled program's first run was never waited for, so first_run_s stopped at the "
             "hand-off: call block_until_ready() on its result before you stop the clock.")
    if found["first_run_s"] + CLOCK_SLACK_S < runs[0].span_s:
        fail(f"{what}: first_run_s ({found['first_run_s'] * 1e3:.3f} ms) is shorter than the compiled program's "
             f"first run took until its result was ready ({runs[0].span_s * 1e3:.3f} ms): a warm first run, a "
             "later run timed after an untimed one, or a clock stopped before block_until_ready(). Time the "
             "program's very first run, from just before compiled(x) until block_until_ready() returns.")
    later = [run.span_s for run in runs[1:] if run.span_s is not None]
    if len(later) < len(found["steady_run_s"]):
        fail(f"{what}: steady_run_s holds {len(found['steady_run_s'])} timings, but {len(later)} later runs had "
             "their result waited for: steady runs not waited for time the hand-off, not the run. Call "
             "block_until_ready() on each run's result before you stop its clock.")
    if not _covers(found["steady_run_s"], later):
        fail(f"{what}: a steady run's timing is shorter than its run took until its result was ready: time each "
             "steady run from just before compiled(x) until block_until_ready() returns.")


def check_stages_are_their_own(time_stages, steady_runs=5):
    """time_stages on a new jitted function whose trace, lower, compile and runs are noted as they happen: each of
    trace_s, lower_s and compile_s covers its stage and fits in the time between the stages before and after it,
    so no timing holds another stage too (compile timed inside lower_s, one timing reused for two stages)."""
    # JAX on first use: see perfaudit/checks/__init__.py
    import jax
    import jax.numpy as jnp

    def audited(v):
        return jnp.tanh(v @ v)

    audited.__name__ = audited.__qualname__ = f"perfaudit_selfcheck_{os.getpid()}_{next(_names)}"  # never cached
    stages = _Stages(np.random.default_rng())
    x = device_matrix(np.eye(16))
    started = time.perf_counter()
    found = time_stages(_Watched(jax.jit(audited), stages), x, steady_runs)
    ended = time.perf_counter()
    what = f"time_stages(jitted, x, {steady_runs})"
    found = check_stages(found, steady_runs, what)
    events = stages.events
    first_trace = next((start for name, start, _ in events if name == "trace"), None)
    if first_trace is not None and any(name == "call" and start < first_trace for name, start, _ in events):
        fail(f"{what} called jitted(x) before jitted.trace(x): that call traced and compiled the function, so the "
             "stages timed after it came from JAX's caches (trace_s {trace_s}, lower_s {lower_s}, compile_s "
             "{compile_s}), not from tracing, lowering and compiling. Start with jitted.trace(x), on the function "
             "as it was handed in, and call nothing before it.".format(
                 **{f"{stage}_s": f"{found[f'{stage}_s'] * 1e3:.3f} ms" for stage in STAGE_CALLS}))
    for stage, words in STAGE_CALLS.items():
        seconds = found[f"{stage}_s"]
        spans, gaps = [], []
        for i, (name, start, end) in enumerate(events):
            if name == stage:
                spans.append(end - start)
                gaps.append((events[i + 1][1] if i + 1 < len(events) else ended)
                            - (events[i - 1][2] if i else started))
        if not spans:
            fail(f"{what} never called {words} on the function it was given: build the chain from it, "
                 "jitted.trace(x).lower().compile(), and time each step.")
        if seconds + CLOCK_SLACK_S < min(spans):
            fail(f"{what}: {stage}_s is {seconds * 1e3:.3f} ms, shorter than {words} took: time it alone, from just "
                 "before the call until it returns.")
        if seconds > max(gaps) + CLOCK_SLACK_S:
            fail(f"{what}: {stage}_s is {seconds * 1e3:.3f} ms, longer than {words} and the time around it until "
                 "the next stage began: it timed another stage too (compile inside the lower timing, or one timing "
                 f"reused for two stages). Give each stage a clock of its own: start it just before {words} and "
                 "stop it as soon as that returns. (Or milliseconds instead of seconds?)")
    _check_runs(found, stages, what)
