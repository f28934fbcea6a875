"""The code notebook 5 hands out for an audit: a small training loop someone else wrote, with problems planted in it.

Each loop fits a linear model by stochastic gradient descent over a list of batches (x, y): at step i, with
lr = lr0 / (1 + LR_DECAY * i), the loss is mean((x @ w - y) ** 2) before the update, and the update is
w <- w - lr * x.T @ (x @ w - y) / len(y). Every variant computes exactly that (reference_train, in NumPy), and
returns (w, losses); what differs is how it is written, and so what it costs.

Each student audits a variant of their own, drawn from their student id (perfaudit/variants.py; the notebook's
AUDIT_VARIANT and AUDIT_SEED). Which problems each variant holds is the answer key's
(perfaudit/answer_key/answers.py), not this module's. Each loop takes `jit` (jax.jit by default), as notebook 3's
gather_evidence does, so that a counting jit can count its traces; and each variant comes with the benchmark its
author wrote (benchmark_of).

JAX is imported inside the functions: the grader imports this module for the data and the NumPy reference only.
"""

import inspect
import time

import numpy as np

LR_DECAY = 0.1  # the learning rate at step i is lr0 / (1 + LR_DECAY * i)
FEATURES = 8  # columns of each batch's x
VARIANTS = ("A", "B", "C")
# The names a finding may take: the problems a loop like these can hide.
PROBLEMS = {
    "retrace-new-shape": "jit traces and compiles again for every new input shape the loop feeds it",
    "retrace-static-argument": "a static argument (or a Python value in the cache key) that changes every step",
    "jnp-outside-jit": "jax.numpy calls outside the jitted step: each one a dispatch (and a compile at a new shape)",
    "timed-before-ready": "a benchmark that stops its clock before the loop's results are computed",
}


def learning_rate(lr0, i):
    """The learning rate at step i: lr0 / (1 + LR_DECAY * i), a Python float."""
    return lr0 / (1 + LR_DECAY * i)


# --- variant A -------------------------------------------------------------------------------------------------


def train_a(w, batches, lr0, jit=None):
    """Fit w to the batches; return (w, losses)."""
    # JAX when the loop runs: the grader imports this module for its data and reference alone
    import jax
    import jax.numpy as jnp

    jit = jit or jax.jit

    def step(w, x, y, lr):
        err = x @ w - y
        return w - lr * x.T @ err / x.shape[0], err

    step = jit(step)
    losses = []
    for i, (x, y) in enumerate(batches):
        w, err = step(w, x, y, learning_rate(lr0, i))
        losses.append(jnp.mean(err ** 2))
    return w, losses


def benchmark_a(train, w, batches, lr0):
    """Seconds the training loop takes."""
    start = time.perf_counter()
    train(w, batches, lr0)
    return time.perf_counter() - start


# --- variant B -------------------------------------------------------------------------------------------------


def train_b(w, batches, lr0, jit=None):
    """Fit w to the batches; return (w, losses)."""
    # JAX when the loop runs: the grader imports this module for its data and reference alone
    import jax
    import jax.numpy as jnp

    jit = jit or jax.jit

    def step(w, x, y, lr):
        err = x @ w - y
        return w - lr * x.T @ err / x.shape[0], err

    step = jit(step, static_argnums=3)  # lr is a hyper-parameter, so it is static
    losses = []
    for i, (x, y) in enumerate(batches):
        w, err = step(w, x, y, learning_rate(lr0, i))
        losses.append(jnp.mean(jnp.square(err)))
    return w, losses


def benchmark_b(train, w, batches, lr0):
    """Seconds the training loop takes."""
    import jax  # JAX when the benchmark runs, as in the loops

    start = time.perf_counter()
    jax.block_until_ready(train(w, batches, lr0))
    return time.perf_counter() - start


# --- variant C -------------------------------------------------------------------------------------------------


def train_c(w, batches, lr0, jit=None):
    """Fit w to the batches; return (w, losses)."""
    # JAX when the loop runs: the grader imports this module for its data and reference alone
    import jax
    import jax.numpy as jnp

    jit = jit or jax.jit

    def step(w, x, y, lr0, i):
        err = x @ w - y
        lr = lr0 / (1 + LR_DECAY * i)
        return w - lr * x.T @ err / x.shape[0], jnp.mean(err ** 2)

    step = jit(step, static_argnums=4)  # i is a Python int that picks the learning rate
    losses = []
    for i, (x, y) in enumerate(batches):
        w, loss = step(w, x, y, lr0, i)
        losses.append(loss)
    return w, losses


def benchmark_c(train, w, batches, lr0):
    """Seconds the training loop takes."""
    start = time.perf_counter()
    w, losses = train(w, batches, lr0)
    elapsed = time.perf_counter() - start
    print(f"final loss {float(losses[-1]):.4f}")
    return elapsed


_TRAIN = {"A": train_a, "B": train_b, "C": train_c}
_BENCHMARK = {"A": benchmark_a, "B": benchmark_b, "C": benchmark_c}


def _variant(variant):
    if variant not in _TRAIN:
        raise ValueError(f"AUDIT_VARIANT should be one of {', '.join(VARIANTS)}; found {variant!r}.")
    return variant


def train_of(variant):
    """The handed-out training loop of a variant: train(w, batches, lr0, jit=jax.jit) -> (w, losses)."""
    return _TRAIN[_variant(variant)]


def benchmark_of(variant):
    """The benchmark the loop's author wrote: benchmark(train, w, batches, lr0) -> seconds."""
    return _BENCHMARK[_variant(variant)]


def source_of(variant):
    """The handed-out code of a variant, as the notebook prints it."""
    return "\n\n".join(inspect.getsource(f) for f in (train_of(variant), benchmark_of(variant)))


# --- one trace per loop: what a loop without those problems does (the self-checks count its traces) ---------


def train_once(w, batches, lr0, jit=None):
    """The same loop over batches of one shape, with everything in one jitted step: one trace per loop."""
    import jax  # JAX when the loop runs, as in the handed-out loops

    jit = jit or jax.jit

    def step(w, x, y, lr):
        err = x @ w - y
        return w - lr * x.T @ err / x.shape[0], (err * err).mean()

    step = jit(step)
    losses = []
    for i, (x, y) in enumerate(batches):
        w, loss = step(w, x, y, learning_rate(lr0, i))
        losses.append(loss)
    return w, losses


def train_eager_loss(w, batches, lr0, jit=None):
    """Variant A's loop after JAX's caches are cleared (as in a fresh process): one trace per batch shape, but its
    loss, computed outside the jitted step in jax.numpy (err ** 2, jnp.mean), compiles programs of its own at each new
    shape too. So a counter of what JAX compiles counts more than the loop's traces."""
    import jax  # JAX when the loop runs, as in the handed-out loops

    jax.clear_caches()  # the jnp calls of train_a compile here, whatever shapes ran before
    return train_a(w, batches, lr0, jit)


# --- loops whose jit gets options: a trace counter must hand jax.jit the options the loop gives it --------------

STAGE_STEPS = 2  # the static stage of train_staged: a new value every STAGE_STEPS steps


def train_staged(w, batches, lr0, jit=None, by="argnums"):
    """The same loop with a static `stage` (i // STAGE_STEPS) that scales nothing (a Python int: stage * 0.0), given
    to jit as static_argnums (by="argnums") or static_argnames (by="argnames") and passed by position: one trace per
    batch shape and stage. A jit that drops those options (or, for static_argnames, the function's signature) gets
    the stage traced instead, and traces once per shape."""
    import jax  # JAX when the loop runs, as in the handed-out loops

    jit = jit or jax.jit

    def step(w, x, y, lr, stage):
        err = x @ w - y
        return w - lr * (1.0 + stage * 0.0) * x.T @ err / x.shape[0], (err * err).mean()

    step = jit(step, static_argnums=4) if by == "argnums" else jit(step, static_argnames="stage")
    losses = []
    for i, (x, y) in enumerate(batches):
        w, loss = step(w, x, y, learning_rate(lr0, i), i // STAGE_STEPS)
        losses.append(loss)
    return w, losses


def train_static_argnums(w, batches, lr0, jit=None):
    """train_staged with the stage given to jit as static_argnums."""
    return train_staged(w, batches, lr0, jit, by="argnums")


def train_static_argnames(w, batches, lr0, jit=None):
    """train_staged with the stage given to jit as static_argnames."""
    return train_staged(w, batches, lr0, jit, by="argnames")


def staged_traces(batches):
    """How many times train_staged traces its step over `batches`: once per (batch size, stage)."""
    return len({(len(y), i // STAGE_STEPS) for i, (_, y) in enumerate(batches)})


# --- data and the NumPy reference -------------------------------------------------------------------------------


def make_batches(rng, sizes, features=FEATURES):
    """Batches (x, y) of the given sizes, float32 NumPy arrays: y is a noisy linear function of x."""
    true_w = rng.standard_normal(features)
    batches = []
    for size in sizes:
        x = rng.standard_normal((int(size), features)).astype(np.float32)
        y = (x @ true_w + 0.1 * rng.standard_normal(int(size))).astype(np.float32)
        batches.append((x, y))
    return batches


def ragged_sizes(rng, steps, distinct):
    """`steps` batch sizes, `distinct` different ones among them (each at least once), from 16 to 96."""
    chosen = rng.choice(np.arange(16, 97), size=distinct, replace=False)
    sizes = np.concatenate([chosen, rng.choice(chosen, size=steps - distinct)])
    return [int(s) for s in rng.permutation(sizes)]


# A loop's batches, and how many different sizes they come in, in variant A: six of eight, so that its loop compiles
# six times a call against a fix's once, and the grader's speed-up floor holds with margin on a busy machine (four
# sizes left valid fixes below it at load 8: benchmarks/speedup_floor_under_load.py); and some sizes repeat, so that
# a counter of steps (8) is not a counter of traces (6).
STEPS, DISTINCT_SIZES = 8, 6


def data_for(variant, rng, steps=STEPS):
    """(batches, lr0) of the kind `variant`'s author trains on, new values each time: variant A gets batches of
    DISTINCT_SIZES sizes (the last batch of an epoch is shorter, some batches drop rows), variants B and C batches
    of one size (so that each problem a variant hides shows in what notebook 5 measures: in C a static step number
    retraces at every step, and batches of several sizes would add no trace a count could show); lr0 from 0.05 to
    0.2."""
    if _variant(variant) in ("B", "C"):
        sizes = [int(rng.integers(16, 97))] * steps
    else:
        sizes = ragged_sizes(rng, steps, min(DISTINCT_SIZES, steps))
    return make_batches(rng, sizes), float(rng.uniform(0.05, 0.2))


def audit_data(variant, seed):
    """(batches, lr0, one_size) notebook 5 audits with, from a student's variant and seed (perfaudit/variants.py):
    the loop's data (data_for), and as many batches of one size, the first batch's, to count traces over."""
    batches, lr0 = data_for(variant, np.random.default_rng(seed))
    one_size = make_batches(np.random.default_rng(seed + 1), [len(batches[0][1])] * len(batches))
    return batches, lr0, one_size


def reference_train(w, batches, lr0):
    """What every variant computes, in float64 NumPy: (w, losses)."""
    w = np.asarray(w, dtype=np.float64)
    losses = []
    for i, (x, y) in enumerate(batches):
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        err = x @ w - y
        losses.append(float(np.mean(err ** 2)))
        w = w - learning_rate(lr0, i) * x.T @ err / len(y)
    return w, losses
