"""The fingerprints of JAX's ahead-of-time stages (perfaudit/autograde/evidence/products.py) that notebook 4's stage
check compares with the grader's own chain."""

import jax
import jax.numpy as jnp
import numpy as np

from perfaudit.autograde.evidence import products


def test_each_stage_s_fingerprint_is_the_grader_s_own_for_every_honest_chain():
    """What the stand-in sends for a stage is what the grader's own chain makes, whether the chain starts from x,
    from its shape and dtype, from a committed copy or under another matmul precision; another computation's is
    not."""
    x = jax.device_put(np.random.default_rng(1).standard_normal((13, 13)).astype(np.float32))
    expected = products.expected((13, 13), "float32")
    committed = jax.device_put(np.asarray(x), jax.devices()[0])
    for start in (x, jax.ShapeDtypeStruct(x.shape, x.dtype), committed, np.asarray(x)):
        traced = jax.jit(lambda v: jnp.tanh(v @ v)).trace(start)
        with jax.default_matmul_precision("highest"):
            also = jax.jit(lambda v: jnp.tanh(jnp.matmul(v, v))).trace(start)
        for chain in (traced, also):
            lowered = chain.lower()
            assert {"trace": products.fingerprint("trace", chain), "lower": products.fingerprint("lower", lowered),
                    "compile": products.fingerprint("compile", lowered.compile(), lowered)} == expected
    other = jax.jit(lambda v: jnp.tanh(v @ v.T)).trace(x)
    assert products.fingerprint("trace", other) != expected["trace"]
    assert products.fingerprint("lower", other.lower()) != expected["lower"]
    assert products.fingerprint("compile", other.lower().compile(), other.lower()) != expected["compile"]
    assert products.fingerprint("lower", "not a stage") == products.NONE
