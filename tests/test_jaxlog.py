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


def test_compiles_are_named_within_the_block_only():
    jax.clear_caches()
    with jaxlog.compiled() as names:
        jnp.pad(jnp.ones(3), (0, 2)).block_until_ready()
        jax.jit(lambda x: x + 1)(jnp.ones(7)).block_until_ready()
    assert "jit(_pad)" in names and "jit(<lambda>)" in names
    before = len(names)
    jnp.pad(jnp.ones(11), (0, 2)).block_until_ready()  # compiled, but after the block
    assert len(names) == before
