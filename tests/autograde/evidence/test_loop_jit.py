"""The grader's jit for a training loop (perfaudit/autograde/evidence/loop_jit.py), in one process: it counts every
trace of the functions it makes, with the options each was given, and, restarted, gives its programs other weights in
place of the ones the loop was given."""

import jax
import jax.numpy as jnp
import numpy as np

from perfaudit.autograde.evidence.loop_jit import LoopJit


def _step(x, n, stage):
    return x * stage, jnp.arange(3) + n


def test_each_trace_is_counted_with_the_loop_s_options_kept():
    jit = LoopJit()
    step = jit(_step, static_argnames="stage")
    for rows, stage in ((4, 1), (4, 1), (6, 1), (6, 2)):
        step(np.ones(rows, np.float32), 2, stage)
    assert jit.traces == 3  # one per (shape, stage); the repeat reuses its trace


def test_restarted_programs_take_the_other_weights_wherever_the_given_ones_are_passed_in():
    given, instead = np.arange(1.0, 4.0), np.arange(10.0, 13.0)
    jit = LoopJit(restart=(given.tolist(), instead.tolist()))
    twice = jit(lambda w, k: (w * k, w.sum()), static_argnums=1)
    doubled, total = twice(np.float32(given), 2)
    assert np.asarray(doubled).tolist() == [20.0, 22.0, 24.0] and float(total) == 33.0
    column = twice(given.reshape(3, 1), 1)[0]  # reshaped and float64 in, as a loop may pass them: still the weights
    assert np.asarray(column).ravel().tolist() == instead.tolist()
    for other in (given + 0.5, given[:2], np.int32([1, 2, 3])):  # other values, sizes and kinds pass as they are
        assert np.asarray(twice(other, 1)[0]).tolist() == np.asarray(other).tolist()
    compiled = jit(lambda w: w + 1).lower(np.float32(given)).compile()  # ahead of time: the same program
    assert np.asarray(compiled(np.float32(given))).tolist() == (instead + 1).tolist()
    packed = jit(lambda state: state * 1)(np.float32([7.0, *given, 8.0]))  # packed with other values
    assert np.asarray(packed).tolist() == [7.0, *instead, 8.0]
    closed_over = np.float32(given)
    assert np.asarray(jit(lambda k: closed_over * k)(np.float32(2))).tolist() == (2 * instead).tolist()


def test_each_trace_says_whether_its_program_computes_a_step():
    jit = LoopJit()
    x = np.ones((4, 3), np.float32)
    jit(lambda x, w: x @ w)(x, np.ones(3, np.float32))  # a matrix product
    jit(lambda x, w: (x * w).sum(1))(x, np.ones(3, np.float32))  # a product summed
    jit(lambda x: jnp.cumsum(jnp.stack([x, x]), 0)[-1] @ jnp.ones(3))(x)  # inside another primitive's program
    assert (jit.traces, jit.computing) == (3, 3)
    jit(lambda x: x + 0.0)(x)  # an identity, a token
    jit(lambda x, stage: x * stage, static_argnames="stage")(x, stage=2)  # a product never summed
    def on_the_host(x, w):  # the product in the program, the step's values from NumPy
        return jax.pure_callback(lambda x, w: np.float32(x @ w), jax.ShapeDtypeStruct((4,), jnp.float32), x, w) + x @ w

    jit(on_the_host)(x, np.ones(3, np.float32))
    assert (jit.traces, jit.computing) == (6, 3)  # a product beside a call back into Python computes no step in JAX


def test_a_restarted_program_promotes_types_as_the_function_s_own_trace_does():
    """With 64-bit types on, a Python float is a weak float64: float32 weights times it stay float32 in the student's
    program, and must in the restarted one too (a float64 result would be a new shape of the cache key, a retrace)."""
    with jax.enable_x64(True):
        given = np.arange(1.0, 4.0)
        jit = LoopJit(restart=(given.tolist(), (given + 1).tolist()))
        out = jit(lambda w, lr: w * lr)(np.float32(given), 0.5)
        assert out.dtype == np.float32 and np.asarray(out).tolist() == ((given + 1) * 0.5).tolist()


def test_a_program_made_inside_the_student_s_own_jit_closing_over_its_values_is_restarted():
    """The step made with the grader's jit inside the student's own jax.jit, closing over that trace's values: its
    constants are tracers of the enclosing trace, neither read as NumPy (an error) nor left as they are."""
    given = np.arange(1.0, 4.0)
    jit = LoopJit(restart=(given.tolist(), (given + 1).tolist()))

    @jax.jit
    def outer(w):
        return jit(lambda: w * 2)()

    assert np.asarray(outer(np.float32(given))).tolist() == ((given + 1) * 2).tolist()


def _batches(sizes=(5, 9, 7)):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((n, 3)).astype(np.float32) for n in sizes]


def test_the_watch_sees_each_batch_however_a_fix_hands_it_to_its_jitted_functions():
    xs = _batches()
    rows = max(len(x) for x in xs)
    padded = [np.pad(x, ((0, rows - len(x)), (0, 0))) for x in xs]
    ways = {
        "as given": lambda jit: [jit(lambda x: x.sum())(x) for x in xs],
        "padded, one buffer refilled": lambda jit: [_refilled(jit, xs, rows)],
        "stacked": lambda jit: jit(lambda s: s.sum())(np.stack(padded)),
        "a tuple, float64": lambda jit: jit(lambda t: sum(a.sum() for a in t))(tuple(np.float64(x) for x in xs)),
        "joined with y, transposed": lambda jit: [jit(lambda a: a.sum())(np.hstack([x, x[:, :1]]).T) for x in xs],
        "a constant it closes over": lambda jit: jit(lambda k: (jnp.asarray(np.stack(padded)) * k).sum())(2.0),
        "inside a scan": lambda jit: jax.lax.scan(lambda c, x: (c + jit(lambda x: x.sum())(x), None), 0.0,
                                                  np.stack(padded)),
        "inside the student's own jax.jit": lambda jit: [jax.jit(lambda x: jit(lambda x: x.sum())(x))(x) for x in xs],
        "compiled ahead of time": lambda jit: [_compiled(jit, padded[0])(x) for x in padded],
    }
    for way, run in ways.items():
        jit = LoopJit(watch=xs)
        jax.block_until_ready(run(jit))
        assert jit.fed() == {0, 1, 2}, way


def _compiled(jit, like):
    return jit(lambda x: x.sum()).lower(like).compile()


def _refilled(jit, xs, rows):
    step, buffer = jit(lambda x: x.sum()), np.zeros((rows, 3), np.float32)
    for x in xs:  # a loop may fill one buffer at each step: each call's batch is kept as it was then
        buffer[:] = 0
        buffer[:len(x)] = x
        step(buffer)


def test_the_watch_misses_batches_that_never_reach_a_jitted_function():
    xs = _batches()
    jit = LoopJit(watch=xs)
    jit(lambda x: x.sum())(xs[0])  # the first step only
    jit(lambda x: x.sum())(xs[1][1:])  # a batch without its first row
    jit(lambda x: x.sum())(xs[2] + 1e-3)  # other values
    jax.eval_shape(jit(lambda x: x.sum()), xs[1])  # traced, never run
    assert jit.fed() == {0}
    assert LoopJit().fed() == set()  # nothing watched
