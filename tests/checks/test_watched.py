"""The jit a self-check hands to measuring code (perfaudit/checks/watched.py): it notes each call, holds each result,
and notes when the caller waited for it."""

import time

import jax
import jax.numpy as jnp
import numpy as np

from perfaudit.checks.watched import HOLD_S, WatchedJit


def _x(n=16):
    return jax.device_put(np.eye(n, dtype=np.float32))


def test_a_call_waited_for_spans_its_hold_and_one_never_waited_for_has_no_span():
    jit = WatchedJit()
    audited = jit(lambda v: jnp.tanh(v @ v))
    start = time.perf_counter()
    out = audited(_x()).block_until_ready()
    waited_s = time.perf_counter() - start
    audited(_x())  # never waited for
    first, second = jit.calls
    assert first.traced and not second.traced
    assert first.shape == (16, 16) and first.dtype == "float32"
    assert HOLD_S[0] <= first.span_s <= waited_s  # a clock around the call and its wait covers the span
    assert second.span_s is None
    np.testing.assert_allclose(np.asarray(out), np.tanh(np.eye(16)), atol=1e-6)


def test_polling_is_ready_waits_out_the_hold():
    jit = WatchedJit()
    out = jit(lambda v: v + 1)(_x())
    assert not out.is_ready()  # asked at once: the hold has not passed
    while not out.is_ready():
        pass
    assert jit.calls[0].span_s >= jit.calls[0].hold_s


def test_make_jaxpr_traces_through_and_is_no_call():
    jit = WatchedJit()
    audited = jit(lambda v: jnp.tanh(v @ v))
    audited(_x()).block_until_ready()
    assert "tanh" in str(jax.make_jaxpr(audited)(_x()))
    assert len(jit.calls) == 1 and jit.jaxpr_traces == {0: [1]}
