"""The trace checks (perfaudit/checks/traces.py): the counter follows jit's cache key, retracing, predictions, JAXPRs.

Each check passes on right answers and fails, with a useful message, on wrong ones."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit import checks
from perfaudit.checks import traces


def workload(x):
    return jnp.tanh(x @ x)


@pytest.mark.parametrize("count, hint", [(0, "increment"), (1, "same jitted"), (4, "jax.jit")])
def test_trace_count_hints(count, hint):
    checks.check_trace_count(2)
    with pytest.raises(AssertionError, match=hint):
        checks.check_trace_count(count)


def test_retrace_on_new_shape_needs_jit():
    count = [0]

    def counted(x):
        count[0] += 1
        return jnp.tanh(x @ x)

    checks.check_retrace_on_new_shape(jax.jit(counted), lambda: count[0])
    with pytest.raises(AssertionError, match="Is the function wrapped in jax.jit"):
        checks.check_retrace_on_new_shape(counted, lambda: count[0])


def test_the_trace_counter_must_follow_jits_cache_key_not_a_set_of_shapes():
    count, seen = [0], set()

    def counted(x):
        count[0] += 1
        return jnp.tanh(x @ x)

    def shape_set(x):  # counts each new shape by hand, no jit: right for shapes, wrong for dtypes
        seen.add(x.shape)
        return jnp.tanh(x @ x)

    checks.check_traces_follow_jit(jax.jit(counted), lambda: count[0])
    # The calls come in random order: the first wrong count is the bfloat16 call, or the float32 one after it.
    with pytest.raises(AssertionError, match=r"at \d+x\d+ (bfloat16|float32).* should add 1 trace"):
        checks.check_traces_follow_jit(shape_set, lambda: len(seen))


def test_a_counter_that_imitates_the_cache_key_or_a_script_of_calls_is_caught():
    keys, calls = set(), [0]

    def cache_key_set(x):  # jit's key imitated by hand, float64 conversion included: it has no clear_cache()
        keys.add((x.shape, str(jnp.asarray(x).dtype)))
        return jnp.tanh(x @ x)

    def every_other_call(x):  # new, repeat, new, repeat...: the order the checks once used
        calls[0] += 1
        return jnp.tanh(x @ x)

    with pytest.raises(AssertionError, match="clear_cache"):
        checks.check_traces_follow_jit(cache_key_set, lambda: len(keys))
    with pytest.raises(AssertionError, match="clear_cache"):
        checks.check_retrace_on_new_shape(lambda x: (keys.add(x.shape), jnp.tanh(x @ x))[1], lambda: len(keys))
    rng = np.random.default_rng(0)
    caught = 0
    for _ in range(5):
        try:
            checks.check_retrace_on_new_shape(every_other_call, lambda: (calls[0] + 1) // 2, rng)
        except AssertionError:
            caught += 1
    assert caught == 5


def test_a_count_of_jits_cache_entries_is_not_a_trace_count_and_honest_counters_pass():
    """jit's dispatch cache keeps a NumPy argument apart from a device array of the same shape and dtype, with no
    new trace: every check that believes a trace count makes such a call, so traces() reading
    audited._cache_size() fails both, at random shapes and orders, while counters of the body's traces pass."""
    count, counted_too = [0], {"traces": 0}

    def counted(x):
        count[0] += 1
        counted_too["traces"] += 1
        return jnp.tanh(x @ x)

    audited, inlined = jax.jit(counted), jax.jit(counted, inline=True)
    rng = np.random.default_rng(7)
    for check in (checks.check_retrace_on_new_shape, checks.check_traces_follow_jit):
        for _ in range(3):
            check(audited, lambda: count[0], rng)
            check(inlined, lambda: counted_too["traces"], rng)
            cached = jax.jit(workload)
            caught = r"NumPy array .* should add 0 trace\(s\); traces\(\) went up by 1"
            with pytest.raises(AssertionError, match=caught):
                check(cached, cached._cache_size, rng)


def test_a_jaxpr_with_other_operations_fails_and_the_real_one_passes():
    checks.check_jaxpr_text(str(jax.make_jaxpr(jax.jit(workload))(jnp.eye(16))))
    checks.check_jaxpr_text(str(jax.make_jaxpr(lambda x: jnp.tanh(jnp.dot(x, x)))(jnp.eye(16))))
    with pytest.raises(AssertionError, match="should compute dot_general"):
        checks.check_jaxpr_text(str(jax.make_jaxpr(lambda x: jnp.sin(x @ x))(jnp.eye(16))))
    with pytest.raises(AssertionError, match="should compute dot_general"):
        checks.check_jaxpr_text("dot_general tanh lambda f32[16,16]")  # the words, not a program


def _notebook_cell(stage, grade_id):
    from perfaudit import notebooks, paths

    nb = notebooks.read(paths.SOURCE / paths.STAGES[stage])
    return next(c.source for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == grade_id)


def test_trace_count_answers_are_what_the_notebooks_sequence_does_and_what_its_solution_predicts():
    import ast

    answers = checks.trace_count_answers()
    assert list(answers) == [*checks.TRACE_CASES_INPUTS, *checks.TRACE_CASES_ARGUMENTS]
    assert set(checks.TRACE_HINTS) == set(answers)
    namespace = {"jax": jax, "jnp": jnp, "np": np}
    exec(_notebook_cell(2, "trace_sequence"), namespace)  # the notebook's make_sequence, as students read it
    assert checks.count_new_traces(*namespace["make_sequence"]()) == answers
    solution = _notebook_cell(2, "predicted_traces")
    predicted = ast.literal_eval(solution[solution.index("= {") + 2:solution.rindex("}") + 1])
    assert predicted == answers
    # What the key concepts teach, as JAX does it here: weak types, static values and pytree structure retrace;
    # a float64 NumPy array (x64 off) and a new jax.jit of the same function do not.
    assert answers["scale_jit(a, two)"] == answers["repeat_jit(a, 3)"] == answers["total_jit([a, a])"] == 1
    assert answers["f(a64)"] == answers["jax.jit(square)(a)"] == 0


def test_trace_predictions_name_each_wrong_call_with_a_hint():
    answers = checks.trace_count_answers()
    checks.check_trace_predictions(dict(answers), answers, checks.TRACE_CASES_INPUTS)
    checks.check_trace_predictions({**answers, "f(a64)": 1}, answers, checks.TRACE_CASES_ARGUMENTS)  # not this part
    with pytest.raises(AssertionError, match=r"(?s)1 of these 6 .*f\(a64\): you predicted 1, JAX traced 0 .*float32"):
        checks.check_trace_predictions({**answers, "f(a64)": 1}, answers, checks.TRACE_CASES_INPUTS)
    with pytest.raises(AssertionError, match="no entry for 'total_jit"):
        checks.check_trace_predictions({k: v for k, v in answers.items() if "total" not in k}, answers,
                                       checks.TRACE_CASES_ARGUMENTS)
    for not_a_count in (True, 1.0, "1"):
        with pytest.raises(AssertionError, match="should be an int"):
            checks.check_trace_predictions({**answers, "f(b)": not_a_count}, answers, checks.TRACE_CASES_INPUTS)
    with pytest.raises(AssertionError, match="should be a dict"):
        checks.check_trace_predictions(list(answers.items()), answers, checks.TRACE_CASES_INPUTS)


@pytest.mark.parametrize("text", [
    str(jax.make_jaxpr(jax.jit(workload))(jnp.eye(16))),
    str(jax.jit(workload).trace(jnp.eye(16)).jaxpr),
    str(jax.make_jaxpr(lambda x: jnp.tanh(jnp.einsum("ij,jk->ik", x, x)))(jnp.eye(16))),
])
def test_jaxprs_of_the_same_program_read_alike(text):
    assert checks.jaxpr_canonical(text) == checks.jaxpr_canonical(str(jax.make_jaxpr(workload)(jnp.eye(16))))


def test_the_workload_s_program_is_read_from_the_primitives_at_any_size():
    """No reference function: a dot_general of x with itself contracting columns with rows, then tanh, n x n f32."""
    for n in (8, 16):
        assert checks.jaxpr_program(str(jax.make_jaxpr(workload)(jnp.eye(n)))) == checks.workload_program(n)
    checks.check_jaxpr_text(str(jax.make_jaxpr(workload)(jnp.eye(8))), n=8)
    with pytest.raises(AssertionError, match=r"at 16x16 float32 should compute dot_general -> f32\[16,16\]"):
        checks.check_jaxpr_text(str(jax.make_jaxpr(workload)(jnp.eye(8))))
    batched = str(jax.make_jaxpr(lambda x: jnp.tanh(jnp.einsum("ij,ij->ij", x, x)))(jnp.eye(16)))
    with pytest.raises(AssertionError, match="should compute"):
        checks.check_jaxpr_text(batched)
    # dimension_numbers read alike however JAX brackets them
    written = "dimension_numbers=(((1,), (0,)), ((), ()))"
    assert checks.jaxpr_program(f"b:f32[16,16] = dot_general[{written}] a a\nc:f32[16,16] = tanh b") == \
        checks.workload_program()


def test_a_jaxpr_of_another_product_is_not_the_workload_s():
    with pytest.raises(AssertionError, match="transpose"):
        checks.check_jaxpr_text(str(jax.make_jaxpr(lambda x: jnp.tanh(x @ x.T))(jnp.eye(16))))
    with pytest.raises(AssertionError, match="should compute"):
        checks.check_jaxpr_text(str(jax.make_jaxpr(lambda x, y: jnp.tanh(x @ y))(jnp.eye(16), jnp.eye(16))))


def test_an_audited_that_computes_nothing_and_forges_its_trace_is_caught():
    """A jit around a body that returns its input, whose trace() is another function's: the trace checks and the
    JAXPR check call it with the grader's matrices, so the counter counts nothing worth counting."""
    count = [0]

    def counted(x):
        count[0] += 1
        return x

    class Audited:
        def __init__(self, fn):
            self._jit = jax.jit(fn)

        def __call__(self, x):
            return self._jit(x)

        def clear_cache(self):
            self._jit.clear_cache()

        def trace(self, x):
            return jax.jit(lambda v: jnp.tanh(v @ v)).trace(x)

    audited = Audited(counted)
    for check in (checks.check_retrace_on_new_shape, checks.check_traces_follow_jit):
        with pytest.raises(AssertionError, match=r"audited should compute tanh\(x @ x\)"):
            check(audited, lambda: count[0])
    with pytest.raises(AssertionError, match=r"audited should compute tanh\(x @ x\)"):
        checks.check_jaxpr_is_of(audited, str(jax.make_jaxpr(workload)(jnp.eye(16))))


def test_a_jaxpr_saved_for_a_function_jit_did_not_make_fails():
    """A plain Python function computing the workload has no trace() to ask: a JAXPR text beside it, however right,
    is not shown to be its own (the text could be typed in)."""
    def audited(x):
        return jnp.tanh(x @ x)

    with pytest.raises(AssertionError, match=r"audited has no trace\(\)"):
        checks.check_jaxpr_is_of(audited, str(jax.make_jaxpr(workload)(jnp.eye(16))))
    checks.check_jaxpr_is_of(jax.jit(audited), str(jax.make_jaxpr(jax.jit(audited))(jnp.eye(16))))


def test_a_jaxpr_text_far_longer_than_any_jaxpr_of_the_workload_is_refused_before_it_is_read():
    """Reading a JAXPR's equations costs more than its length: 270 KB of "a:f32[1] " once took a test 250 s."""
    with pytest.raises(AssertionError, match="has 270,000 characters"):
        checks.check_jaxpr_text("a:f32[1] " * 30_000)
    text = str(jax.make_jaxpr(workload)(jnp.eye(16)))
    assert len(text) < traces.MAX_JAXPR_CHARS / 10
    checks.check_jaxpr_text(text)
