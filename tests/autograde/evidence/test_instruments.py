"""The grader's jit (perfaudit/autograde/evidence/instruments.py): the matrix it probes a first call with, and the
probes."""

import math

import numpy as np
import pytest

from perfaudit.autograde.evidence import instruments


def _matrix(seed, n):
    every = np.arange(n)
    return instruments.probe_entries(seed, every[:, None], every[None, :], n)


def _reported(seed, a, f=lambda v: math.tanh(v)):
    return [f"{f(float(a[i] @ a[:, j])):.9g}" for i, j in instruments.probed_at(seed, len(a))]


def test_the_probe_matrix_is_a_hash_of_seed_row_and_column_sized_for_tanh():
    a = _matrix(7, 64)
    assert np.array_equal(a, _matrix(7, 64)) and not np.array_equal(a, _matrix(8, 64))
    assert np.array_equal(instruments.probe_entries(7, 3, np.arange(64), 64), a[3])  # any entry on its own
    bound = math.sqrt(12) / 2 * 64 ** -0.25
    assert np.all(np.abs(a) <= bound) and abs(a.mean()) < 0.05
    assert abs(a.var() - 64 ** -0.5) < 0.1 * 64 ** -0.5
    assert 0.3 < np.abs(a @ a).mean() < 3  # entries of A @ A about 1: tanh far from identity and saturation


def test_the_probed_entries_follow_from_the_seed_and_stay_inside_the_matrix():
    at = instruments.probed_at(5, 16)
    assert at == instruments.probed_at(5, 16) and len(at) == instruments.PROBES
    assert all(0 <= i < 16 and 0 <= j < 16 for i, j in at)


def test_a_first_call_computes_the_workload_only_with_tanh_of_a_at_a():
    a = _matrix(11, 32).astype(np.float32).astype(np.float64)
    assert instruments.computes_workload(11, (32, 32), _reported(11, a))
    assert not instruments.computes_workload(11, (32, 32), _reported(11, a, f=lambda v: v))  # no tanh
    assert not instruments.computes_workload(12, (32, 32), _reported(11, a))  # another matrix
    zero = _matrix(0, 32).astype(np.float32).astype(np.float64)
    assert not instruments.computes_workload(0, (32, 32), _reported(0, zero))  # no seed: no first call was probed
    assert not instruments.computes_workload(11, (32, 32), _reported(11, a)[:-1])
    assert not instruments.computes_workload(11, (32, 32), ["nan"] + _reported(11, a)[1:])
    assert not instruments.computes_workload(11, (32, 32), ["x"] + _reported(11, a)[1:])


def test_a_run_gave_the_workload_of_the_grader_s_own_matrix():
    x = np.random.default_rng(1).standard_normal((8, 8)) / 3
    assert instruments.gave_workload(3, x, _reported(3, x))
    assert not instruments.gave_workload(3, x * 2, _reported(3, x))
    assert not instruments.gave_workload(3, x[:, :4], _reported(3, x))


@pytest.mark.parametrize("text, shape", [("16x16", (16, 16)), ("", ()), ("7", (7,)), ("16x-1", ("?",)),
                                         ("x".join(["1"] * 9), ("?",)), ("1234567890x1", ("?",))])
def test_a_reported_shape_is_a_few_small_ints_or_unknown(text, shape):
    assert instruments._shape(text) == shape


def test_results_of_the_grader_s_jit_polled_until_ready_are_held_as_waits():
    """is_ready() never waits: the grader lets a call's or a run's result be ready once its hold has passed since
    the first poll, so a loop that polls until True is timed as a wait, with the first call's probe read at once."""
    import jax
    import jax.numpy as jnp

    jit = instruments.GraderJit(np.random.default_rng(0))
    audited = jit(lambda v: jnp.tanh(v @ v))
    x = jax.device_put(np.eye(16, dtype=np.float32))
    out = audited(x)
    call = jit.functions[0].calls[0]
    assert out.is_ready() is False and call.span_s is None
    while not out.is_ready():
        pass
    assert call.gave_workload and call.span_s >= call.ready_hold_s
    compiled = audited.trace(x).lower().compile()
    result = compiled(x)
    while not result.is_ready():
        pass
    run = jit.functions[0].runs[0]
    assert run.span_s >= run.hold_s and instruments.gave_workload(run.seed, x, run.entries)
