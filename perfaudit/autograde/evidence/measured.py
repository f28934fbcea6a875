"""Evidence measured during a call, of a function made by the grader's jit (instruments.py), for hidden tests only:
stage 3's gather_evidence and run_audit, and notebook 4's time_stages. The checks a student's copy holds
(perfaudit/checks/) judge the numbers' form; these judge them against the grader's own clock."""

import heapq
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from perfaudit.autograde.evidence import instruments, products
from perfaudit.autograde.evidence.made_up import new_folder
from perfaudit.checks.evidence import check_report_consistent, check_report_schema, check_report_scope, \
    check_returns_what_it_wrote, read_report, artifact_path
from perfaudit.answer_key.reference import reference_jaxpr
from perfaudit.checks.failure import fail
from perfaudit.checks.outputs import check_random_output, device_matrix, random_matrix
from perfaudit.checks.stages import CLOCK_SLACK_S, STAGE_PARTS, STAGE_WORDS, check_stages
from perfaudit.checks.timing import as_float, check_seconds
from perfaudit.checks.traces import check_jaxpr_text, jaxpr_canonical


def grader_jit(rng: np.random.Generator | None = None) -> instruments.GraderJit:
    """The grader's jit (instruments.py) for gather_evidence(steady_calls, jit), run_audit and time_stages."""
    return instruments.GraderJit(rng or np.random.default_rng())


def _steady_timings(steady, steady_calls, what):
    """steady_s as a list: any 1-D sequence of numbers (a list, a tuple, a NumPy array) of the length asked for."""
    if isinstance(steady, np.ndarray) and steady.ndim == 1:
        steady = steady.tolist()
    if not isinstance(steady, (list, tuple)):
        fail(f"{what}: steady_s should be a sequence of {steady_calls} timings in seconds (a list, a tuple or a 1-D "
             f"array); found {type(steady).__name__}.")
    if len(steady) != steady_calls:
        fail(f"{what}: {steady_calls} steady calls were asked for; steady_s holds {len(steady)} timings.")
    return [check_seconds(as_float(s), f"{what}: steady_s[{i}]") for i, s in enumerate(steady)]


def _shape_of(value):
    """A reported shape ([16, 16]) as a tuple of ints, or None when it is not one."""
    if isinstance(value, (list, tuple)) and value and all(type(n) is int for n in value):
        return tuple(value)
    return None


def covers(timings: Sequence[float], spans: Sequence[float], slack_s: float) -> bool:
    """Whether each timing can be of a call of its own that it is no shorter than: the shortest timings against
    the shortest calls (sorted: a student may keep the timings in any order, e.g. sorted for a median)."""
    spans = sorted(spans)[:len(timings)]
    return len(spans) == len(timings) and all(t + slack_s >= s for t, s in zip(sorted(timings), spans))


def fits(timings: Sequence[float], bounds: Sequence[tuple[float, float]], slack_s: float) -> bool:
    """Whether each timing can be of a span of its own, no shorter than its shortest and no longer than its longest
    ([(shortest, longest)]): the shortest timings first, each to the span that closes soonest."""
    bounds, taken = sorted(bounds), 0
    waiting: list[float] = []
    for timing in sorted(timings):
        while taken < len(bounds) and bounds[taken][0] - slack_s <= timing:
            heapq.heappush(waiting, bounds[taken][1])
            taken += 1
        while waiting and waiting[0] + slack_s < timing:
            heapq.heappop(waiting)
        if not waiting:
            return False
        heapq.heappop(waiting)
    return True


def windows(events: Sequence[tuple[float, float | None]], start: float, end: float) -> list[float]:
    """[(arrival, release)] of a function's calls (or a program's runs and stages) in order, on the grader's clock,
    release None for one never waited for: for each, the longest a timing of it can be, from the release of the
    one before (the arrival, if it was never waited for; `start` for the first) until the arrival of the next
    (`end` for the last). A clock around one call cannot also hold another call's time."""
    longest = []
    for i, (arrival, _) in enumerate(events):
        previous = events[i - 1] if i else (start, start)
        before = previous[1] if previous[1] is not None else previous[0]
        after = end if i + 1 == len(events) else events[i + 1][0]
        longest.append(after - before)
    return longest


def _match_calls(record, first_s, steady, shape, slack_s):
    """([call numbers] the timings are of, None) when they fit the function's calls as the grader timed them, or
    (None, why not) in the student's terms. The first timing is of the first call at `shape`; each steady one of a
    later call of its own at that shape; other calls between them are allowed. slack_s: clock rounding."""
    calls = record.calls
    shape = shape or calls[0].shape
    first = next((i for i, call in enumerate(calls) if call.shape == shape), None)
    if first is None:
        return None, f"the function you timed was never called at the shape the report gives ({list(shape)})."
    if any(stage == "compile" and arrival < calls[first].started for stage, _, arrival, *_ in record.stages):
        return None, ("the function you timed was compiled ahead of the call you timed as its first (lower(x) and "
                      "compile() before it), so that call was warm: time the very first call of a newly jitted "
                      "function, with nothing traced or compiled for it before.")
    if calls[first].span_s is None:
        return None, ("the result of the first call was never waited for, so first_call_s cannot include its "
                      "computation. Call block_until_ready() on each result before stopping the clock.")
    if first_s + slack_s < calls[first].span_s:
        return None, (f"first_call_s ({first_s * 1e3:.3f} ms) is shorter than the first call of the function you "
                      "timed took, from the call until its result was ready: a warm first call (the function called "
                      "before it), or a clock stopped before block_until_ready()? Time the very first call of a newly "
                      "jitted function, from just before the call until block_until_ready() returns.")
    later = [j for j in range(first + 1, len(calls)) if calls[j].shape == shape and calls[j].span_s is not None]
    spans = [calls[j].span_s for j in later]
    if not covers(steady, spans, slack_s):
        never = (" Some results were never waited for: call block_until_ready() on each result before stopping the "
                 "clock." if any(call.span_s is None for call in calls[first + 1:]) else "")
        if len(later) < len(steady):
            return None, (f"steady_s holds {len(steady)} timings, but after its first call the function you timed "
                          f"was called {len(later)} times at {list(shape)} with its result waited for: each steady "
                          "timing covers one later call of its own." + never)
        # The shortest timing that is shorter than every call left to it once the shorter timings took theirs.
        shortest = sorted(spans)
        by_length = sorted(range(len(steady)), key=lambda i: steady[i])
        short = next(i for rank, i in enumerate(by_length) if steady[i] + slack_s < shortest[rank])
        return None, (f"steady_s[{short}] ({steady[short] * 1e3:.3f} ms) is shorter than the call it should time "
                      "took: each steady timing covers one later call of the same function, from just before the "
                      "call until its result is ready." + never)
    # The fewest calls from the first on that the timings fit (more calls only make room): the trace count is then
    # read after the last of them.
    low, high = len(steady), len(later)
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if covers(steady, spans[:middle], slack_s) else (middle + 1, high)
    chosen = sorted(later[:low], key=lambda j: calls[j].span_s)[:len(steady)]
    return [first, *sorted(chosen)], None


def check_measured_evidence(evidence: Any, jit: instruments.GraderJit, steady_calls: int, outer_s: float, what: str,
                            jaxpr_text: str | None = None, started: float | None = None) -> None:
    """Timings, a trace count and a JAXPR taken during the call, of a function made by the grader's `jit`
    (perfaudit/autograde/evidence/instruments.py): as many steady calls as asked, each timing covering the call it is of
    as the grader timed it, all together within the grader's clock around the whole call; the traces that function
    really made; that function computing tanh(x @ x); the JAXPR its own."""
    if not isinstance(evidence, dict):
        fail(f"{what} should be a dict; found {type(evidence).__name__}.")
    first = check_seconds(as_float(evidence.get("first_call_s")), f"{what}: first_call_s")
    steady = _steady_timings(evidence.get("steady_s"), steady_calls, what)
    total = first + sum(steady)
    if total > outer_s:
        fail(f"{what}: the timings add up to {total:.6f} s, more than the {outer_s:.6f} s the whole call took "
             "when the grader timed it: they were not measured during this call. (Milliseconds instead of seconds?)")
    records = sorted((r for r in jit.functions if r.calls), key=lambda r: -len(r.calls))
    if not records:
        fail(f"{what} never called a function made by the jit it was given: make the audited function with "
             "audited = jit(...), using the jit argument, and time its calls.")
    why = None
    for record in records:
        matched, reason = _match_calls(record, first, steady, _shape_of(evidence.get("shape")),
                                       instruments.CLOCK_SLACK_S)
        if matched is not None:
            break
        why = why or reason
    else:
        fail(f"{what}: {why}")
    _check_each_timing_is_of_one_call(record, matched[0], first, steady, what, started, outer_s,
                                      instruments.CLOCK_SLACK_S)
    shapes = {call.shape for call in record.calls}
    last = max(matched[-1], *(next(i for i, c in enumerate(record.calls) if c.shape == s) for s in shapes))
    trace_count = evidence.get("trace_count")
    if type(trace_count) is not int or trace_count not in record.counts_after(last):
        fail(f"{what}: trace_count is {trace_count!r:.40}, but the function you timed was traced another number of "
             "times during this call (jit traces again for every new cache key, and the jit you are given may do "
             "so more often than jax.jit). Count traces with a counter inside the function you jit, and read it "
             "after the last call, before make_jaxpr.")
    _check_first_calls_answered(jit, record, matched[0], what)
    if jaxpr_text is not None:
        shape = _shape_of(evidence.get("shape")) or record.calls[matched[0]].shape
        expected = reference_jaxpr(shape[0]) if len(shape) == 2 and shape[0] == shape[1] else None
        if not isinstance(jaxpr_text, str) or expected is None or \
                jaxpr_canonical(jaxpr_text) != jaxpr_canonical(expected):
            fail(f"{what}: the JAXPR saved should be the one of the function you timed, at the shape of its first "
                 f"call (str(jax.make_jaxpr(audited)(x))); it describes another computation or shape.")


def _check_each_timing_is_of_one_call(record, first_call, first_s, steady, what, started, outer_s, slack):
    """Each timing no longer than its call could have taken on a clock around that call alone (windows): one clock
    around several calls, or a figure padded by a wait outside the timed calls, does not fit."""
    start = -math.inf if started is None else started
    end = math.inf if started is None else started + outer_s
    calls = record.calls
    events = [(c.started, None if c.span_s is None else c.started + c.span_s) for c in calls]
    longest = windows(events, start, end)
    if not fits([first_s], [(calls[first_call].span_s, longest[first_call])], slack):
        fail(f"{what}: first_call_s ({first_s * 1e3:.3f} ms) is longer than the first call could have taken, from "
             "the end of the call before it until the start of the call after it: time that one call alone.")
    later = [(c.span_s, longest[j]) for j, c in enumerate(calls) if j > first_call and c.span_s is not None and
             c.shape == calls[first_call].shape]
    if not fits(steady, later, slack):
        fail(f"{what}: the steady timings do not each fit one call of their own: a timing is longer than its call "
             "could have taken, from the end of the call before it until the start of the call after it. Time "
             "each steady call alone, from just before the call until its result is ready.")


def _check_first_calls_answered(jit, timed, first, what):
    """The grader held each first call as long as the workload's only when its function answered with tanh(A @ A)
    for the grader's matrix (perfaudit/autograde/evidence/instruments.py): the timed function's first call must have
    answered so, and every function whose first call answered so must compute tanh(A @ A) when the grader calls
    it with a matrix of its own. Both are values checked against the grader's own tanh(A @ A)."""
    if not timed.calls[first].gave_workload:
        fail(f"{what}: the first call of the function you timed did not give tanh(x @ x) for the grader's check of "
             "its result: time the workload itself, made with the jit you are given (audited = jit(...)), and "
             "leave that jit as it is.")
    _check_timed_output(timed.function, what)
    for record in jit.functions:
        if record is not timed and any(call.gave_workload for call in record.calls):
            _check_timed_output(record.function, f"{what}: another function made by the jit you were given, whose "
                                                  "first call gave tanh(x @ x) for the grader's check")


def _check_timed_output(function, what, rng=None):
    """The function jit was given computes tanh(A @ A) for a random A chosen now, called by the grader itself."""
    if function is None:
        fail(f"{what}: the jit you were given never reported the function it made: leave that jit as it is.")
    check_random_output(function, rng, what=f"{what}: the function you timed")


def check_gather_evidence(gather_evidence: Callable[..., Any], rng: np.random.Generator | None = None) -> None:
    """gather_evidence(k, jit) with a k chosen now and the grader's jit: measured timings, counted traces, the
    JAXPR of the function timed."""
    rng = rng or np.random.default_rng()
    steady_calls = int(rng.integers(5, 20))
    jit = grader_jit(rng)
    started = time.perf_counter()
    evidence = gather_evidence(steady_calls, jit)
    outer = time.perf_counter() - started
    what = f"gather_evidence({steady_calls}, jit)"
    if not isinstance(evidence, dict):
        fail(f"{what} should return a dict; found {type(evidence).__name__}.")
    check_jaxpr_text(evidence.get("jaxpr_text"))
    check_measured_evidence(evidence, jit, steady_calls, outer, what, jaxpr_text=evidence.get("jaxpr_text"),
                            started=started)


def check_run_audit(run_audit: Callable[..., Any], rng: np.random.Generator | None = None) -> None:
    """run_audit(a new folder, k chosen now, the grader's jit): evidence that passes every stage 3 check,
    measured and counted during the call, and the report it returns is the one it wrote."""
    rng = rng or np.random.default_rng()
    steady_calls = int(rng.integers(5, 20))
    jit = grader_jit(rng)
    folder = new_folder()
    started = time.perf_counter()
    returned = run_audit(folder, steady_calls, jit)
    outer = time.perf_counter() - started
    report = read_report(folder)
    check_report_schema(report)
    check_report_scope(report)
    what = f"report.json from run_audit(folder, {steady_calls}, jit)"
    tracing = report.get("tracing", {})
    check_report_consistent(report, folder, traces=tracing.get("trace_count"))  # the count is judged below
    check_measured_evidence({**report.get("timings", {}), "trace_count": tracing.get("trace_count")}, jit,
                            steady_calls, outer, what, jaxpr_text=artifact_path(folder, report, "jaxpr").read_text(),
                            started=started)
    check_returns_what_it_wrote(returned, folder)


def check_time_stages(time_stages: Callable[..., Any], rng: np.random.Generator | None = None) -> None:
    """time_stages on a new function of the grader's jit, a random matrix and a steady_runs chosen now: every part
    measured during the call; each of trace, lower and compile covering that stage as the grader held it; the first
    run covering the compiled program's very first run, waited for; each steady run covering a later run of its own.
    The grader holds each run of the compiled program and lets its result be ready when it chooses
    (perfaudit/autograde/evidence/instruments.py): a warm run timed as the first, or a run not waited for, does not
    fit."""
    rng = rng or np.random.default_rng()
    n, steady_runs = int(rng.integers(8, 48)), int(rng.integers(5, 20))
    jit = grader_jit(rng)
    a = random_matrix(rng, n)
    x = device_matrix(a)
    expected = products.expected((n, n), str(x.dtype))  # the grader's own chain, made before the student's
    started = time.perf_counter()
    stages = time_stages(jit.new_workload(), x, steady_runs)
    outer_s = time.perf_counter() - started
    what = f"time_stages(jitted, x, {steady_runs})"
    stages = check_stages(stages, steady_runs, what)
    record = jit.functions[0] if jit.functions else None
    # a stage is one JAX did: its prompt carries the fingerprint of what the grader's own chain made
    done = [stage for stage in (record.stages if record else [])
            if stage[4] == expected[stage[0]] and stage[4] != products.NONE]
    others = len(record.stages) - len(done) if record else 0
    first_stage = min((began for _, _, began, *_ in record.stages), default=None) if record else None
    if record and first_stage is not None and any(call.started < first_stage for call in record.calls):
        fail(f"{what} called jitted(x) before jitted.trace(x): that call traced and compiled the function, so the "
             "stages timed after it came from JAX's caches, not from tracing, lowering and compiling. Start with "
             "jitted.trace(x), on the function as it was handed in, and call nothing before it.")
    held = {f"{stage}_s": [span for kind, span, *_ in done if kind == stage] for stage in ("trace", "lower", "compile")}
    for part, spans in held.items():
        if not spans:
            fail(f"{what} never called {STAGE_WORDS[part]} on the function it was given: build the chain from it, "
                 "jitted.trace(x).lower().compile(), and time each step." +
                 (f" ({others} stage(s) were asked for with no product of JAX's stage of x: not counted.)"
                  if others else ""))
        if stages[part] + CLOCK_SLACK_S < spans[0]:  # the function's first: a second chain's comes from caches
            fail(f"{what}: {part} is {stages[part] * 1e3:.3f} ms, shorter than {STAGE_WORDS[part]} took during the "
                 "call: time it alone, from just before it until it returns.")
    runs = record.runs if record else []
    if record and runs and any(call.started < runs[0].started for call in record.calls):
        fail(f"{what} called the jitted function itself before the compiled program's first run, which ran the "
             "program then: time the first run of compiled(x), the program compile() returned, before anything "
             "else runs it.")
    if not runs:
        fail(f"{what} never ran the program it compiled: time compiled(x) for the first run and the steady runs.")
    if runs[0].span_s is None:
        fail(f"{what}: the compiled program's first run was never waited for, so first_run_s cannot include it. "
             "Call block_until_ready() on its result before you stop the clock.")
    if any(run.span_s is not None and not instruments.gave_workload(run.seed, a, run.entries) for run in runs):
        fail(f"{what}: a run of the compiled program did not give tanh(x @ x) for the x it was given (or was no run "
             "of it): run compiled(x), the program compile() returned, on x itself.")
    if stages["first_run_s"] + CLOCK_SLACK_S < runs[0].span_s:
        fail(f"{what}: first_run_s ({stages['first_run_s'] * 1e3:.3f} ms) is shorter than the compiled program's "
             "first run took: a warm first run? Was it run before the run you timed? Time its very first run, from "
             "just before compiled(x) until block_until_ready() returns, and nothing before it.")
    later = [run.span_s for run in runs[1:] if run.span_s is not None]
    if not covers(stages["steady_run_s"], later, CLOCK_SLACK_S):
        fail(f"{what}: the steady runs do not each cover a later run of the compiled program of their own, waited "
             f"for ({len(later)} later runs were waited for): time each steady run from just before compiled(x) "
             "until block_until_ready() returns.")
    total = sum(stages[part] for part in STAGE_PARTS) + sum(stages["steady_run_s"])
    if total > outer_s + CLOCK_SLACK_S:
        fail(f"{what}: the parts add up to {total:.6f} s, more than the {outer_s:.6f} s the whole call "
             "took: they were not all measured during this call. (Milliseconds instead of seconds?)")
    _check_each_part_is_its_own(done, runs, stages, started, outer_s, what)


def _check_each_part_is_its_own(stages_done, runs, stages, started, outer_s, what):
    """Each part no longer than its stage or run could have taken on a clock around it alone: from the release of
    the event before it (a lower's own trace, which jitted.lower(x) makes first, counted in) until the arrival of the
    next (measured.windows). One timing given to several stages, or padded by a wait outside the timed parts, does
    not fit."""
    events = sorted([(arrival, release, kind) for kind, _, arrival, release, _ in stages_done] +
                    [(run.started, None if run.span_s is None else run.started + run.span_s, "run") for run in runs])
    timed = [(arrival, release) for arrival, release, _ in events]
    longest = windows(timed, started, started + outer_s)
    for i, (_, _, kind) in enumerate(events):
        if kind == "lower" and i > 0 and events[i - 1][2] == "trace":  # jitted.lower(x): its trace, then the lowering
            longest[i] = windows(timed[:i - 1] + timed[i:], started, started + outer_s)[i - 1]
    bounds = {kind: [(release - arrival, longest[i]) for i, (arrival, release, done) in enumerate(events)
                     if done == kind and release is not None] for kind in ("trace", "lower", "compile", "run")}
    for part in ("trace_s", "lower_s", "compile_s"):
        if not fits([stages[part]], bounds[part[:-2]][:1], CLOCK_SLACK_S):
            fail(f"{what}: {part} ({stages[part] * 1e3:.3f} ms) is longer than {STAGE_WORDS[part]} could have taken "
                 "on a clock around it alone: time each stage on its own, from just before it until it returns.")
    runs = bounds["run"]
    if not fits([stages["first_run_s"]], runs[:1], CLOCK_SLACK_S) or \
            not fits(stages["steady_run_s"], runs[1:], CLOCK_SLACK_S):
        fail(f"{what}: a run's timing is longer than that run could have taken on a clock around it alone: time "
             "each run of the compiled program on its own, from just before compiled(x) until its result is ready.")
