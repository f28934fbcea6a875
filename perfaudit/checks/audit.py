"""Notebook 5's audit of a handed-out training loop (perfaudit/handout.py): the trace counter, the findings, the
fixed loop's values and traces, the speed-up. Each check runs the student's functions on data it makes now; a
hidden test runs the same checks on data the grader makes, with the grader's own clock
(perfaudit/autograde/evidence/audit_evidence.py)."""

import math

import numpy as np

from perfaudit import handout
from perfaudit.checks.failure import fail
from perfaudit.checks.timing import as_float, check_seconds

SPEEDUP_MIN = 2.0  # the fixed loop against the handed-out one, per loop: compiles per step against one per loop
# float32 against the float64 reference over a few steps of SGD: about 1e-6 of the values here; a loop that drops
# a row, a step or the padding's mask misses by 1e-2 or more
VALUE_TOLERANCE = 1e-4
MIN_EVIDENCE_CHARS = 20  # a finding's evidence, in words: what was measured and what it showed


def weights(dtype=np.float32):
    """The starting weights every loop of the notebook starts from: zeros."""
    return np.zeros(handout.FEATURES, dtype=dtype)


def _as_result(out, what):
    """(w, losses) as float64 NumPy, from what a training loop returned."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        fail(f"{what} should return (w, losses), the weights and the list of the loss at each step; found "
             f"{type(out).__name__}.")
    try:
        return np.asarray(out[0], dtype=np.float64), np.asarray([np.asarray(v, np.float64) for v in out[1]])
    except (TypeError, ValueError):
        fail(f"{what} should return (w, losses) as arrays and a list of numbers; found something else.")


def check_trains_like_reference(train, batches, lr0, what):
    """train(w, batches, lr0) computes what the handed-out loop computes (handout.reference_train, in NumPy)."""
    w, losses = _as_result(train(weights(), batches, lr0), what)
    expected_w, expected_losses = handout.reference_train(weights(np.float64), batches, lr0)
    if w.shape != expected_w.shape or losses.shape != (len(batches),):
        fail(f"{what} should return w of shape {expected_w.shape} and one loss per batch ({len(batches)}); found "
             f"shapes {w.shape} and {losses.shape}.")
    for name, found, expected in (("the loss", losses, np.asarray(expected_losses)), ("w", w, expected_w)):
        error = np.abs(found - expected) / (1 + np.abs(expected))
        if not np.all(np.isfinite(found)) or error.max() > VALUE_TOLERANCE:
            i = int(np.nanargmax(np.where(np.isfinite(error), error, np.inf)))
            fail(f"{what}: {name} differs from the handed-out loop's: {expected[i]:.6f} expected at [{i}], found "
                 f"{found[i]:.6f}. The fix must compute the same thing: a padded row must count for nothing, and "
                 "each step must use its own learning rate.")


def check_fixed_train(fixed_train, rng=None):
    """fixed_train gives the handed-out loop's w and losses, on batches of one size and of several sizes."""
    rng = rng or np.random.default_rng()
    for variant in ("B", "A"):  # one size, then several
        batches, lr0 = handout.data_for(variant, rng, steps=int(rng.integers(4, 9)))
        sizes = sorted({len(y) for _, y in batches})
        check_trains_like_reference(fixed_train, batches, lr0, f"fixed_train on batches of sizes {sizes}")


def check_counted(count_traces, train, batches, lr0, expected, what):
    """count_traces(train, w, batches, lr0) is `expected`."""
    found = count_traces(train, weights(), batches, lr0)
    if type(found) is not int:
        fail(f"count_traces should return the number of traces as an int; found {type(found).__name__}.")
    if found != expected:
        fail(f"count_traces({what}) is {found}, but that loop traces its step {expected} time(s) over these batches. "
             "Pass train a jit that counts: jit=lambda fn, **options: jax.jit(<fn with a counter>, **options), "
             "and read the counter once the loop's results are ready.")


def check_count_traces(count_traces, train_once, rng=None):
    """count_traces counts the traces of the loop it is given, not its steps: a loop whose step sees one shape
    traces once; at three sizes, three times."""
    rng = rng or np.random.default_rng()
    sizes = handout.ragged_sizes(rng, int(rng.integers(5, 9)), 3)
    batches = handout.make_batches(rng, [sizes[0]] * len(sizes))
    check_counted(count_traces, train_once, batches, 0.1, 1, f"a loop over {len(sizes)} batches of one size")
    batches = handout.make_batches(rng, sizes)
    check_counted(count_traces, train_once, batches, 0.1, 3, f"a loop over {len(sizes)} batches of 3 sizes")


def check_fixed_traces(count_traces, fixed_train, rng=None):
    """fixed_train traces its step once per loop, on batches of several sizes."""
    rng = rng or np.random.default_rng()
    batches, lr0 = handout.data_for("C", rng)
    sizes = sorted({len(y) for _, y in batches})
    found = count_traces(fixed_train, weights(), batches, lr0)
    if found != 1:
        fail(f"fixed_train traced {found!r:.20} times over {len(batches)} batches of sizes {sizes}: it should trace "
             "once per loop. Give every step the same shapes (pad each batch to one size and mask the padding) and "
             "keep values that change every step out of the cache key (a traced argument, not a static one).")


def check_findings(findings, original_traces, fixed_traces):
    """findings names problems of the course's list, each with its evidence in words, backed by what was
    measured: a retrace named only where the handed-out loop traced more than once."""
    if not isinstance(findings, dict) or not findings:
        fail("findings should be a dict {problem: the evidence you measured, in a sentence}, its keys from "
             f"handout.PROBLEMS ({', '.join(handout.PROBLEMS)}).")
    unknown = sorted(set(findings) - set(handout.PROBLEMS))
    if unknown:
        fail(f"findings names {unknown}: use the names of handout.PROBLEMS ({', '.join(handout.PROBLEMS)}).")
    if len(findings) < 2:
        fail("the handed-out loop hides at least two problems of handout.PROBLEMS; findings names one.")
    for problem, evidence in findings.items():
        if not isinstance(evidence, str) or len(evidence.strip()) < MIN_EVIDENCE_CHARS:
            fail(f"findings[{problem!r}] should say, in a sentence, what you measured and what it showed (a trace "
                 "count, a synchronized timing, JAX's explanation of a cache miss).")
    if any(p.startswith("retrace") for p in findings) and not (type(original_traces) is int and original_traces > 1):
        fail(f"findings names a retrace, but original_traces is {original_traces!r:.20}: count the handed-out loop's "
             "traces with count_traces first.")
    if type(fixed_traces) is not int or fixed_traces != 1:
        fail(f"fixed_traces is {fixed_traces!r:.20}: the fixed loop should trace once per loop.")


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
        fail(f"the fixed loop is {speedup:.2f}x as fast as the handed-out one; a loop that no longer traces and "
             f"compiles at every step should be at least {minimum:g}x as fast. Is fixed_train still tracing at "
             "each step (count its traces), or did the timings include something else?")
