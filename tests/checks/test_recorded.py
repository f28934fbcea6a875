"""The checks' own view of a training loop's traces (perfaudit/checks/recorded.py): each trace with its key, and what
changed between traces."""

import numpy as np

from perfaudit.checks.recorded import RecordingJit


def test_each_trace_is_recorded_with_the_shapes_and_static_values_that_changed():
    jit = RecordingJit()

    def step(x, scale, stage):
        return x * scale * (1 + stage)

    step = jit(step, static_argnums=2)
    for rows, stage in ((3, 0), (3, 0), (5, 0), (5, 1)):
        step(np.ones((rows, 2), np.float32), 0.5, stage)
    assert jit.count == 3
    assert jit.changes() == ["step's argument 0: float32[3,2], float32[5,2]",
                             "step's argument 2: 0 (static), 1 (static)"]
    assert "weak type" in jit.traces[0][1]["argument 1"]  # a Python float, traced


def test_a_loop_that_traces_once_changes_nothing():
    jit = RecordingJit()
    step = jit(lambda x, lr: x * lr)
    for lr in (0.1, 0.2, 0.3):
        step(np.ones(4, np.float32), lr)
    assert (jit.count, jit.changes()) == (1, [])
