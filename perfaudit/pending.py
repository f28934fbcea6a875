"""What a benchmark's clock misses: a training loop whose results still wait on real work when it returns.

The handed-out loops are small: when one returns, the work JAX has not finished is a step or two, microseconds, far
below what separates two runs of the loop. To see whether a benchmark's clock waits for the results, notebook 5
hands it the loop with work still running at the end: WithPendingWork(train) runs the loop, then dispatches a chain
of matrix products that takes about PENDING_S on this machine (JAX runs it asynchronously, so the call returns at
once) and returns the loop's weights plus 0 times its result: the weights are ready only when that work is done.

    loop = pending.WithPendingWork(original_train)
    reading = benchmark(loop, w0, batches, lr0)
    loop.missed_by(reading)   # how long after the benchmark's clock stopped the results were ready

A clock that waits for the results has them ready when it stops (missed_by about 0); one that stops when the loop
returns misses most of the pending work (missed_by about pending_s).
"""

import time

from perfaudit.handout import FEATURES

PENDING_S = 0.3  # the work still running when the loop returns, on this machine, about
SIZE = 256  # the matrix the pending work multiplies, SIZE x SIZE float32


class WithPendingWork:
    """train(w, batches, lr0, jit) with about PENDING_S of real work that its weights wait on, dispatched when the
    loop is done. `pending_s`: that work alone, synchronized, measured when this is made."""

    def __init__(self, train, seconds=PENDING_S):
        import jax  # JAX when a loop is made: the graders import nothing of this module
        import jax.numpy as jnp
        import numpy as np

        self.train, self.called_at, self.out = train, None, None
        a = np.random.default_rng(0).standard_normal((SIZE, SIZE)).astype(np.float32) / SIZE ** 0.5
        self._a, self._w = jax.device_put(a), jax.device_put(np.zeros(FEATURES, np.float32))

        def work(a, rounds, w):
            return w + 0.0 * jax.lax.fori_loop(0, rounds, lambda _, m: jnp.tanh(m @ a), a).sum()

        self._work = jax.jit(work)
        # compiled here for the loops' weights, never while a loop is timed
        jax.block_until_ready(self._work(self._a, 1, np.zeros(FEATURES, np.float32)))
        per_round = self._timed(8) / 8
        self._rounds = max(1, round(seconds / per_round))
        self.pending_s = self._timed(self._rounds)

    def _timed(self, rounds):
        import jax  # as in __init__

        started = time.perf_counter()
        jax.block_until_ready(self._work(self._a, rounds, self._w))
        return time.perf_counter() - started

    def __call__(self, w, batches, lr0, jit=None):
        self.called_at = time.perf_counter()
        w, losses = self.train(w, batches, lr0) if jit is None else self.train(w, batches, lr0, jit)
        self.out = (self._work(self._a, self._rounds, w), losses)  # returns at once; w waits on the work
        return self.out

    def missed_by(self, reading_s):
        """Seconds from when a clock started at the latest call and reading reading_s stopped until that call's
        results were all ready (about 0, or less, when the clock waited for them)."""
        import jax  # as in __init__

        jax.block_until_ready(self.out)
        return time.perf_counter() - (self.called_at + reading_s)
