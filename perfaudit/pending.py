"""What a benchmark's clock misses: a training loop whose results still wait on real work when it returns.

The handed-out loops are small: when one returns, the work JAX has not finished is a step or two, microseconds, far
below what separates two runs of the loop. To see whether a benchmark's clock waits for the results, notebook 5
hands it the loop with work still running at the end: WithPendingWork(train) runs the loop, then dispatches a chain
of matrix products that takes about PENDING_S on this machine (JAX runs it asynchronously, so the call returns at
once) and returns the loop's weights plus 0 times its result: the weights are ready only when that work is done.

    loop = pending.WithPendingWork(original_train)
    reading_s, missed_s = loop.benchmarked(benchmark, w0, batches, lr0)

missed_s is how long after the benchmark's clock stopped the results were ready: 0.0 when they were ready at that
moment. Whether they were is seen at the clock's last reading itself, not from durations: a clock that waits finds
them ready every time, whatever else the machine runs; one that stops when the loop returns finds them pending,
unless its thread waited for a core longer than the whole pending work, so the benchmark runs RUNS times and the
run that missed most is the one reported.
"""

import threading
import time

from perfaudit.handout import FEATURES

PENDING_S = 0.3  # the work still running when the loop returns, on this machine, about
SIZE = 256  # the matrix the pending work multiplies, SIZE x SIZE float32
RUNS = 3  # runs of the benchmark; the one that missed most is reported


class WithPendingWork:
    """train(w, batches, lr0, jit) with about PENDING_S of real work that its weights wait on, dispatched when the
    loop is done. `pending_s`: that work alone, synchronized, measured when this is made."""

    def __init__(self, train, seconds=PENDING_S):
        import jax  # JAX when a loop is made: the graders import nothing of this module
        import jax.numpy as jnp
        import numpy as np

        self.train, self.out = train, None
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
        w, losses = self.train(w, batches, lr0) if jit is None else self.train(w, batches, lr0, jit)
        self.out = (self._work(self._a, self._rounds, w), losses)  # returns at once; w waits on the work
        return self.out

    def benchmarked(self, benchmark, w, batches, lr0, runs=RUNS):
        """(seconds benchmark(self, w, batches, lr0) read, seconds after its clock stopped until the results were
        ready) of the run, of `runs`, that missed most; the second is 0.0 when they were ready as the clock stopped."""
        return max((self._clocked(benchmark, w, batches, lr0) for _ in range(runs)), key=lambda run: run[1])

    def _clocked(self, benchmark, w, batches, lr0):
        """One run of benchmark, with time.perf_counter watched in this thread while it runs: at each reading after
        the loop returned, whether its results were ready then. The benchmark's last reading is its clock's stop."""
        import jax  # as in __init__

        clock, thread, readings = time.perf_counter, threading.get_ident(), []

        def watched():
            now = clock()
            if self.out is not None and threading.get_ident() == thread:
                leaves = jax.tree.leaves(self.out)  # NumPy leaves are ready by being there
                readings.append((now, all(getattr(leaf, "is_ready", lambda: True)() for leaf in leaves)))
            return now

        self.out = None
        time.perf_counter = watched
        try:
            reading_s = benchmark(self, w, batches, lr0)
        finally:
            time.perf_counter = clock
        jax.block_until_ready(self.out)
        ready_at = clock()
        if not readings:
            raise ValueError("the benchmark read no time.perf_counter() after the loop returned: it is not a clock "
                             "around the loop.")
        stopped_at, ready_then = readings[-1]
        return reading_s, 0.0 if ready_then else ready_at - stopped_at
