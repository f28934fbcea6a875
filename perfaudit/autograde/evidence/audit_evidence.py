"""Notebook 5's hidden tests: the audit of the handed-out loop judged on data the grader makes now, against the
answer key's planted problems, and the speed-up timed by the grader's own clock around each loop.

The loops run in the student's kernel (the grader runs no JAX); each call crosses the channel and returns its
values as NumPy, so the grader's clock around it covers the whole loop, its results ready."""

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from perfaudit import handout
from perfaudit.answer_key import answers
from perfaudit.checks import audit
from perfaudit.checks.failure import fail

# Timings of each loop the grader takes, each on new data. The loop that must be quick (the long loop against one
# step, the fixed loop against the handed-out one) counts by its fastest round, the one least disturbed by other
# work on the machine (other graders, kernels starting): a median moves as soon as two rounds are. The loop it is
# measured against counts by its median, which one round that found its steps compiled already cannot pull down.
# A loop that retraces pays for its compilations in every round, its fastest included.
ROUNDS = 3
# A loop of one step against a loop of LONG_STEPS, each step with a batch size, a learning rate and a step number
# of its own: a loop that traces once compiles once in both, so the long one costs little more; one that traces
# at a new size, a new static value or a new step compiles LONG_STEPS times, and costs several times more.
LONG_STEPS = 8
RETRACE_RATIO = 3.0


def check_problems_named(findings: Any, measured: Any, variant: str, batches: Sequence[Any], lr0: float,
                         one_size: Sequence[Any]) -> None:
    """findings names the problems the notebook's measurements back (checks.audit.check_findings), and those are the
    problems planted in this term's variant; the trace counts measured are the loop's over the notebook's own
    batches (batches, and one_size: as many batches of one size), as the answer key counts them."""
    audit.check_findings(findings, measured)
    planted = answers.PLANTED[variant]
    missed, extra = sorted(planted - set(findings)), sorted(set(findings) - planted)
    if missed or extra:
        fail(f"findings names {len(set(findings) & planted)} of the problems the handed-out loop hides"
             + (f", and {len(extra)} it does not hide" if extra else "") + ": the measurements they rest on are not "
             "the handed-out loop's. Run the notebook's measuring cells again, top to bottom, with your count_traces "
             "and time_loop as the self-checks passed them.")
    for name, over in (("original_traces", batches), ("one_size_traces", one_size)):
        expected = answers.original_traces(variant, over, lr0)
        if measured[name] != expected:
            fail(f"measured[{name!r}] is {measured[name]!r:.20}, but the handed-out loop traces its step {expected} "
                 f"times over those {len(over)} batches: count them with count_traces, as the notebook's cell does.")


def check_original_traces(count_traces: Callable[..., Any], original_train: Callable[..., Any],
                          train_once: Callable[..., Any], variant: str,
                          staged: Sequence[Callable[..., Any]] = (), rng: np.random.Generator | None = None) -> None:
    """count_traces on data of the grader's: the handed-out loop's traces as the answer key counts them, a loop
    with one trace per shape counted as such, and the loops whose jit gets static_argnums and static_argnames
    (staged: the notebook's train_static_argnums and train_static_argnames) counted with their options kept."""
    rng = rng or np.random.default_rng()
    audit.check_count_traces(count_traces, train_once, staged, rng=rng)
    batches, lr0 = handout.data_for(variant, rng)
    audit.check_counted(count_traces, original_train, batches, lr0, answers.original_traces(variant, batches, lr0),
                        f"the handed-out loop over {len(batches)} batches")


def check_fixed_traces(count_traces: Callable[..., Any], fixed_train: Callable[..., Any],
                       train_once: Callable[..., Any], rng: np.random.Generator | None = None) -> None:
    """The fixed loop traces once per loop: counted by a count_traces that counts the grader's cases right, and
    seen on the grader's clock, which a counter cannot answer for: a loop of LONG_STEPS steps, each new to the
    cache key of a loop that retraces, costs less than RETRACE_RATIO times a loop of one step."""
    rng = rng or np.random.default_rng()
    audit.check_count_traces(count_traces, train_once, rng=rng)
    audit.check_fixed_counted_once(count_traces, fixed_train, rng)
    one, long = [], []
    for _ in range(ROUNDS):
        sizes = [int(s) for s in rng.choice(np.arange(16, 97), size=LONG_STEPS, replace=False)]
        lr0 = float(rng.uniform(0.05, 0.2))
        one.append(_timed(fixed_train, handout.make_batches(rng, sizes[:1]), lr0)[0])
        long.append(_timed(fixed_train, handout.make_batches(rng, sizes), lr0)[0])
    ratio = min(long) / float(np.median(one))
    if ratio > RETRACE_RATIO:
        fail(f"timed by the grader, fixed_train over {LONG_STEPS} batches of different sizes takes {ratio:.1f}x as "
             "long as over one batch: it still traces and compiles during the loop, whatever count_traces says.")


def _timed(train, batches, lr0):
    """Seconds on the grader's clock from the call until the loop's values are here, and those values."""
    started = time.perf_counter()
    out = train(audit.weights(), batches, lr0)
    w, losses = np.asarray(out[0]), [np.asarray(v) for v in out[1]]  # waits, where the loop ran in this process
    return time.perf_counter() - started, (w, losses)


def check_speedup_measured(original_train: Callable[..., Any], fixed_train: Callable[..., Any], speedup: Any,
                           original_s: Any, fixed_s: Any, variant: str, rng: np.random.Generator | None = None) -> None:
    """The speed-up the notebook reports is its own timings' (checks.audit.check_speedup), and the grader, timing
    both loops on new data of this term's kind, finds the fixed one at least SPEEDUP_MIN times as fast, with the
    handed-out loop's values."""
    rng = rng or np.random.default_rng()
    audit.check_speedup(speedup, original_s, fixed_s)
    grader_original, grader_fixed = [], []
    for _ in range(ROUNDS):
        batches, lr0 = handout.data_for(variant, rng)
        seconds, out = _timed(fixed_train, batches, lr0)
        audit.check_trains_like_reference(lambda *_: out, batches, lr0, "fixed_train on the grader's batches")
        grader_fixed.append(seconds)
        grader_original.append(_timed(original_train, batches, lr0)[0])
    measured = float(np.median(grader_original)) / min(grader_fixed)
    if measured < audit.SPEEDUP_MIN:
        fail(f"timed by the grader on new batches, the fixed loop is {measured:.2f}x as fast as the handed-out one "
             f"(at least {audit.SPEEDUP_MIN:g}x expected): it still pays for what the audit found.")
