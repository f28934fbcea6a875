"""What a benchmark's clock misses (perfaudit/pending.py): a loop whose results wait on real work when it returns; a
clock that waits for them misses none of it, one that stops when the loop returns misses most of it."""

import time

import jax
import numpy as np

from perfaudit import handout, pending


def _clock(loop, waits, w, batches, lr0):
    started = time.perf_counter()
    out = loop(w, batches, lr0)
    if waits:
        jax.block_until_ready(out)
    return time.perf_counter() - started


def test_a_clock_that_stops_when_the_loop_returns_misses_the_pending_work_and_one_that_waits_does_not():
    batches, lr0 = handout.data_for("B", np.random.default_rng(0), steps=3)
    w0 = np.zeros(handout.FEATURES, np.float32)
    loop = pending.WithPendingWork(handout.train_once, seconds=0.2)
    assert loop.pending_s > 0
    waited = loop.missed_by(_clock(loop, True, w0, batches, lr0))
    early = loop.missed_by(_clock(loop, False, w0, batches, lr0))
    assert waited < early and early > loop.pending_s / 4
    w, losses = loop.out  # the loop's own values, the pending work adding nothing
    np.testing.assert_allclose(np.asarray(w), handout.reference_train(w0, batches, lr0)[0], rtol=1e-4, atol=1e-5)
    assert len(losses) == len(batches)
