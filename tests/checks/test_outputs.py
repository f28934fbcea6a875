"""The workload's output checks (perfaudit/checks/outputs.py): the identity, random matrices, the tolerance of
the matrix-product precision in effect.

Each check passes on right answers and fails, with a useful message, on wrong ones."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit import checks


def workload(x):
    return jnp.tanh(x @ x)


def hardcoded_identity(x):
    return np.where(np.eye(x.shape[0]) == 1, 0.7615941559557649, 0.0)


def test_identity_output_passes_and_reports_the_wrong_entry():
    checks.check_identity_output(jax.jit(workload))
    with pytest.raises(AssertionError, match=r"expected 0\.761594 at \[0, 0\], found 1\.000000"):
        checks.check_identity_output(lambda x: x)


def identity_with_diagonal(value):
    return lambda x: np.where(np.eye(x.shape[0]) == 1, value, 0.0)


TPU_TANH_OF_ONE = 0.761597  # a TPU v5e's float32 tanh(1) (jax 0.10.2), 2.5e-6 from float64's 0.761594


@pytest.mark.parametrize("backend, accepts_the_tpu_value", [("cpu", False), ("tpu", True), ("gpu", True),
                                                             ("some-new-backend", True)])
def test_the_identity_tolerance_follows_the_backends_tanh(monkeypatch, backend, accepts_the_tpu_value):
    monkeypatch.setattr(checks.outputs, "matmul_setting", lambda: [None, backend])
    checks.check_identity_output(identity_with_diagonal(checks.IDENTITY_DIAGONAL))
    if accepts_the_tpu_value:
        checks.check_identity_output(identity_with_diagonal(TPU_TANH_OF_ONE))
    else:
        with pytest.raises(AssertionError, match=f"tolerance 1e-06 for float32 tanh on the {backend} backend"):
            checks.check_identity_output(identity_with_diagonal(TPU_TANH_OF_ONE))
    # A wrong workload fails on every backend by far more than any tolerance: no tanh, tanh(2I), sin.
    for wrong in (1.0, np.tanh(2.0), np.sin(1.0)):
        with pytest.raises(AssertionError, match=r"expected 0\.761594 at \[0, 0\]"):
            checks.check_identity_output(identity_with_diagonal(wrong))
    assert checks.elementwise_tolerance(backend)[0] * 1000 < abs(np.sin(1.0) - checks.IDENTITY_DIAGONAL)


def test_random_output_catches_a_hard_coded_identity():
    checks.check_identity_output(hardcoded_identity)
    checks.check_random_output(jax.jit(workload))
    with pytest.raises(AssertionError, match="tanh\\(A @ A\\)"):
        checks.check_random_output(hardcoded_identity)


def test_random_output_messages_name_the_call_they_are_given():
    with pytest.raises(AssertionError, match=r"^workload\(A\) should be tanh\(A @ A\) for a random \d+x\d+ matrix A: "):
        checks.check_random_output(hardcoded_identity)
    with pytest.raises(AssertionError, match=r"^audited\(A\) should be tanh\(A @ A\) for a random"):
        checks.check_random_output(hardcoded_identity, what="audited(A)")
    with pytest.raises(AssertionError, match=r"^audited\(A\) for a random \d+x\d+ matrix A should return an array"):
        checks.check_random_output(lambda x: object(), what="audited(A)")


def bfloat16_pass(x):
    """What one bfloat16 pass computes (a TPU's default): the inputs rounded to bfloat16, products summed in float32.
    The CPU backend ignores a bfloat16 precision setting and computes in float32, so this makes the error real."""
    xb = x.astype(jnp.bfloat16)
    return jnp.tanh(jnp.matmul(xb, xb, preferred_element_type=jnp.float32))


def test_output_checks_hold_under_bfloat16_matmul_precision():
    rngs = [np.random.default_rng(seed) for seed in range(8)]  # sizes 5..47 drawn by each
    with jax.default_matmul_precision("bfloat16"):
        assert checks.output_tolerance()[0] == checks.MATMUL_TOLERANCE["bfloat16"]
        for fn in (workload, bfloat16_pass):
            checks.check_identity_output(jax.jit(fn))
            for rng in rngs:
                checks.check_random_output(jax.jit(fn), rng=rng)
        with pytest.raises(AssertionError, match="tanh\\(A @ A\\)"):
            checks.check_random_output(hardcoded_identity)
    # Under the float32 products the CPU computes by default, the same bfloat16 error is a wrong answer.
    assert checks.output_tolerance() == (1e-4, "float32 matrix products: jax_default_matmul_precision=None on the "
                                         "cpu backend")
    with pytest.raises(AssertionError, match="tolerance 0.0001 for float32 matrix products"):
        checks.check_random_output(jax.jit(bfloat16_pass), rng=np.random.default_rng(0))


@pytest.mark.parametrize("setting, backend, precision", [
    (None, "cpu", "float32"), (None, "gpu", "tensorfloat32"), (None, "tpu", "bfloat16"), ("default", "tpu", "bfloat16"),
    ("highest", "tpu", "float32"), ("float32", "gpu", "float32"), ("high", "tpu", "tensorfloat32"),
    ("tensorfloat32", "gpu", "tensorfloat32"), ("bfloat16", "cpu", "bfloat16"), ("BF16_BF16_F32", "gpu", "bfloat16"),
    ("BF16_BF16_F32_X3", "tpu", "tensorfloat32"), ("BF16_BF16_F32_X6", "tpu", "float32"),
    ("TF32_TF32_F32_X3", "gpu", "float32"), ("F32_F32_F32", "gpu", "float32"), ("ANY_F8_ANY_F8_F32", "gpu", "bfloat16"),
    (None, "metal", "bfloat16"),
])
def test_the_tolerance_follows_the_matmul_precision_in_effect(setting, backend, precision):
    assert checks.matmul_precision_class(setting, backend) == precision
    tolerances = [checks.MATMUL_TOLERANCE[p] for p in ("float32", "tensorfloat32", "bfloat16")]
    assert tolerances == sorted(tolerances), "a coarser precision never gets a tighter tolerance"
