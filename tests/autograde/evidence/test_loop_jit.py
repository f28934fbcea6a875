"""The grader's jit for a training loop (perfaudit/autograde/evidence/loop_jit.py), in one process: it counts every
trace of the functions it makes, with the options each was given, and, poisoned, makes their floating-point results
NaN."""

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


def test_poisoned_floats_are_nan_and_integers_kept():
    x, ints = LoopJit(poison=True)(_step, static_argnums=2)(np.ones(3, np.float32), 2, 1)
    assert np.isnan(np.asarray(x)).all()
    assert np.asarray(ints).tolist() == [2, 3, 4]
