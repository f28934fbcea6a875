"""What a benchmark's clock misses (perfaudit/pending.py): a loop whose results wait on real work when it returns; a
clock that waits for them finds them ready as it stops, every run, one that stops when the loop returns does not."""

import threading
import time

import jax
import numpy as np
import pytest

from perfaudit import handout, pending


def waits(loop, w, batches, lr0):
    started = time.perf_counter()
    jax.block_until_ready(loop(w, batches, lr0))
    return time.perf_counter() - started


def stops_when_the_loop_returns(loop, w, batches, lr0):
    started = time.perf_counter()
    loop(w, batches, lr0)
    return time.perf_counter() - started


@pytest.fixture(scope="module")
def loop_and_data():
    batches, lr0 = handout.data_for("B", np.random.default_rng(0), steps=3)
    loop = pending.WithPendingWork(handout.train_once, seconds=0.2)
    return loop, np.zeros(handout.FEATURES, np.float32), batches, lr0


def test_a_clock_that_waits_misses_nothing_and_one_that_stops_when_the_loop_returns_misses_the_pending_work(
        loop_and_data):
    loop, w0, batches, lr0 = loop_and_data
    assert loop.pending_s > 0
    reading_s, missed_s = loop.benchmarked(waits, w0, batches, lr0)
    assert missed_s == 0.0 and reading_s > 0
    reading_s, missed_s = loop.benchmarked(stops_when_the_loop_returns, w0, batches, lr0)
    assert missed_s > 0
    w, losses = loop.out  # the loop's own values, the pending work adding nothing
    np.testing.assert_allclose(np.asarray(w), handout.reference_train(w0, batches, lr0)[0], rtol=1e-4, atol=1e-5)
    assert len(losses) == len(batches)
    assert time.perf_counter is pending.time.perf_counter and time.perf_counter.__name__ == "perf_counter"


def test_another_thread_s_clock_readings_do_not_count_as_the_benchmark_s(loop_and_data):
    """A thread of the kernel's (its heartbeat, its output) reading the clock after the benchmark stopped its own,
    when the results are ready, does not make a clock that stopped early look like one that waited."""
    loop, w0, batches, lr0 = loop_and_data

    def stops_early_while_another_thread_reads_later(loop, w, batches, lr0):
        elapsed = stops_when_the_loop_returns(loop, w, batches, lr0)
        other = threading.Thread(target=lambda: (jax.block_until_ready(loop.out), time.perf_counter()))
        other.start()
        other.join()
        return elapsed

    assert loop.benchmarked(stops_early_while_another_thread_reads_later, w0, batches, lr0)[1] > 0


def test_a_benchmark_that_reads_no_clock_after_the_loop_is_told_so(loop_and_data):
    loop, w0, batches, lr0 = loop_and_data
    with pytest.raises(ValueError, match="not a clock around the loop"):
        loop.benchmarked(lambda train, *args: (train(*args), 1.0)[1], w0, batches, lr0)
    assert time.perf_counter.__name__ == "perf_counter"
