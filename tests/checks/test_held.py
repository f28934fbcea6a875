"""Results whose readiness someone else decides (perfaudit/checks/held.py), and the slow function that makes them."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit.checks import held


class Inner:
    """A result that counts how often it was waited for."""

    def __init__(self, value):
        self.value, self.blocked = np.asarray(value, dtype=np.float32), 0
        self.shape, self.dtype = self.value.shape, self.value.dtype

    def block_until_ready(self):
        self.blocked += 1
        return self

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.value, dtype=dtype)

    def __getitem__(self, index):
        return self.value[index]

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return iter(self.value)

    def __float__(self):
        return float(self.value.ravel()[0])

    def __add__(self, other):
        return self.value + other

    def __radd__(self, other):
        return other + self.value

    def __neg__(self):
        return -self.value

    def __getattr__(self, name):  # everything else NumPy's, as a jax.Array has it (sum, T, astype, tolist, ...)
        return getattr(self.value, name)


def _held(value=(1.5, 2.5)):
    waits = []
    inner = Inner(value)
    return held.HeldResult(inner, lambda: waits.append(time.perf_counter())), inner, waits


def test_shape_and_dtype_need_no_wait():
    result, inner, waits = _held()
    assert (result.shape, result.dtype, len(result)) == ((2,), np.float32, 2)
    assert waits == [] and inner.blocked == 0
    with pytest.raises(AttributeError):
        result._private  # noqa: B018


@pytest.mark.parametrize("read", [
    lambda r: r.block_until_ready(), lambda r: np.asarray(r), lambda r: r[0], lambda r: list(r), lambda r: repr(r),
    lambda r: str(r), lambda r: f"{r}", lambda r: r + 1, lambda r: 1 + r, lambda r: r == r, lambda r: -r,
    lambda r: jax.block_until_ready(r), lambda r: r.value])
def test_every_way_of_reading_the_values_waits_for_the_grader_once(read):
    result, inner, waits = _held()
    read(result)
    read(result)
    assert len(waits) == 1 and inner.blocked == 1


def test_a_held_jax_result_reads_as_its_values():
    result = held.HeldResult(jnp.arange(3.0), lambda: None)
    assert float(result[2]) == 2.0 and int(held.HeldResult(jnp.float32(7.9), lambda: None)) == 7
    assert bool(held.HeldResult(jnp.float32(1), lambda: None)) and jnp.asarray(result).sum() == 3.0
    assert held.placeholder().shape == (1, 1) and held.placeholder().dtype == np.float32


def test_a_fresh_jit_traces_on_its_first_call_whatever_ran_before():
    traced = []

    def fn(v):
        traced.append(v.shape)
        return v * 2
    jax.jit(fn)(jnp.ones(3))
    fresh = held.FreshJit(fn)
    assert fresh._jitted is None and traced == [(3,)]
    assert float(fresh(jnp.ones(3))[0]) == 2.0 and traced == [(3,), (3,)]
    fresh(jnp.ones(3))
    assert traced == [(3,), (3,)]


def test_each_wait_takes_its_delay_in_turn_and_the_last_one_after():
    slow = held.SlowFunction([0.02, 0.0])
    assert (slow.delay_s, slow.call_delay_s) == (0.02, 0.0)
    first, second, third = slow(None), slow(None), slow(None)
    assert slow.waited(0) is None  # never waited for
    first.block_until_ready()
    second.block_until_ready()
    third.block_until_ready()
    assert slow.waited(0) >= 0.02 and slow.waited(1) < 0.02 and slow.waited(2) < 0.02
    assert len(slow.released_at) == 3 and slow.arrived_at == [] and slow.waited(3) is None


def test_a_wrapped_computation_s_result_is_handed_back_once_ready():
    slow = held.SlowFunction([0.0], wrapped=lambda x: jnp.tanh(x @ x))
    assert np.allclose(np.asarray(slow(jnp.eye(2))), np.tanh(np.eye(2)))


def test_a_result_asked_for_before_its_call_is_never_recorded_as_released():
    """With a delay inside each call, a wait asked for while no call is pending (the student's process asking the
    grader before its call) is answered at once and recorded nowhere: a release never comes before its call."""
    slow = held.SlowFunction([0.01], call_delays_s=[0.01])
    slow.hold_result(time.perf_counter())
    assert slow.released_at == [] and slow.waited(0) is None
    slow(jnp.eye(2)).block_until_ready()
    assert len(slow.released_at) == len(slow.arrived_at) == 1 and slow.waited(0) >= 0.02


def test_a_held_result_is_a_jax_array_and_a_leaf():
    """Honest code guards its wait with isinstance(out, jax.Array): a held result must pass it, and stay whole in
    jax.tree_util (a stage that looks for held results among the leaves finds it)."""
    result, _, waits = _held()
    assert isinstance(result, jax.Array) and isinstance(result, held.HeldResult)
    assert jax.tree_util.tree_leaves([result, {"a": result}]) == [result, result]
    assert (result.shape, result.dtype, result.ndim, result.size) == ((2,), np.float32, 1, 2) and waits == []


@pytest.mark.parametrize("read", [
    lambda r: r.addressable_data(0).block_until_ready(), lambda r: np.asarray(r.addressable_data(0)),
    lambda r: jax.block_until_ready(r.addressable_data(0)), lambda r: jax.device_get(r), lambda r: r.sum(),
    lambda r: r.T, lambda r: r.astype(np.int32), lambda r: r.tolist()])
def test_a_wait_through_jax_array_s_methods_waits_for_the_grader_once(read):
    result, inner, waits = _held()
    read(result)
    read(result)
    assert len(waits) == 1 and inner.blocked >= 1  # one device's data waits on the same array as the whole


def test_addressable_data_waits_only_when_used():
    """jax.Array.addressable_data(i) hands out one device's data without waiting: only waiting for it, or reading
    it, waits for the whole held result."""
    result, inner, waits = _held()
    shard = result.addressable_data(0)
    assert isinstance(shard, jax.Array) and waits == [] and inner.blocked == 0
    assert float(np.asarray(shard)[1]) == 2.5 and len(waits) == 1
    result = held.HeldResult(jnp.arange(3.0), lambda: waits.append(0))
    assert np.asarray(result.addressable_data(0)).tolist() == [0.0, 1.0, 2.0] and len(waits) == 2


def test_is_ready_never_waits_and_polling_until_true_waits_as_block_until_ready_does():
    slow = held.SlowFunction([0.03])
    out = slow(None)
    assert out.is_ready() is False and slow.waited(0) is None  # asked once and gone on: not waited for
    while not out.is_ready():
        pass
    assert slow.waited(0) >= 0.03 and out.is_ready() and len(slow.released_at) == 1
    out.block_until_ready()
    out.addressable_data(0).block_until_ready()
    assert len(slow.released_at) == 1  # released by the poll: no other wait asked for


def test_a_shard_polls_through_its_result():
    slow = held.SlowFunction([0.02])
    shard = slow(None).addressable_data(0)
    while not shard.is_ready():
        pass
    assert slow.waited(0) >= 0.02 and len(slow.released_at) == 1


def test_with_no_one_to_ask_is_ready_waits():
    result, inner, waits = _held()
    assert result.is_ready() and len(waits) == 1 and inner.blocked == 1


@pytest.mark.parametrize("passed", [lambda out: jnp.add(out, 1), lambda out: jax.jit(lambda v: v * 2)(out),
                                    lambda out: jnp.sum(out)])
def test_jax_refuses_a_held_result_passed_in_and_the_student_is_told_what_to_do(passed):
    """jax.jit and jax.numpy's functions refuse an object that converts through __jax_array__ only, and letting a
    held result through would take JAX's internals (docs/grading-security.md). JAX's refusal is the one the
    course recognises (held.refused_by_jax), and the ways its message gives the student work."""
    out = held.HeldResult(jnp.arange(3.0), lambda: None)
    with pytest.raises(ValueError) as refused:
        passed(out)
    assert held.refused_by_jax(refused.value), "JAX's refusal changed: update held.JAX_REFUSAL"
    assert "np.asarray(out)" in held.PASSED_INTO_JAX and "jax.device_get(out)" in held.PASSED_INTO_JAX
    assert np.allclose(np.asarray(passed(np.asarray(out))), np.asarray(passed(jnp.arange(3.0))))
    assert np.allclose(np.asarray(passed(jax.device_get(out))), np.asarray(passed(jnp.arange(3.0))))


def test_a_slow_loop_s_call_is_waited_for_only_once_every_array_it_returned_is():
    slow = held.SlowFunction([0.001], call_delays_s=[0.001], leaves=3)
    w, losses = slow(np.eye(2))
    assert len(losses) == 2 and slow.waited(0) is None
    w.block_until_ready()
    losses[0].block_until_ready()
    assert slow.waited(0) is None  # one array still held
    losses[1].block_until_ready()
    assert slow.waited(0) >= 0.002  # from the call's arrival until the last array was let be ready
