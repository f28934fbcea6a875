"""The course's workload, tanh(x @ x), as the grader makes it itself: the JAXPR the grader compares a measured
function's with (autograde/evidence/measured.py), and the answer key's and the fixtures' JAXPR. Instructor-only: the
checks a student's copy holds read a JAXPR's structure instead (checks/traces.py, workload_program)."""

import numpy as np


def reference_jaxpr(n=16):
    """The JAXPR of tanh(x @ x) at n x n float32, made here with this process's JAX."""
    # JAX on first use: the graders import this module (autograde/evidence/measured.py) without running JAX
    import jax
    import jax.numpy as jnp

    return str(jax.make_jaxpr(lambda x: jnp.tanh(x @ x))(jax.ShapeDtypeStruct((n, n), np.float32)))
