"""Notebook 5's hidden tests (perfaudit/autograde/evidence/audit_evidence.py), run in one process: the findings against
the answer key, the trace counts on the grader's data, the fix run with the grader's own jit, the speed-up on the
grader's clock."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from loops import count_traces, fixed_train

from perfaudit import handout
from perfaudit.answer_key import answers
from perfaudit.autograde import hidden
from perfaudit.autograde.evidence import audit_evidence
from perfaudit.checks import audit

EVIDENCE = "measured: the trace count and JAX's explanation of each miss"


def _measured(variant, batches, one_size, lr0):
    """What the notebook measures of the handed-out loop of `variant`, as its cells would (the answer key's trace
    counts; what compiles outside the step and what the benchmark misses, as each variant's code does)."""
    return {"original_traces": answers.original_traces(variant, batches, lr0),
            "one_size_traces": answers.original_traces(variant, one_size, lr0),
            "eager_compiles": [] if variant == "C" else ["jit(_mean)"],
            "missed_s": 0.0 if variant == "B" else 0.25, "pending_s": 0.3}


@pytest.mark.parametrize("variant", handout.VARIANTS)
def test_the_planted_problems_backed_by_the_loop_s_measurements_pass(variant):
    rng = np.random.default_rng(7)
    batches, lr0 = handout.data_for(variant, rng)
    one_size = handout.make_batches(rng, [len(batches[0][1])] * len(batches))
    measured = _measured(variant, batches, one_size, lr0)
    findings = dict.fromkeys(answers.PLANTED[variant], EVIDENCE)
    hidden.check_problems_named(findings, measured, variant, batches, lr0, one_size)
    # a count off by one that backs the same findings: A's trace count still above its one at one size, B's and
    # C's one more at one size and over the notebook's batches alike
    moved = {"A": ("original_traces",), "B": ("original_traces", "one_size_traces"),
             "C": ("original_traces", "one_size_traces")}[variant]
    for off in ({name: measured[name] + 1 for name in moved}, {"one_size_traces": measured["one_size_traces"] + 1}):
        if variant == "A" and "one_size_traces" in off:
            continue  # A's count at one size is 1: one more would back another finding
        with pytest.raises(AssertionError, match=f"measured\\['{next(iter(off))}'\\] is .* traces its step"):
            hidden.check_problems_named(findings, {**measured, **off}, variant, batches, lr0, one_size)
    # measurements made up to back one problem more (every cache key new, something compiled, the clock early)
    everything = {**measured, "original_traces": 9, "one_size_traces": 8, "eager_compiles": ["jit(_mean)"],
                  "missed_s": 0.25}
    with pytest.raises(AssertionError, match="it does not hide: the measurements they rest on are not"):
        hidden.check_problems_named(dict.fromkeys(handout.PROBLEMS, EVIDENCE), everything, variant, batches, lr0,
                                    one_size)
    with pytest.raises(AssertionError, match="leaves it out"):
        hidden.check_problems_named(dict(list(findings.items())[1:]), measured, variant, batches, lr0, one_size)


def test_trace_counts_on_the_grader_s_data():
    hidden.check_original_traces(count_traces, handout.train_of("C"), handout.train_once, "C",
                                 (handout.train_static_argnums, handout.train_static_argnames))
    hidden.check_fixed_traces(fixed_train)


def reference_beside_a_token_call(w, batches, lr0, jit=jax.jit):
    """No fix: the NumPy reference's values, with one call of a jitted function for show."""
    jit(lambda x: x + 1)(np.float32(0)).block_until_ready()
    w, losses = handout.reference_train(w, batches, lr0)
    return np.float32(w), [np.float32(v) for v in losses]


def jax_jit_itself(w, batches, lr0, jit=jax.jit):
    """The fix, but its step made with jax.jit, not the jit it was given: nothing the grader can count."""
    return fixed_train(w, batches, lr0, jax.jit)


def whole_loop_unrolled(w, batches, lr0, jit=jax.jit):
    """A fix that jits the whole loop, its steps unrolled over the batches as a tuple: one trace per loop."""
    sizes = tuple(len(y) for _, y in batches)
    rates = np.float32([handout.learning_rate(lr0, i) for i in range(len(batches))])

    def loop(w, xs, ys, rates):
        losses = []
        for x, y, lr in zip(xs, ys, rates):
            err = x @ w - y
            losses.append(jnp.mean(err ** 2))
            w = w - lr * x.T @ err / x.shape[0]
        return w, losses

    w, losses = jit(loop)(w, tuple(x for x, _ in batches), tuple(y for _, y in batches), rates)
    assert len(sizes) == len(losses)
    return w, losses


def test_the_grader_counts_the_fix_s_traces_and_sees_its_values_come_from_what_it_jitted():
    hidden.check_fixed_values(fixed_train)
    hidden.check_fixed_traces(whole_loop_unrolled)  # one trace, however long its compilation: judged by the count
    for variant in handout.VARIANTS:  # the handed-out loop is no fix: it traces more than once
        for check in (hidden.check_fixed_values, hidden.check_fixed_traces):
            with pytest.raises(AssertionError, match="the grader counted [2-8] traces of the functions"):
                check(handout.train_of(variant))
    with pytest.raises(AssertionError, match="the grader counted 0 traces.*using the jit argument"):
        hidden.check_fixed_traces(jax_jit_itself)


def test_a_fix_that_computes_its_values_without_what_it_jits_earns_no_fix_point():
    for check in (hidden.check_fixed_values, hidden.check_fixed_traces,
                  lambda fix: hidden.check_speedup_measured(handout.train_of("B"), fix, 5.0, [5.0] * 3, [1.0] * 3,
                                                            "B")):
        with pytest.raises(AssertionError, match="do not come from the functions it jitted"):
            check(reference_beside_a_token_call)


def test_the_grader_decides_on_grader_speedup_against_the_floor(monkeypatch):
    # benchmarks/speedup_floor_under_load.py measures grader_speedup: the very number this check holds to the floor
    args = (handout.train_of("B"), fixed_train, 5.0, [5.0] * 3, [1.0] * 3, "B")
    monkeypatch.setattr(audit_evidence, "grader_speedup", lambda *_: audit.SPEEDUP_MIN * 0.99)
    with pytest.raises(AssertionError, match=f"the fixed loop is {audit.SPEEDUP_MIN * 0.99:.2f}x as fast"):
        hidden.check_speedup_measured(*args)
    monkeypatch.setattr(audit_evidence, "grader_speedup", lambda *_: audit.SPEEDUP_MIN)
    hidden.check_speedup_measured(*args)


def test_the_grader_s_clock_finds_the_fix_faster_and_the_original_not_a_fix():
    original = handout.train_of("B")
    speedup = 5.0 / 1.0
    hidden.check_speedup_measured(original, fixed_train, speedup, [5.0] * 3, [1.0] * 3, "B")
    with pytest.raises(AssertionError, match="the grader counted 8 traces"):
        hidden.check_speedup_measured(original, original, speedup, [5.0] * 3, [1.0] * 3, "B")
