"""A profiler trace of steady calls (perfaudit/profiling.py), and what is read back from its file."""

import gzip
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit import profiling


def workload(x):
    return jnp.tanh(x @ x)


@pytest.fixture
def x16():
    return jax.device_put(np.eye(16, dtype=np.float32))


def test_a_profiler_trace_of_steady_calls_shows_dispatch_and_the_program(x16, tmp_path):
    trace_file = profiling.trace_steady_calls(workload, x16, tmp_path / "profile", calls=3)
    assert trace_file.name.endswith(".trace.json.gz") and tmp_path in trace_file.parents
    rows = profiling.summary(trace_file)
    names = {name for _, name, _, _ in rows}
    assert "PjitFunction(workload)" in names
    assert all(count >= 1 and median >= 0 for _, _, count, median in rows)
    labels = profiling.thread_labels(rows)
    assert "caller" in labels.values()
    assert "event" in profiling.table(rows, labels).splitlines()[0]


def _trace_file(path, events):
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


def test_the_events_of_a_trace_file_are_named_by_their_thread_in_the_order_they_began(tmp_path):
    trace = _trace_file(tmp_path / "t.trace.json.gz", [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 10, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 20, "args": {"name": "tf_pool/1"}},
        {"ph": "X", "name": "fusion", "pid": 1, "tid": 20, "ts": 5, "dur": 3.0},
        {"ph": "X", "name": "PjitFunction(workload)", "pid": 1, "tid": 10, "ts": 1, "dur": 10.0},
        {"ph": "X", "name": "$profiler frame", "pid": 1, "tid": 10, "ts": 2, "dur": 1.0},
        {"ph": "X", "name": "fusion", "pid": 1, "tid": 20, "ts": 15, "dur": 5.0},
        {"ph": "X", "name": "fusion", "pid": 1, "tid": 20, "ts": 25, "dur": 10.0},
        {"ph": "X", "name": "unnamed thread's", "pid": 1, "tid": 30, "ts": 30},
        {"ph": "i", "name": "an instant", "pid": 1, "tid": 10, "ts": 3}])
    assert profiling.events(trace) == [
        ("python", "PjitFunction(workload)", 10.0), ("python", "$profiler frame", 1.0), ("tf_pool/1", "fusion", 3.0),
        ("tf_pool/1", "fusion", 5.0), ("tf_pool/1", "fusion", 10.0), ("30", "unnamed thread's", 0.0)]
    rows = profiling.summary(trace)
    assert rows == [("python", "PjitFunction(workload)", 1, 10.0), ("tf_pool/1", "fusion", 3, 5.0),
                    ("30", "unnamed thread's", 1, 0.0)]
    assert profiling.thread_labels(rows) == {"python": "caller", "tf_pool/1": "worker 1", "30": "worker 2"}
    assert profiling.table(rows, {"python": "caller"}).splitlines() == [
        "thread      event                    count  median us",
        "caller      PjitFunction(workload)       1      10.00",
        "tf_pool/1   fusion                       3       5.00",
        "30          unnamed thread's             1       0.00"]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU client's events")
def test_the_buffer_await_is_brief_and_pjit_function_is_recorded_twice_per_call(x16, tmp_path):
    """What notebook 4 says of the trace: PjitFunction(workload) is recorded twice per call, one event inside the
    other; CommonPjRtBuffer::Await, when the trace holds it, is far shorter than the call: no wait shows in it."""
    calls = 5
    rows = profiling.summary(profiling.trace_steady_calls(workload, x16, tmp_path / "profile", calls=calls))
    found = {name: (count, median) for _, name, count, median in rows}
    assert found["PjitFunction(workload)"][0] == 2 * calls
    if "CommonPjRtBuffer::Await" in found:  # some traces hold none: the result was ready before anyone asked
        assert found["CommonPjRtBuffer::Await"][1] < found["PjitFunction(workload)"][1] / 10
