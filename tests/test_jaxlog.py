"""JAX's own account of a call (perfaudit/jaxlog.py): captured lines, and JAX's settings put back afterwards."""

import jax
import jax.numpy as jnp

from perfaudit import jaxlog


def test_a_new_shape_is_explained_and_compiled_and_the_flags_are_restored():
    before = {flag: getattr(jax.config, flag) for flag in jaxlog.FLAGS}

    @jax.jit
    def fresh(x):
        return jnp.tanh(x @ x)

    fresh(jnp.ones((3, 3)))
    with jaxlog.captured() as lines:
        fresh(jnp.ones((5, 5)))  # a new shape: traced and compiled again
        seen = len(lines)
        fresh(jnp.ones((5, 5)))  # cached: nothing to say
    assert seen > 0 and len(lines) == seen
    assert any("fresh" in line for line in lines)
    assert {flag: getattr(jax.config, flag) for flag in jaxlog.FLAGS} == before
