"""Notebook 5's hidden tests (perfaudit/autograde/evidence/audit_evidence.py), run in one process: the findings against
the answer key, the trace counts on the grader's data, the fix run with the grader's own jit, the speed-up on the
grader's clock."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from audit_misconceptions import student_with
from loops import count_traces, fixed_train

from perfaudit import handout, variants
from perfaudit.answer_key import answers
from perfaudit.autograde import graded, hidden
from perfaudit.autograde.evidence import audit_evidence
from perfaudit.fixtures.catalog.cheats import invented

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
    assigned = variants.assigned(student_with(variant))
    batches, lr0, one_size = handout.audit_data(variant, assigned.seed)
    measured = _measured(variant, batches, one_size, lr0)
    findings = dict.fromkeys(answers.PLANTED[variant], EVIDENCE)
    hidden.check_problems_named(findings, measured, assigned)
    # a count off by one that backs the same findings: A's trace count still above its one at one size, B's and
    # C's one more at one size and over the notebook's batches alike
    moved = {"A": ("original_traces",), "B": ("original_traces", "one_size_traces"),
             "C": ("original_traces", "one_size_traces")}[variant]
    for off in ({name: measured[name] + 1 for name in moved}, {"one_size_traces": measured["one_size_traces"] + 1}):
        if variant == "A" and "one_size_traces" in off:
            continue  # A's count at one size is 1: one more would back another finding
        with pytest.raises(AssertionError, match=f"measured\\['{next(iter(off))}'\\] is .* traces its step"):
            hidden.check_problems_named(findings, {**measured, **off}, assigned)
    # measurements made up to back one problem more (every cache key new, something compiled, the clock early)
    everything = {**measured, "original_traces": 9, "one_size_traces": 8, "eager_compiles": ["jit(_mean)"],
                  "missed_s": 0.25}
    with pytest.raises(AssertionError, match="it does not hide: the measurements they rest on are not"):
        hidden.check_problems_named(dict.fromkeys(handout.PROBLEMS, EVIDENCE), everything, assigned)
    with pytest.raises(AssertionError, match="leaves it out"):
        hidden.check_problems_named(dict(list(findings.items())[1:]), measured, assigned)


def test_a_classmate_s_findings_are_graded_against_the_student_s_own_variant_and_the_message_says_so():
    """A student whose variant is B hands in the findings and measurements of a classmate's notebook in A: the
    grader checks them against B, the variant of the id it grades, and says which variant they name."""
    copied_from = handout.audit_data("A", variants.assigned(student_with("A")).seed)
    measured = _measured("A", copied_from[0], copied_from[2], copied_from[1])
    findings = dict.fromkeys(answers.PLANTED["A"], EVIDENCE)
    hidden.check_problems_named(findings, measured, variants.assigned(student_with("A")))
    with pytest.raises(AssertionError, match="names the problems of variant A, but this notebook is graded against "
                                             "variant B, the one 'student-0' audits"):
        hidden.check_problems_named(findings, measured, variants.assigned(student_with("B")))
    with graded.grading(student_with("C")):  # what the hidden cell, which names no variant, is graded by
        with pytest.raises(AssertionError, match="graded against variant C"):
            hidden.check_problems_named(findings, measured)


def test_trace_counts_on_the_grader_s_data():
    hidden.check_original_traces(count_traces, variant="C")
    hidden.check_fixed_traces(fixed_train)


def reference_beside_a_token_call(w, batches, lr0, jit=jax.jit):
    """No fix: the NumPy reference's values, with one call of a jitted function for show."""
    jit(lambda x: x + 1)(np.float32(0)).block_until_ready()
    w, losses = handout.reference_train(w, batches, lr0)
    return np.float32(w), [np.float32(v) for v in losses]


def compiled_ahead_of_time(w, batches, lr0, jit=jax.jit):
    """A fix whose padded step is lowered and compiled once, ahead of time, then called."""
    rows = max(len(y) for _, y in batches)

    def step(w, x, y, n, lr):
        err = x @ w - y
        return w - lr * x.T @ err / n, (err * err).sum() / n

    compiled = jit(step).lower(w, np.zeros((rows, handout.FEATURES), np.float32), np.zeros(rows, np.float32),
                               np.float32(1), np.float32(1)).compile()
    losses = []
    for i, (x, y) in enumerate(batches):
        w, loss = compiled(w, np.pad(x, ((0, rows - len(y)), (0, 0))), np.pad(y, (0, rows - len(y))),
                           np.float32(len(y)), np.float32(handout.learning_rate(lr0, i)))
        losses.append(loss)
    return w, losses


def reference_beside_a_jitted_product(w, batches, lr0, jit=jax.jit):
    """No fix: the NumPy reference's values, beside a jitted matrix product of the first batch."""
    jit(lambda x: x.T @ x)(batches[0][0]).block_until_ready()
    w, losses = handout.reference_train(w, batches, lr0)
    return np.float32(w), [np.float32(v) for v in losses]


def reference_times_a_token_call(w, batches, lr0, jit=jax.jit):
    """No fix: the NumPy reference's values times a jitted call's 1.0, so that NaN from the jit reaches them."""
    token = jit(lambda x: x)(np.float32(1.0))
    w, losses = handout.reference_train(w, batches, lr0)
    return np.float32(w) * token, [np.float32(v) * token for v in losses]


def reference_on_data_through_a_jitted_identity(w, batches, lr0, jit=jax.jit):
    """No fix: the batches through one jitted identity, the NumPy reference on what comes back."""
    xs, ys = jit(lambda xs, ys: (xs, ys))([x for x, _ in batches], [y for _, y in batches])
    return handout.reference_train(w, [(np.asarray(x), np.asarray(y)) for x, y in zip(xs, ys)], lr0)


def reference_through_a_jitted_identity_product(w, batches, lr0, jit=jax.jit):
    """No fix: the NumPy reference's weights sent through a jitted product with the identity matrix."""
    w, losses = handout.reference_train(w, batches, lr0)
    return jit(lambda w: w @ jnp.eye(w.shape[0], dtype=w.dtype))(np.float32(w)), losses


def handed_out_loop_plus_zero_times_a_jitted_step(w, batches, lr0, jit=jax.jit):
    """No fix: the handed-out loop with JAX's own jit, plus zero times a real jitted step on the weights given."""
    x, y = batches[0]
    shadow = jit(lambda w, x, y: w - 0.1 * x.T @ (x @ w - y))(w, x, y)
    trained, losses = handout.train_b(w, batches, lr0, jax.jit)
    return np.asarray(trained) + 0.0 * np.asarray(shadow), losses


def _catalog_fix(text):
    """The fixed_train of a catalog case's cell text, made here."""
    namespace = {"jax": jax, "jnp": jnp, "np": np, "handout": handout}
    exec(text, namespace)  # noqa: S102 - the project's own fixture
    return namespace["fixed_train"]


# No fix: each update in NumPy; a jitted product of the batch runs beside it, its NaN (were the jit to make one) copied
numpy_updates_that_copy_a_jitted_nan = _catalog_fix(invented.NUMPY_UPDATES_COPYING_A_JITTED_NAN_FIX)


def weights_as_a_float64_column(w, batches, lr0, jit=jax.jit):
    """A fix whose whole loop, one jitted lax.scan, carries the weights as a (features, 1) column of float64 on the
    host side cast to float32 (the weights are still the ones it was given, reshaped)."""
    rows = max(len(y) for _, y in batches)
    xs = np.stack([np.pad(x, ((0, rows - len(y)), (0, 0))) for x, y in batches])
    ys = np.stack([np.pad(y, (0, rows - len(y)))[:, None] for x, y in batches])
    ns = np.float32([len(y) for _, y in batches])
    lrs = np.float32([handout.learning_rate(lr0, i) for i in range(len(batches))])

    def loop(w, xs, ys, ns, lrs):
        def body(w, batch):
            x, y, n, lr = batch
            err = x @ w - y
            return w - lr * x.T @ err / n, (err * err).sum() / n

        return jax.lax.scan(body, w, (xs, ys, ns, lrs))

    column = np.asarray(w, np.float64).reshape(-1, 1).astype(np.float32)
    w, losses = jit(loop)(column, xs, ys, ns, lrs)
    return np.asarray(w).ravel(), list(losses)


def step_and_loss_made_apart(w, batches, lr0, jit=jax.jit):
    """Nearly a fix: the padded step and its loss, two functions made with jit, each traced once."""
    rows = max(len(y) for _, y in batches)

    def masked(w, x, y, n):
        return jnp.where(jnp.arange(rows) < n, x @ w - y, 0.0)

    update = jit(lambda w, x, y, n, lr: w - lr * x.T @ masked(w, x, y, n) / n)
    loss = jit(lambda w, x, y, n: (masked(w, x, y, n) ** 2).sum() / n)
    losses = []
    for i, (x, y) in enumerate(batches):
        x, y = np.pad(x, ((0, rows - len(y)), (0, 0))), np.pad(y, (0, rows - len(y)))
        losses.append(loss(w, x, y, np.float32(len(batches[i][1]))))
        w = update(w, x, y, np.float32(len(batches[i][1])), np.float32(handout.learning_rate(lr0, i)))
    return w, losses


def starts_from_zeros_whatever_it_is_given(w, batches, lr0, jit=jax.jit):
    """Nearly a fix: the instructor's, but from zeros, not from the weights it is given."""
    return fixed_train(np.zeros_like(w), batches, lr0, jit)


def step_closes_over_the_data(w, batches, lr0, jit=jax.jit):
    """A fix whose jitted step takes only the step number: the padded batches are constants it closes over."""
    rows = max(len(y) for _, y in batches)
    xs = jnp.stack([np.pad(x, ((0, rows - len(y)), (0, 0))) for x, y in batches])
    ys = jnp.stack([np.pad(y, (0, rows - len(y))) for _, y in batches])
    ns = jnp.float32([len(y) for _, y in batches])

    @jit
    def step(w, i, lr):
        err = xs[i] @ w - ys[i]
        return w - lr * xs[i].T @ err / ns[i], (err * err).sum() / ns[i]

    losses = []
    for i in range(len(batches)):
        w, loss = step(w, i, np.float32(handout.learning_rate(lr0, i)))
        losses.append(loss)
    return w, losses


def step_inside_the_student_s_own_jit(w, batches, lr0, jit=jax.jit):
    """A fix whose step, made with the jit given, runs inside a jax.jit of the student's own."""
    step = jit(lambda w, x, y, n, lr: _padded_step(w, x, y, n, lr))
    own = jax.jit(lambda w, x, y, n, lr: step(w, x, y, n, lr))
    rows = max(len(y) for _, y in batches)
    losses = []
    for i, (x, y) in enumerate(batches):
        w, loss = own(w, np.pad(x, ((0, rows - len(y)), (0, 0))), np.pad(y, (0, rows - len(y))),
                      np.float32(len(y)), np.float32(handout.learning_rate(lr0, i)))
        losses.append(loss)
    return w, losses


def _padded_step(w, x, y, n, lr):
    err = x @ w - y
    return w - lr * x.T @ err / n, (err * err).sum() / n


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
    hidden.check_fixed_values(compiled_ahead_of_time)  # a step compiled ahead of time computes what it is called on
    for honest in (step_closes_over_the_data, step_inside_the_student_s_own_jit,  # however the step takes its data
                   weights_as_a_float64_column):  # and the weights, cast and reshaped
        hidden.check_fixed_values(honest)
    for variant in handout.VARIANTS:  # the handed-out loop is no fix: it traces more than once
        for check in (hidden.check_fixed_values, hidden.check_fixed_traces):
            with pytest.raises(AssertionError, match="the grader counted [2-8] traces of the functions"):
                check(handout.train_of(variant))
    with pytest.raises(AssertionError, match="the grader counted 0 traces.*using the jit argument"):
        hidden.check_fixed_traces(jax_jit_itself)
    with pytest.raises(AssertionError, match="given starting weights other than zeros, returned the weights the "
                                             "handed-out loop ends with from zeros: it must start from its argument"):
        hidden.check_fixed_values(starts_from_zeros_whatever_it_is_given)  # as the visible self-check says
    with pytest.raises(AssertionError, match="ends with from zeros, whatever weights it was given: it must start "
                                             "from its argument w"):
        hidden.check_fixed_traces(starts_from_zeros_whatever_it_is_given)  # the grader's restart tells too
    with pytest.raises(AssertionError, match="counted 2 traces .* those are traces of 2 functions it made with that "
                                             "jit. Make one function with it"):
        hidden.check_fixed_traces(step_and_loss_made_apart)


first_step_in_jax_the_rest_in_numpy = _catalog_fix(invented.FIRST_STEP_IN_JAX_THE_REST_IN_NUMPY_FIX)
affine_map_in_one_jitted_product = _catalog_fix(invented.AFFINE_MAP_IN_ONE_JITTED_PRODUCT_FIX)
numpy_when_its_jit_is_jax_jit = _catalog_fix(invented.NUMPY_WHEN_ITS_JIT_IS_JAX_JIT_FIX)


def test_a_fix_that_computes_its_values_without_what_it_jits_earns_no_fix_point():
    for check in (hidden.check_fixed_values, hidden.check_fixed_traces,
                  lambda fix: hidden.check_speedup_measured(fix, 5.0, [5.0] * 3, [1.0] * 3, variant="B")):
        # arithmetic in its program, but the batches never (or once) went in: the steps were computed elsewhere
        for beside, reached in ((reference_beside_a_jitted_product, 1),
                                (reference_through_a_jitted_identity_product, 0),
                                (handed_out_loop_plus_zero_times_a_jitted_step, 1),
                                (first_step_in_jax_the_rest_in_numpy, 1), (affine_map_in_one_jitted_product, 0)):
            with pytest.raises(AssertionError, match=f": {reached} of the grader's 8 batches reached the functions it "
                                                     "made with that jit .*so that JAX computes every step"):
                check(beside)
        # every batch goes into a jitted product, but the weights it returns are NumPy's
        with pytest.raises(AssertionError, match="started from other weights than the ones fixed_train was given: "
                                                 "fixed_train returned the weights the handed-out loop ends with "
                                                 "from the weights fixed_train was given"):
            check(numpy_updates_that_copy_a_jitted_nan)
        for no_step in (reference_beside_a_token_call, reference_times_a_token_call,  # NaN reaches the last two
                        reference_on_data_through_a_jitted_identity):
            with pytest.raises(AssertionError, match="computes no step of the loop"):
                check(no_step)


def test_the_grader_s_clock_finds_the_fix_faster_and_the_original_not_a_fix():
    original = handout.train_of("B")
    speedup = 5.0 / 1.0
    hidden.check_speedup_measured(fixed_train, speedup, [5.0] * 3, [1.0] * 3, variant="B")
    with pytest.raises(AssertionError, match="the grader counted 8 traces"):
        hidden.check_speedup_measured(original, speedup, [5.0] * 3, [1.0] * 3, variant="B")


def test_the_loop_the_grader_times_runs_with_the_grader_s_jit_and_every_batch_reaches_it():
    """A fix cannot tell the timed run by its jit: the NumPy reference it keeps for jax.jit never runs, and the loop
    timed is the JAX one whose traces and carry the other checks saw. A timed loop whose steps skip the jitted
    functions is told so."""
    hidden.check_fixed_values(numpy_when_its_jit_is_jax_jit)  # its JAX loop is a fix
    timed = []

    def reference_when_timed(w, batches, lr0, jit=jax.jit):
        timed.append(type(jit).__name__)
        return numpy_when_its_jit_is_jax_jit(w, batches, lr0, jit)

    audit_evidence.grader_speedup(reference_when_timed, "A", np.random.default_rng(1))
    assert timed == ["LoopJit"] * audit_evidence.ROUNDS
    calls = []

    def only_the_first_call_in_jax(w, batches, lr0, jit=jax.jit):
        calls.append(1)
        return fixed_train(w, batches, lr0, jit) if len(calls) == 1 else first_step_in_jax_the_rest_in_numpy(
            w, batches, lr0, jit)

    with pytest.raises(AssertionError, match="timed by the grader on new batches with the grader's jit: 1 of the "
                                             "grader's 8 batches reached"):
        audit_evidence.grader_speedup(only_the_first_call_in_jax, "B", np.random.default_rng(2))
