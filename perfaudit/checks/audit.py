"""Notebook 5's audit of a handed-out training loop (perfaudit/handout.py): the trace counter, the findings, the
fixed loop's values and traces, the speed-up. Each check runs the student's functions on data it makes now; a
hidden test runs the same checks on data the grader makes, with the grader's own clock
(perfaudit/autograde/evidence/audit_evidence.py)."""

import collections
import math
import time

import numpy as np

from perfaudit import handout
from perfaudit.checks.failure import fail
from perfaudit.checks.held import SlowFunction
from perfaudit.checks.outputs import device_matrix
from perfaudit.checks.recorded import RecordingJit
from perfaudit.checks.timing import as_float, check_seconds

SPEEDUP_MIN = 2.0  # the fixed loop against the handed-out one, per loop: compiles per step against one per loop
# float32 against the float64 reference over a few steps of SGD: about 1e-6 of the values here; a loop that drops
# a row, a step or the padding's mask misses by 1e-2 or more
VALUE_TOLERANCE = 1e-4
CLOCK_SLACK_S = 50e-6  # one process, one clock: rounding only
MIN_EVIDENCE_CHARS = 20  # a finding's evidence, in words: what was measured and what it showed


def weights(dtype=np.float32):
    """The starting weights every loop of the notebook starts from: zeros."""
    return np.zeros(handout.FEATURES, dtype=dtype)


def as_result(out, what):
    """(w, losses) as float64 NumPy, from what a training loop returned."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        fail(f"{what} should return (w, losses), the weights and the list of the loss at each step; found "
             f"{type(out).__name__}.")
    try:
        return np.asarray(out[0], dtype=np.float64), np.asarray([np.asarray(v, np.float64) for v in out[1]])
    except (TypeError, ValueError):
        fail(f"{what} should return (w, losses) as arrays and a list of numbers; found something else.")


def check_trains_like_reference(train, batches, lr0, what, start=None):
    """train(start, batches, lr0) computes what the handed-out loop computes from start (zeros where not given:
    handout.reference_train, in NumPy); where it does not, the message says what the numbers show
    (_why_values_differ)."""
    start = weights() if start is None else np.asarray(start, np.float32)
    w, losses = as_result(train(start.copy(), batches, lr0), what)
    expected_w, expected_losses = handout.reference_train(start.astype(np.float64), batches, lr0)
    if w.shape != expected_w.shape or losses.shape != (len(batches),):
        fail(f"{what} should return w of shape {expected_w.shape} and one loss per batch ({len(batches)}); found "
             f"shapes {w.shape} and {losses.shape}.")
    if start.any() and not agrees(w, expected_w) and agrees(w, handout.reference_train(weights(np.float64),
                                                                                       batches, lr0)[0]):
        fail(f"{what}, given starting weights other than zeros, returned the weights the handed-out loop ends with "
             "from zeros: it must start from its argument w, as the handed-out loop does.")
    expected_losses = np.asarray(expected_losses)
    for name, found, expected in (("the loss", losses, expected_losses), ("w", w, expected_w)):
        wrong = _off(found, expected)
        if wrong.any():
            i = int(np.argmax(wrong))
            fail(f"{what}: {name} differs from the handed-out loop's: {expected[i]:.6f} expected at [{i}], found "
                 f"{found[i]:.6f}. {_why_values_differ(losses, expected_losses, batches)}")


def agrees(found, expected):
    """Whether found is expected, to VALUE_TOLERANCE, everywhere."""
    found, expected = np.asarray(found), np.asarray(expected)
    return found.shape == expected.shape and not _off(found, expected).any()


def _off(found, expected):
    """Where found misses expected by more than VALUE_TOLERANCE (relative), or is not finite."""
    return ~np.isfinite(found) | (np.abs(found - expected) / (1 + np.abs(expected)) > VALUE_TOLERANCE)


def _why_values_differ(losses, expected_losses, batches):
    """What the numbers say went wrong: on batches of one size nothing is padded; on several, a loss that is the
    batch's sum of squares over more rows than the batch has is a mean that counts padded rows, and a right loss
    followed by a wrong one is an update that does."""
    if len({len(y) for _, y in batches}) == 1:
        return ("These batches all have one size, so nothing needs padding: each step must use its own learning "
                "rate, handout.learning_rate(lr0, i), and the handed-out update, w - lr * x.T @ err / len(y).")
    wrong = _off(losses, expected_losses)
    if wrong.any():
        i = int(np.argmax(wrong))
        rows = len(batches[i][1])
        if 0 < losses[i] < expected_losses[i]:
            counted = rows * expected_losses[i] / losses[i]
            if abs(counted - round(counted)) < 0.05 * max(1.0, counted - rows):
                return (f"At step {i} the loss is the batch's sum of squared errors over {round(counted)} rows, but "
                        f"the batch has {rows}: the mean counts the padded rows. Divide by the batch's own number "
                        "of rows (pass it to the step as a traced argument) and keep each padded row's error at "
                        "zero (jnp.where(jnp.arange(size) < n, err, 0.0)).")
        if i > 0:
            return (f"The losses agree up to step {i - 1} and differ from step {i} on: the update of w is not the "
                    "handed-out one on padded batches. Divide x.T @ err by the batch's own number of rows, not the "
                    "padded size, and keep each padded row's error at zero.")
    else:
        return ("Every loss agrees but w does not: the last update is not the handed-out one. Divide x.T @ err by "
                "the batch's own number of rows, not the padded size, and keep each padded row's error at zero.")
    return ("These batches come in several sizes (the self-check tries batches of one size first: if those agreed, "
            "the padding is what changes the result). A padded row must count for nothing: its error zero, and "
            "every mean over the batch's own rows.")


LOOP_HOLD_S = (0.010, 0.040)  # how long each array a probed loop returns is held once waited for
LOOP_CALL_S = (0.005, 0.030)  # the probed loop's call itself


def check_time_loop(time_loop, rng=None):
    """time_loop(run, data) starts the clock before run(data) and stops it only once every array run returned is
    ready: run stands in for a training loop (held.SlowFunction with one result per array), returns (w, [loss at
    each step]), and each array is held on its own, so a clock that waits for one of them (out[0], the last loss)
    stops before the others are ready. In the grader the holds are the grader's, never told to the kernel."""
    rng = rng or np.random.default_rng()
    steps = int(rng.integers(2, 5))
    run = SlowFunction([float(rng.uniform(*LOOP_HOLD_S))], call_delays_s=[float(rng.uniform(*LOOP_CALL_S))],
                       leaves=1 + steps)
    started = time.perf_counter()
    seconds = time_loop(run, device_matrix(np.ones((steps, handout.FEATURES))))
    outer = time.perf_counter() - started
    if len(run.arrived_at) != 1:
        fail(f"time_loop(run, data) called run {len(run.arrived_at)} times to time one run: call run(data) exactly "
             "once, between starting the clock and waiting for what it returns.")
    seconds = check_seconds(as_float(seconds), "time_loop's result", outer)
    waited = run.waited(0)
    if waited is None:
        fail(f"time_loop waited for {len(run.released_at)} of the {run.leaves} arrays run(data) returned (w and one "
             f"loss per step, {steps} steps): the clock stopped while the others could still be computing. Wait "
             "for all of them: jax.block_until_ready(out) waits for every array in a tuple or list.")
    if seconds + CLOCK_SLACK_S < waited:
        fail(f"time_loop measured {seconds * 1e3:.3f} ms, but from the call of run(data) until the last array it "
             f"returned was ready took {waited * 1e3:.3f} ms: start the clock just before run(data) and stop it only "
             "after jax.block_until_ready(out) returns.")


def check_fixed_train(fixed_train, rng=None):
    """fixed_train gives the handed-out loop's w and losses, on batches of one size and of several sizes, from
    starting weights drawn now (a loop that starts from zeros whatever it is given misses them)."""
    rng = rng or np.random.default_rng()
    for variant in ("B", "A"):  # one size, then several
        batches, lr0 = handout.data_for(variant, rng, steps=int(rng.integers(4, 9)))
        sizes = sorted({len(y) for _, y in batches})
        check_trains_like_reference(fixed_train, batches, lr0, f"fixed_train on batches of sizes {sizes}",
                                    start=rng.normal(0.0, 0.5, handout.FEATURES))


COUNT_HOW = ("Pass train a jit that counts: jit=lambda fn, **options: jax.jit(<fn with a counter>, **options), with "
             "functools.wraps(fn) on the counting function, and read the counter once the loop's results are ready.")


def check_counted(count_traces, train, batches, lr0, expected, what, misread=None, more=None):
    """count_traces(train, w, batches, lr0) is `expected`. misread: {a count a known mistake gives: what it is},
    so that a wrong count is named for its mistake where one explains it; more: what a count above `expected` that
    misread does not name is."""
    try:
        found = count_traces(train, weights(), batches, lr0)
    except TypeError as error:
        if "static_arg" not in str(error):
            raise
        fail(f"count_traces({what}) failed: {error}. The loop calls jit(step, static_argnums=...) or "
             "jit(step, static_argnames=...), as a handed-out loop may: count_traces's jit must take those options "
             f"and hand them to jax.jit. {COUNT_HOW}")
    except ValueError as error:
        if "static_argnames" not in str(error):
            raise
        fail(f"count_traces({what}) failed: jax.jit refused the loop's static_argnames ({str(error)[:120]}): the "
             "function your jit hands to jax.jit takes no parameter of that name. functools.wraps(fn) gives it "
             f"fn's signature. {COUNT_HOW}")
    if type(found) is not int:
        fail(f"count_traces should return the number of traces as an int; found {type(found).__name__}.")
    if found != expected:
        mistake = (misread or {}).get(found) or (more if found > expected else None)
        fail(f"count_traces({what}) is {found}, but that loop traces its step {expected} time(s) over these batches"
             + (f": {found} is {mistake}" if mistake else "") + f". {COUNT_HOW}")


CALLS_COUNTED = ("the number of steps, one call of the step each: a counter outside the function jax.jit traces (or "
                 "around the call) counts calls, not traces; JAX runs the traced function's Python only when it "
                 "traces")


COMPILES_COUNTED = ("more than its traces: a count of what JAX compiled? This loop's jax.numpy calls outside its "
                    "jitted step (err ** 2, jnp.mean) compile programs of their own too, but only the step traces. "
                    "Count in the function jax.jit traces: JAX runs its Python once per trace")


def check_count_traces(count_traces, train_once, staged=(), rng=None, eager=None):
    """count_traces counts the traces of the loop it is given, not its steps: a loop whose step sees one shape
    traces once; at three sizes, three times. staged: (train_static_argnums, train_static_argnames), the loop
    handout.train_staged with its stage given to jit each way, made where count_traces runs: each traces once per
    stage, so a counter that drops jit's options (or, for static_argnames, the signature) counts once. eager:
    handout.train_eager_loss, made where count_traces runs: it traces once at one size, but compiles jax.numpy calls
    outside its step as well, so a counter of compiles counts more."""
    rng = rng or np.random.default_rng()
    steps = int(rng.integers(5, 9))
    sizes = handout.ragged_sizes(rng, steps, 3)
    batches = handout.make_batches(rng, [sizes[0]] * steps)
    check_counted(count_traces, train_once, batches, 0.1, 1, f"a loop over {steps} batches of one size",
                  {steps: CALLS_COUNTED})
    if eager is not None:
        check_counted(count_traces, eager, batches, 0.1, 1, f"a loop over {steps} batches of one size whose loss is "
                      "computed outside its jitted step", {steps: CALLS_COUNTED}, COMPILES_COUNTED)
    batches = handout.make_batches(rng, sizes)
    check_counted(count_traces, train_once, batches, 0.1, 3, f"a loop over {steps} batches of 3 sizes",
                  {steps: CALLS_COUNTED})
    batches = handout.make_batches(rng, [sizes[0]] * steps)
    for train_staged, option in zip(staged, ("static_argnums=4", "static_argnames='stage'")):
        dropped = ("the count with the static stage traced instead: count_traces's jit did not hand jax.jit the "
                   f"option the loop gave it ({option})"
                   + (", or jax.jit could not find `stage` in the signature of the function it got "
                      "(functools.wraps(fn) keeps it)" if "names" in option else ""))
        check_counted(count_traces, train_staged, batches, 0.1, handout.staged_traces(batches),
                      f"a loop over {steps} batches of one size whose jit gets {option}, for a stage that changes "
                      f"every {handout.STAGE_STEPS} steps", {1: dropped, steps: CALLS_COUNTED})


def ragged_data(rng, steps=handout.STEPS, distinct=handout.DISTINCT_SIZES):
    """(batches, lr0, sizes): batches of `distinct` sizes, new values, as variant A's author trains on."""
    sizes = handout.ragged_sizes(rng, steps, distinct)
    return handout.make_batches(rng, sizes), float(rng.uniform(0.05, 0.2)), sorted(set(sizes))


def _retrace_advice(changes):
    """What to change, from what changed in the cache key between a fixed loop's traces (RecordingJit.changes)."""
    advice = []
    if any("(static)" in change for change in changes):
        advice.append("a value that changes from step to step is static (static_argnums or static_argnames, or a "
                      "Python value the step reads from outside): pass it as a traced argument instead")
    if any("[" in change and "(static)" not in change for change in changes):
        advice.append("the step sees each batch at its own shape: pad every batch to one size (with NumPy, or "
                      "inside the step) and mask the padded rows")
    if any("weak type" in change for change in changes):
        advice.append("an argument arrives as a Python number at some steps and as an array at others: give it the "
                      "same type at every step")
    return "; ".join(advice) or ("nothing in the arguments changed between its traces: jit was called again for "
                                 "each step (jit(step) inside the loop?), and each function it makes traces anew "
                                 "here and under the graders, who count what their jit traces (JAX's own jit may "
                                 "find a repeated jit of the very same function in its cache). Part B asks for one "
                                 "function made with jit: make the step once, before the loop")


def check_fixed_traces(count_traces, fixed_train, rng=None):
    """fixed_train traces its step once per loop on batches of several sizes, counted by the check's own jit
    (recorded.RecordingJit), which names what changed in the cache key where it traced more; then count_traces
    must count that loop's traces as the check did."""
    import jax  # JAX on first use: see perfaudit/checks/__init__.py

    rng = rng or np.random.default_rng()
    batches, lr0, sizes = ragged_data(rng)
    jit = RecordingJit()
    jax.block_until_ready(fixed_train(weights(), batches, lr0, jit=jit))
    if jit.count == 0:
        fail("fixed_train never traced a function with the jit it was given: make its step with jit(step), using "
             "the jit argument, so that count_traces (and the graders) can count its traces.")
    if jit.count != 1:
        changes = jit.changes()
        fail(f"fixed_train traced {jit.count} times over {len(batches)} batches of sizes {sizes}, counted by the "
             "check's own jit: it should trace once per loop. What changed between its traces: "
             f"{'; '.join(changes) or 'nothing in its arguments'}. So: {_retrace_advice(changes)}.")
    check_counted(count_traces, fixed_train, batches, lr0, 1,
                  f"fixed_train over {len(batches)} batches of sizes {sizes}, which the check counted 1 trace of",
                  {len(batches): CALLS_COUNTED})


def check_fixed_counted_once(count_traces, fixed_train, rng=None):
    """fixed_train traces once per loop on batches of several sizes, by count_traces (which a test checked on
    loops of its own first): what a grader can count without a jit of its own in the student's process."""
    rng = rng or np.random.default_rng()
    batches, lr0, sizes = ragged_data(rng)
    found = count_traces(fixed_train, weights(), batches, lr0)
    if found != 1:
        fail(f"count_traces counted {found!r:.20} traces of fixed_train over {len(batches)} batches of sizes {sizes} "
             "(count_traces counted the test's own loops right): it should trace once per loop. Run the "
             "notebook's self-check of fixed_train: it says what changed between the traces.")


COMPILED_SIZES = 6  # batch sizes, all different, in the loop whose compiles the check counts


def check_fixed_compiles(fixed_train, rng=None):
    """Nothing outside fixed_train's jitted step compiles at each new batch size: over a loop of COMPILED_SIZES
    batches of as many sizes, after jax.clear_caches(), no program but those the jit it was given made is compiled
    COMPILED_SIZES - 1 times or more (JAX's compile events, jaxlog.compiled). A jax.numpy call on a batch outside
    the step (jnp.pad, jnp.zeros(...).at[...]) compiles at each new shape, and dispatches at every step."""
    import jax  # JAX on first use: see perfaudit/checks/__init__.py

    from perfaudit import jaxlog  # JAX's own account, which imports JAX

    rng = rng or np.random.default_rng()
    batches, lr0, sizes = ragged_data(rng, COMPILED_SIZES, COMPILED_SIZES)
    jit = RecordingJit()
    jax.clear_caches()  # every program this loop needs is compiled anew, whatever ran before
    with jaxlog.compiled() as names:
        jax.block_until_ready(fixed_train(weights(), batches, lr0, jit=jit))
    own = {f"jit({name})" for name, _ in jit.traces}
    counts = collections.Counter(name for name in names if name not in own)
    per_size = sorted(name for name, n in counts.items() if n >= COMPILED_SIZES - 1)
    if per_size:
        shown = ", ".join(f"{name} {counts[name]} times" for name in per_size)
        fail(f"fixed_train compiled {shown} over one loop of {COMPILED_SIZES} batches of sizes {sizes} (JAX's "
             "compile events, counted by the check after jax.clear_caches()), besides its jitted step: a "
             "jax.numpy call outside the step, compiled again at each new batch size and dispatched at every "
             "step. Pad with NumPy (np.zeros, np.pad) before the step, or inside the step; keep every jnp call "
             "on the batches inside the jitted step.")


# What notebook 5 measures of the handed-out loop, by name: its traces over the notebook's batches and over as many
# batches of one size, what compiled outside its jitted step (every cache cleared first), and how long after the
# author's benchmark stopped its clock the results of a loop with pending work were ready, against that work alone.
MEASURED = {"original_traces": int, "one_size_traces": int, "eager_compiles": list, "missed_s": float,
            "pending_s": float}
def _measured(measured):
    """measured as the notebook's cell makes it, each value of its type."""
    if not isinstance(measured, dict):
        fail(f"measured should be the dict the notebook's cell makes ({', '.join(MEASURED)}); found "
             f"{type(measured).__name__}.")
    for name, kind in MEASURED.items():
        value = as_float(measured.get(name))
        if kind is float and type(value) is int:
            value = float(value)
        if type(value) is not kind:
            fail(f"measured[{name!r}] should be {'an' if kind is int else 'a'} {kind.__name__}; found "
                 f"{type(value).__name__} {value!r:.40}. Run the notebook's measuring cells again, top to bottom.")
    return {name: as_float(measured[name]) for name in MEASURED}


def backed_by(measured):
    """{problem: what backs it, in words} for each problem of handout.PROBLEMS the measurements show, and
    {problem: what they show instead} for the others."""
    m = _measured(measured)
    original, one, eager = m["original_traces"], m["one_size_traces"], m["eager_compiles"]
    missed, pending = m["missed_s"] * 1e3, m["pending_s"] * 1e3
    shown = {
        "retrace-new-shape": (original > one, f"the loop traced {original} times over the notebook's batches and {one} "
                              "over as many batches of one size"),
        "retrace-static-argument": (one > 1, f"over batches of one size the loop traced {one} time(s)"),
        "jnp-outside-jit": (bool(eager),
                            f"compiled outside the jitted step: {', '.join(map(str, eager)) or 'nothing'}"),
        # missed_s is 0.0 exactly when the results were ready as the benchmark's clock stopped (pending.py)
        "timed-before-ready": (m["missed_s"] > 0,
                               f"the results were ready {missed:.1f} ms after the benchmark's clock stopped, with "
                               f"{pending:.1f} ms of work pending when the loop returned" if m["missed_s"] > 0 else
                               "the results were ready when the benchmark's clock stopped"),
    }
    return ({p: words for p, (backed, words) in shown.items() if backed},
            {p: words for p, (backed, words) in shown.items() if not backed})


def check_findings(findings, measured):
    """findings names problems of the course's list, each with its evidence in words, and exactly those the
    measurements back (backed_by): a finding no measurement backs is a wrong cause; one a measurement backs and
    findings leaves out is a problem missed."""
    if not isinstance(findings, dict) or not findings:
        fail("findings should be a dict {problem: the evidence you measured, in a sentence}, its keys from "
             f"handout.PROBLEMS ({', '.join(handout.PROBLEMS)}).")
    unknown = sorted(set(findings) - set(handout.PROBLEMS), key=str)
    if unknown:
        fail(f"findings names {unknown}: use the names of handout.PROBLEMS ({', '.join(handout.PROBLEMS)}).")
    for problem, evidence in findings.items():
        if not isinstance(evidence, str) or len(evidence.strip()) < MIN_EVIDENCE_CHARS:
            fail(f"findings[{problem!r}] should say, in a sentence, what you measured and what it showed (a trace "
                 "count, what compiled outside the step, how long after the benchmark's clock the results were "
                 "ready).")
    backed, not_backed = backed_by(measured)
    unbacked = [p for p in findings if p not in backed]
    if unbacked:
        fail(f"findings names {unbacked[0]!r}, but what you measured does not back it: {not_backed[unbacked[0]]}. "
             "Name only what a measurement above backs; read the table above for what shows each problem. (Those "
             "measurements are made with your count_traces and time_loop: if their self-checks failed, mend them "
             "first.)")
    missed = [p for p in backed if p not in findings]
    if missed:
        fail(f"what you measured backs {missed[0]!r} ({backed[missed[0]]}), but findings leaves it out.")


def check_speedup(speedup, original_s, fixed_s, minimum=SPEEDUP_MIN):
    """speedup is the median of the handed-out loop's synchronized timings over the fixed loop's, and at least
    `minimum`."""
    for name, timings in (("original_s", original_s), ("fixed_s", fixed_s)):
        if not isinstance(timings, (list, tuple)) or len(timings) < 3:
            fail(f"{name} should be a list of at least 3 timings in seconds; found {timings!r:.60}.")
        for i, seconds in enumerate(timings):
            check_seconds(as_float(seconds), f"{name}[{i}]")
    expected = float(np.median(original_s) / np.median(fixed_s))
    speedup = as_float(speedup)
    if not isinstance(speedup, float) or not math.isclose(speedup, expected, rel_tol=1e-6):
        fail(f"speedup should be median(original_s) / median(fixed_s) = {expected:.3f}; found {speedup!r:.20}.")
    if speedup < minimum:
        fail(f"your timings make the fixed loop {speedup:.2f}x as fast as the handed-out one (medians "
             f"{np.median(original_s) * 1e3:.1f} ms and {np.median(fixed_s) * 1e3:.1f} ms); a loop that no longer "
             f"traces and compiles at every step should be at least {minimum:g}x as fast. The self-check of "
             "fixed_train counts its traces and what it compiles at each new batch size: run it again if fixed_train "
             "changed since. If it passes, look at what else the fixed loop does at every step (a copy to the host, "
             "a print), or at what else ran on the machine while the cell timed both loops, and run the cell again.")
