"""Going further in notebook 1: steady calls across sizes. Relations between measurements only, never a time."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit import profiling, sweep


def workload(x):
    return jnp.tanh(x @ x)


@pytest.fixture(scope="module")
def rows():
    return {row["n"]: row for row in sweep.measure(workload, sizes=(1024, 4, 16), repeats=3)}


def test_rows_come_smallest_first_with_positive_seconds(rows):
    assert list(rows) == [4, 16, 1024]
    for row in rows.values():
        assert row["flops"] == 2 * row["n"] ** 3
        assert all(isinstance(row[key], float) and row[key] > 0
                   for key in ("synchronized_s", "unsynchronized_s", "in_loop_s"))
        assert row["loop_length"] == sweep.loop_length(row["n"]) >= 2
        assert row["calls"] == sweep.calls_per_clock(row["n"], 3) >= 3


def test_at_1024_waiting_for_the_result_costs_more_than_dispatching_it(rows):
    assert rows[1024]["synchronized_s"] >= rows[1024]["unsynchronized_s"]


def test_the_computation_grows_with_n_and_is_a_small_part_of_a_16x16_call(rows):
    assert rows[4]["in_loop_s"] < rows[1024]["in_loop_s"]
    assert rows[16]["in_loop_s"] < rows[1024]["in_loop_s"]
    # Notebook 1's claim: at 16x16 a synchronized steady call is mostly dispatch, not computation.
    assert rows[16]["in_loop_s"] < rows[16]["synchronized_s"]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA's inline threshold is the CPU client's")
def test_a_tiny_program_runs_inline_and_a_large_one_does_not(rows):
    assert rows[4]["ready_on_return"] == 1.0  # 128 flops: XLA runs it before the call returns
    assert rows[1024]["ready_on_return"] < 1.0  # ~2e9 flops: the call returns before the result is ready


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA's inline threshold is the CPU client's")
def test_the_inline_threshold_decides_which_thread_runs_the_program(tmp_path):
    # What ready on return cannot show: where the program ran. A profiler trace names the thread of each operation.
    threads = {}
    for n in (4, 16):
        x = jax.device_put(np.eye(n, dtype=np.float32))
        rows = profiling.summary(profiling.trace_steady_calls(workload, x, tmp_path / f"{n}x{n}", calls=3))
        labels = profiling.thread_labels(rows)
        threads[n] = {labels[thread] for thread, name, _, _ in rows if "tanh" in name and not name.startswith("end")}
    assert threads[4] == {"caller"}, "128 flops: run inline, on the calling thread"
    assert threads[16] and "caller" not in threads[16], "8192 flops: handed to a worker thread"


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="jax_cpu_enable_async_dispatch is a CPU setting")
def test_with_async_dispatch_off_every_call_returns_with_its_result():
    (row,) = sweep.measure_in_fresh_process(sizes=(16,), repeats=3, async_dispatch=False)
    assert row["n"] == 16 and row["ready_on_return"] == 1.0


def test_loops_are_longer_for_small_sizes():
    assert sweep.loop_length(16) > sweep.loop_length(256) >= sweep.loop_length(1024) == 2


def _row(n, synchronized, in_loop):
    return {"n": n, "flops": 2 * n**3, "synchronized_s": synchronized, "unsynchronized_s": 4e-6,
            "in_loop_s": in_loop, "calls": 5, "loop_length": sweep.loop_length(n), "ready_on_return": 0.0}


def test_computation_overtakes_dispatch_where_it_is_at_least_the_rest_of_the_call():
    made_up = [_row(16, 30e-6, 1e-6), _row(64, 30e-6, 10e-6), _row(128, 50e-6, 25e-6), _row(256, 300e-6, 250e-6)]
    assert sweep.overtakes(made_up) == 128
    assert sweep.overtakes(made_up[:2]) is None


def test_chart_and_table(tmp_path):
    made_up = [_row(16, 30e-6, 1e-6), _row(128, 50e-6, 25e-6), _row(1024, 2e-2, 2e-2)]
    path = sweep.chart(made_up, tmp_path / sweep.SWEEP_PNG, [_row(16, 6e-6, 1e-6)])
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 10_000
    lines = sweep.table(made_up, [_row(16, 6e-6, 1e-6)]).splitlines()
    assert len(lines) == 4 and "async off" in lines[0] and lines[1].split()[0] == "16"


def test_the_reading_is_computed_from_the_rows_it_is_given():
    """Notebook 1's key quotes these printed figures, not a claim: how the call grew against the work, and the
    hand-off's share of a 16x16 call, whatever they are in a run (the review saw 2 % to 85 % for the share)."""
    made_up = [_row(16, 30e-6, 1.5e-6), _row(64, 90e-6, 15e-6)]
    assert sweep.growth(made_up) == pytest.approx((64, 3.0, 1 / 6))
    assert sweep.handoff_share(made_up, [_row(16, 6e-6, 1e-6)]) == pytest.approx(0.8)
    assert sweep.handoff_share(made_up, [_row(16, 45e-6, 1e-6)]) == pytest.approx(-0.5)  # printed as measured
    text = sweep.reading(made_up, [_row(16, 6e-6, 1e-6)]).splitlines()
    assert text == ["from 16x16 to 64x64 the work grew 64x and the synchronized call 3.0x; at 64x64 the in-loop "
                    "computation is 17% of the synchronized call",
                    "at 16x16 the hand-off between threads (synchronized minus async off) took 80% of the "
                    "synchronized call in this run"]


def test_no_share_across_backends_and_no_growth_without_both_sizes():
    on_tpu = [{**_row(16, 30e-6, 1.5e-6), "backend": "tpu"}]
    assert sweep.handoff_share(on_tpu, [{**_row(16, 6e-6, 1e-6), "backend": "cpu"}]) is None
    assert sweep.growth(on_tpu) is None and sweep.reading(on_tpu) == ""
