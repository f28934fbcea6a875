"""The device's memory counters around one call (perfaudit/devicememory.py): None on the CPU backend, which reports
no statistics; on an accelerator, the counters as a TPU v5e gave them (CI has none: its reading is given as data)."""

import jax
import jax.numpy as jnp

from perfaudit import devicememory


def workload(x):
    return jnp.tanh(x @ x)


def test_the_cpu_backend_reports_no_statistics_and_the_words_say_so():
    device = jax.devices("cpu")[0]
    assert devicememory.statistics(device) is None
    assert devicememory.around_one_call(workload, 64, device) is None
    assert "reports no memory statistics" in devicememory.describe(None, "cpu")


def test_an_accelerators_reading_is_shown_beside_the_arrays_bytes():
    # What a TPU v5e's allocator reported around one 1024x1024 call (jax 0.10.2): 8,657,920 bytes more in use.
    reading = {"n": 1024, "arrays_bytes": 2 * 1024 * 1024 * 4,
               "before": {"bytes_in_use": 1024, "peak_bytes_in_use": 1024, "bytes_limit": 16_912_876_339},
               "after": {"bytes_in_use": 8_658_944, "peak_bytes_in_use": 8_658_944, "bytes_limit": 16_912_876_339},
               "grew_bytes": 8_657_920}
    lines = devicememory.describe(reading, "tpu").splitlines()
    assert lines[0] == "device memory around one 1024x1024 call, as the tpu allocator reports it:"
    assert lines[-1] == "  in use grew by 8,657,920 bytes; the input and the result hold 8,388,608"
    assert len(lines) == 2 + len(devicememory.FIELDS)
