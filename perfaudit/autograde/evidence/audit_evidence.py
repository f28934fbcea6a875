"""Notebook 5's hidden tests: the audit of the handed-out loop judged on data the grader makes now, against the
answer key's planted problems; the fix run with the grader's own jit (loop_jit.py), which counts its traces, sees
every batch go into what it jitted and checks that its values come from there; and the speed-up timed by the
grader's own clock around each loop, run with that jit too.

The loops run in the student's kernel (the grader runs no JAX); each call crosses the channel and returns its
values as NumPy, so the grader's clock around it covers the whole loop, its results ready."""

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from perfaudit import handout, variants
from perfaudit.answer_key import answers
from perfaudit.autograde import graded
from perfaudit.autograde.evidence.handed_out import HandedOut, beside
from perfaudit.autograde.evidence.loop_jit import LoopJit
from perfaudit.checks import audit
from perfaudit.checks.failure import fail

# Timings of each loop the grader takes, each on new data. Both loops count by their fastest round, the one least
# disturbed by other work on the machine (other graders, kernels starting): a median moves as soon as two rounds are.
# The handed-out loop compiles anew at every call (its jit wraps a new function), so none of its rounds finds its
# steps compiled, and a loop timed against itself seems twice as fast only if every round of one is slowed.
ROUNDS = 3


def check_problems_named(findings: Any, measured: Any, assigned: variants.Assigned | None = None) -> None:
    """findings names the problems the notebook's measurements back (checks.audit.check_findings), and those are the
    problems planted in the graded student's variant (graded.py: the gradebook's id, never the notebook's claim);
    the trace counts measured are that variant's loop's over that student's batches and as many of one size
    (handout.audit_data), as the answer key counts them."""
    assigned = assigned or graded.assignment()
    named = set(findings) if isinstance(findings, dict) else set()
    # said first: another variant's findings are a classmate's audit, whatever the measurements say of them
    other = [v for v, problems in answers.PLANTED.items() if v != assigned.variant and problems == named]
    if other:
        fail(f"findings names the problems of variant {other[0]}, but this notebook is graded against variant "
             f"{assigned.variant}, the one {assigned.student!r} audits (each student's variant comes from their "
             "student id, not from the notebook). Run the notebook again, top to bottom, as yourself: its setup "
             "cell prints your variant.")
    audit.check_findings(findings, measured)
    planted = answers.PLANTED[assigned.variant]
    missed, extra = sorted(planted - set(findings)), sorted(set(findings) - planted)
    if missed or extra:
        fail(f"findings names {len(set(findings) & planted)} of the problems the handed-out loop hides"
             + (f", and {len(extra)} it does not hide" if extra else "") + ": the measurements they rest on are not "
             "the handed-out loop's. Run the notebook's measuring cells again, top to bottom, with your count_traces "
             "and time_loop as the self-checks passed them.")
    batches, lr0, one_size = handout.audit_data(assigned.variant, assigned.seed)
    for name, over in (("original_traces", batches), ("one_size_traces", one_size)):
        expected = answers.original_traces(assigned.variant, over, lr0)
        if measured[name] != expected:
            fail(f"measured[{name!r}] is {measured[name]!r:.20}, but the handed-out loop of variant "
                 f"{assigned.variant} traces its step {expected} times over those {len(over)} batches: count them "
                 "with count_traces, as the notebook's cell does.")


def check_original_traces(count_traces: Callable[..., Any], rng: np.random.Generator | None = None,
                          variant: str | None = None) -> None:
    """count_traces on the grader's loops (handed_out.py: made anew from the grader's handout.py, never the
    notebook's names) and data: the graded student's handed-out loop's traces (graded.py) as the answer key counts
    them, a loop with one trace per shape counted as such, and the loops whose jit gets static_argnums and
    static_argnames counted with their options kept, and a loop whose jax.numpy calls outside its step compile
    counted by its traces alone."""
    rng = rng or np.random.default_rng()
    variant = variant or graded.assignment().variant
    staged = [beside(count_traces, HandedOut(name)) for name in ("train_static_argnums", "train_static_argnames")]
    audit.check_count_traces(count_traces, beside(count_traces, HandedOut("train_once")), staged, rng=rng,
                             eager=beside(count_traces, HandedOut("train_eager_loss")))
    batches, lr0 = handout.data_for(variant, rng)
    original = beside(count_traces, HandedOut.loop_of(variant))
    audit.check_counted(count_traces, original, batches, lr0, answers.original_traces(variant, batches, lr0),
                        f"the handed-out loop over {len(batches)} batches")


def _grader_counted(fixed_train, batches, lr0):
    """(what fixed_train returned, as float64 NumPy, and the grader's own jit (loop_jit.LoopJit) handed to it as
    jit: the traces it counted, how many of them computed a step, and which batches reached its functions)."""
    jit = LoopJit(watch=[x for x, _ in batches])
    out = audit.as_result(fixed_train(audit.weights(), batches, lr0, jit=jit), "fixed_train with the grader's jit")
    return out, jit


def _check_steps_in_jax(jit, batches, what):
    """Every step of the loop reached the functions made with the grader's jit: it computed some step (a matrix
    product, nothing handed to Python) and each of the grader's batches went into one of them (as an argument or a
    constant of its program: loop_jit.Watch). A loop that computes a first step, or a token, in JAX and the others in
    NumPy leaves batches that never did."""
    if not jit.computing:
        fail(f"{what}: the function it made with that jit computes no step of the loop in JAX: its program holds "
             "no matrix product (nor a product summed), or hands values to Python to compute (jax.pure_callback, "
             "io_callback), so the weights come from somewhere else (a jitted call beside NumPy or the handed-out "
             "loop is no fix). The fix must compute each step's update with JAX, in the step it makes with jit.")
    missed = sorted(set(range(len(batches))) - jit.fed())
    if missed:
        fail(f"{what}: {len(batches) - len(missed)} of the grader's {len(batches)} batches reached the functions it "
             f"made with that jit (batch {missed[0]} never did), so those steps were computed somewhere else. Each "
             "step's batch must go into the step it makes with jit (padded, stacked or joined with y as you like), "
             "or into the whole loop made with jit, so that JAX computes every step.")


def _check_a_jax_fix(fixed_train, rng):
    """fixed_train, with the grader's jit on the grader's batches of several sizes: the handed-out loop's values,
    from functions it made with that jit and traced once in all (counted by the grader), which compute a step and
    carry the weights (_check_carries_the_weights)."""
    batches, lr0, sizes = audit.ragged_data(rng)
    what = f"fixed_train over the grader's {len(batches)} batches of sizes {sizes}, with the grader's jit"
    (w, losses), jit = _grader_counted(fixed_train, batches, lr0)
    audit.check_trains_like_reference(lambda *_: (w, losses), batches, lr0, what)
    traces, functions = jit.traces, len(jit.functions)
    if traces != 1:
        fail(f"{what}: the grader counted {traces} traces of the functions it made with that jit; a fix traces once "
             "per loop" + (": make its step with jit(step), using the jit argument." if not traces else
                           f": those are traces of {functions} functions it made with that jit. Make one function "
                           "with it (the step, which computes the loss too, or the whole loop)." if functions > 1 else
                           ". Run the notebook's self-check of fixed_train: it says what changed between the traces."))
    _check_steps_in_jax(jit, batches, what)
    _check_carries_the_weights(fixed_train, batches, lr0, rng, what)


def _check_carries_the_weights(fixed_train, batches, lr0, rng, what):
    """fixed_train, given starting weights whose place the grader's jit gives to others inside its programs
    (loop_jit.py's restart), ends where the handed-out loop ends from the others: its weights went from its argument
    through the functions it jitted, step after step. Weights computed anywhere else end where the loop ends from
    the weights it was given."""
    given, instead = (rng.normal(size=handout.FEATURES).astype(np.float32) for _ in range(2))
    jit = LoopJit(restart=(given.tolist(), instead.tolist()))
    w, _ = audit.as_result(fixed_train(given.copy(), batches, lr0, jit=jit), "fixed_train with the grader's jit")

    def ends_from(start):
        return audit.agrees(w, handout.reference_train(start.astype(np.float64), batches, lr0)[0])

    if ends_from(instead):
        return
    if ends_from(np.zeros_like(given)):
        fail(f"{what}: fixed_train returned the weights the handed-out loop ends with from zeros, whatever weights it "
             "was given: it must start from its argument w, as the handed-out loop does.")
    how = ("the weights the handed-out loop ends with from the weights fixed_train was given, so no function it "
           "made with that jit computed them (they came from NumPy or the handed-out loop, beside a jitted call)"
           if ends_from(given) else
           "weights that are not where the handed-out loop ends from either, so they did not go through its jitted "
           "steps alone (an update outside the step it jitted?)")
    fail(f"{what}, whose functions started from other weights than the ones fixed_train was given: fixed_train "
         f"returned {how}. The fix must compute each step's weights in the step it makes with jit, from the "
         "weights before it, and carry the weights that step returns to the next step.")


def check_fixed_values(fixed_train: Callable[..., Any], rng: np.random.Generator | None = None) -> None:
    """fixed_train gives the handed-out loop's values (checks.audit.check_fixed_train) as a JAX fix does: computed
    by the functions it makes with the grader's jit, traced once per loop (_check_a_jax_fix). The handed-out loop
    itself, or a loop that returns values computed some other way, earns nothing here."""
    rng = rng or np.random.default_rng()
    audit.check_fixed_train(fixed_train, rng)
    _check_a_jax_fix(fixed_train, rng)


def check_fixed_traces(fixed_train: Callable[..., Any], rng: np.random.Generator | None = None) -> None:
    """The fixed loop traces once per loop, counted by the grader (the traces of the functions it makes with the
    grader's jit, on batches of several sizes), and computes with them (_check_a_jax_fix). A loop jitted whole (a
    lax.scan over the padded batches) traces once too."""
    _check_a_jax_fix(fixed_train, rng or np.random.default_rng())


def _timed(train, batches, lr0, jit):
    """Seconds on the grader's clock from the call until the loop's values are here, and those values."""
    started = time.perf_counter()
    out = train(audit.weights(), batches, lr0, jit=jit)
    w, losses = np.asarray(out[0]), [np.asarray(v) for v in out[1]]  # waits, where the loop ran in this process
    return time.perf_counter() - started, (w, losses)


def grader_speedup(fixed_train: Callable[..., Any], variant: str, rng: np.random.Generator) -> float:
    """How many times as fast the grader's clock finds fixed_train as the handed-out loop of variant (the grader's
    own, made anew where fixed_train runs: handed_out.py): ROUNDS rounds, each on new data of that variant's kind (the
    fixed loop's values checked each round), each loop counted by its fastest round. Both loops get the grader's
    jit, as in the fix's other checks (a loop cannot tell the timed run from a checked one by its jit), and each
    timed fixed loop computes its steps with the functions made with it (_check_steps_in_jax).
    check_speedup_measured's measurement (benchmarks/speedup_floor_under_load.py runs it on a busy machine)."""
    original_train = beside(fixed_train, HandedOut.loop_of(variant), called=True)
    grader_original, grader_fixed = [], []
    for _ in range(ROUNDS):
        batches, lr0 = handout.data_for(variant, rng)
        jit = LoopJit(watch=[x for x, _ in batches])
        seconds, out = _timed(fixed_train, batches, lr0, jit)
        what = "fixed_train, timed by the grader on new batches with the grader's jit"
        audit.check_trains_like_reference(lambda *_: out, batches, lr0, what)
        _check_steps_in_jax(jit, batches, what)
        grader_fixed.append(seconds)
        grader_original.append(_timed(original_train, batches, lr0, LoopJit())[0])
    return min(grader_original) / min(grader_fixed)


def check_speedup_measured(fixed_train: Callable[..., Any], speedup: Any, original_s: Any, fixed_s: Any,
                           rng: np.random.Generator | None = None, variant: str | None = None) -> None:
    """The speed-up the notebook reports is its own timings' (checks.audit.check_speedup), and the grader, timing
    both loops on new data of the graded student's variant, finds the fixed one at least SPEEDUP_MIN times as fast,
    with the handed-out loop's values. The handed-out loop it times is its own, made anew where fixed_train runs
    (handed_out.py): a loop the notebook rebinds or patches to be slow is not the one timed."""
    rng = rng or np.random.default_rng()
    variant = variant or graded.assignment().variant
    audit.check_speedup(speedup, original_s, fixed_s)
    _check_a_jax_fix(fixed_train, rng)
    measured = grader_speedup(fixed_train, variant, rng)
    if measured < audit.SPEEDUP_MIN:
        fail(f"timed by the grader on new batches, the fixed loop is {measured:.2f}x as fast as the handed-out one "
             f"(at least {audit.SPEEDUP_MIN:g}x expected): it still pays for what the audit found.")
