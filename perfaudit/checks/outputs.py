"""The workload's output: the identity and random matrices, compared with NumPy at the tolerance of the
matrix-product precision of the process that checks (the grader's own device and settings, never a claim of the
student's process)."""

import math

import numpy as np

from perfaudit.checks.failure import fail

IDENTITY_DIAGONAL = math.tanh(1.0)  # tanh(I @ I) = tanh(I): 0.761594 on the diagonal, 0 elsewhere


def as_matrix(out, what):
    try:
        return np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError):
        fail(f"{what} should return an array; found {type(out).__name__}.")


def compare(found, expected, what, atol, assumed=None):
    """Fail with the worst entry when `found` differs from `expected` by more than atol (which assumes `assumed`)."""
    if found.shape != expected.shape:
        fail(f"{what} should have shape {expected.shape}; found shape {found.shape}.")
    error = np.abs(found - expected)
    if not np.all(np.isfinite(found)) or error.max() > atol:
        i, j = np.unravel_index(np.nanargmax(np.where(np.isfinite(error), error, np.inf)), error.shape)
        fail(
            f"{what}: expected {expected[i, j]:.6f} at [{i}, {j}], found {found[i, j]:.6f} "
            f"(tolerance {atol:g}{' for ' + assumed if assumed else ''})."
        )


def device_matrix(a):
    import jax  # JAX on first use: see perfaudit/checks/__init__.py

    # device_put, not jnp.eye: jnp.eye compiles small jits of its own.
    return jax.device_put(np.asarray(a, dtype=np.float32))


# Elementwise accuracy. The identity's products are exact at every precision, so what is left is tanh's own error
# where it runs: float32 tanh on the CPU backend is within 1e-7 of float64 NumPy; a TPU v5e (jax 0.10.2) gives
# 0.761597 on the diagonal for 0.761594 (2.5e-6), and other accelerators' fast approximations may differ by as much.
# An unknown or accelerator backend gets 2e-5, several times the error seen; a wrong workload (no tanh: 1.0 on the
# diagonal; tanh(2I): 0.964) is off by more than 0.2.
ELEMENTWISE_TOLERANCE = {"cpu": 1e-6}
ACCELERATOR_ELEMENTWISE_TOLERANCE = 2e-5


def elementwise_tolerance(backend):
    """The tolerance for tanh(I @ I) computed in float32 on backend: (atol, words saying what it assumes)."""
    backend = str(backend).lower()
    atol = ELEMENTWISE_TOLERANCE.get(backend, ACCELERATOR_ELEMENTWISE_TOLERANCE)
    return atol, f"float32 tanh on the {backend} backend"


def check_identity_output(workload, n=16):
    """workload(I) must equal tanh(I @ I) = tanh(I), as NumPy computes it, within the accuracy of float32 tanh on the
    backend of the process that checks (elementwise_tolerance)."""
    eye = np.eye(n)
    found = as_matrix(workload(device_matrix(eye)), f"workload(I) for the {n}x{n} identity")
    expected = np.tanh(eye @ eye)
    atol, assumed = elementwise_tolerance(matmul_setting()[1])
    compare(
        found,
        expected,
        f"workload(I) should be {IDENTITY_DIAGONAL:.6f} on the diagonal and 0 elsewhere",
        atol=atol,
        assumed=assumed,
    )


def random_matrix(rng, n):
    """An n x n float32 matrix of scaled normal entries: far from the identity, tanh(A @ A) not saturated."""
    return (rng.standard_normal((n, n)) / math.sqrt(n)).astype(np.float32)


# Matrix-product precision. The reference is float64 NumPy; the tolerance for a random matrix follows the precision
# of float32 matrix products where the workload runs: jax_default_matmul_precision (jax.config.update, or the
# jax.default_matmul_precision context), or when it is unset the backend's default. The CPU backend computes float32
# products whatever the setting; TPUs default to one bfloat16 pass and recent NVIDIA GPUs to TF32, where the error
# of tanh(A @ A) for these matrices reaches ~3.5e-3 (bfloat16 inputs) and ~7e-4 (TF32 inputs), measured here by
# rounding the inputs on CPU (on an H200 with jax 0.11.2 the default gives ~4e-4: TF32; 'highest' ~1.6e-7, as on
# CPU). Each tolerance is several times the largest error seen, tanh's own error (ELEMENTWISE_TOLERANCE) included:
# a TPU v5e's default precision gave 2.8e-3 against bfloat16's 2e-2. The loosest is bfloat16's, whatever the setting
# claims: a wrong workload (no tanh, x @ x.T, sin) is off by far more than 2e-2.
MATMUL_TOLERANCE = {"float32": 1e-4, "tensorfloat32": 5e-3, "bfloat16": 2e-2}
BACKEND_DEFAULT_PRECISION = {"cpu": "float32", "gpu": "tensorfloat32", "cuda": "tensorfloat32",
                             "rocm": "tensorfloat32", "tpu": "bfloat16"}
_PRECISION_NAMES = {"highest": "float32", "float32": "float32", "high": "tensorfloat32",
                    "tensorfloat32": "tensorfloat32", "bfloat16": "bfloat16"}


def matmul_precision_class(setting, backend):
    """The precision class (a MATMUL_TOLERANCE key) of float32 matrix products under jax_default_matmul_precision
    = setting on backend: a name, an algorithm such as 'BF16_BF16_F32_X3', or None/'default' for the backend's
    default. An unknown backend or algorithm counts as bfloat16, the loosest class."""
    if setting in (None, "default", "DEFAULT"):
        return BACKEND_DEFAULT_PRECISION.get(str(backend).lower(), "bfloat16")
    setting = str(setting)
    if setting.lower() in _PRECISION_NAMES:
        return _PRECISION_NAMES[setting.lower()]
    operands = setting.upper().split("_")[0]  # an algorithm: the operands' type, then the passes
    passes = setting.upper().rsplit("_X", 1)[1] if "_X" in setting.upper() else "1"
    if operands.startswith(("F32", "F64")) or (operands in ("BF16", "TF32") and passes in ("6", "9")) or \
            (operands == "TF32" and passes == "3"):
        return "float32"
    if operands in ("TF32", "F16") or (operands == "BF16" and passes == "3"):
        return "tensorfloat32"
    return "bfloat16"


def matmul_setting():
    """[jax_default_matmul_precision, default backend] of this process: the grader's own when it grades (a student's
    process that claims another backend or precision cannot widen the tolerance), the student's own when the
    notebook checks itself."""
    import jax  # JAX on first use: see perfaudit/checks/__init__.py

    return [jax.config.jax_default_matmul_precision, jax.default_backend()]


def output_tolerance():
    """(tolerance, words saying which precision it assumes) for a random matrix's tanh(A @ A)."""
    setting, backend = matmul_setting()
    precision = matmul_precision_class(setting, backend)
    return MATMUL_TOLERANCE[precision], (f"{precision} matrix products: jax_default_matmul_precision={setting!r} on "
                                         f"the {backend} backend")


def check_random_output(workload, rng=None, what="workload(A)"):
    """workload(A) must equal tanh(A @ A) for a random A of a random size: a hard-coded answer fails. The tolerance
    follows the matrix-product precision in effect where the workload runs (MATMUL_TOLERANCE). what: the call as the
    messages name it (the grader's measured checks name the function a student timed)."""
    rng = rng or np.random.default_rng()
    n = int(rng.integers(5, 48))
    a = random_matrix(rng, n)
    atol, assumed = output_tolerance()
    found = as_matrix(workload(device_matrix(a)), f"{what} for a random {n}x{n} matrix A")
    expected = np.tanh(a.astype(np.float64) @ a.astype(np.float64))
    compare(found, expected, f"{what} should be tanh(A @ A) for a random {n}x{n} matrix A", atol=atol,
            assumed=assumed)
