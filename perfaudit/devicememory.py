"""What a device says about its memory: the allocator's statistics around one call, where the backend reports them.

`jax.Device.memory_stats()` reads the device allocator's counters: bytes in use, the peak, the limit. Accelerator
backends report them (a TPU v5e did, with JAX 0.10.2); the CPU backend returns None. A reading of the device, taken
outside the audit: the report's `"memory_measured": false` says that the audit's own timings came with no memory
measurement, and stays so.
"""

import jax
import numpy as np

FIELDS = ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")


def statistics(device):
    """The allocator's counters of FIELDS that device reports, or None where its backend reports none."""
    stats = device.memory_stats()
    if not stats:
        return None
    return {field: int(stats[field]) for field in FIELDS if field in stats}


def around_one_call(fn, n, device=None):
    """Bytes in use before and after placing an n x n float32 input on device and running jax.jit(fn) on it once,
    synchronized, with the arrays' own bytes; None where the backend reports no statistics."""
    device = device or jax.devices()[0]
    before = statistics(device)
    if before is None or "bytes_in_use" not in before:
        return None
    x = jax.device_put(np.ones((n, n), dtype=np.float32), device)
    out = jax.jit(fn)(x)
    out.block_until_ready()
    after = statistics(device)
    result = {"n": n, "arrays_bytes": x.nbytes + out.nbytes, "before": before, "after": after,
              "grew_bytes": after["bytes_in_use"] - before["bytes_in_use"]}
    del x, out  # the arrays go: the statistics of later cells do not carry them
    return result


def describe(reading, backend):
    """The reading as text for a notebook's output."""
    if reading is None:
        return (f"the {backend} backend reports no memory statistics (memory_stats() is None): device memory is not "
                "measured here")
    lines = [f"device memory around one {reading['n']}x{reading['n']} call, as the {backend} allocator reports it:"]
    for field in FIELDS:
        if field in reading["before"]:
            lines.append(f"  {field:<18} before {reading['before'][field]:>15,}  after {reading['after'][field]:>15,}")
    lines.append(f"  in use grew by {reading['grew_bytes']:,} bytes; the input and the result hold "
                 f"{reading['arrays_bytes']:,}")
    return "\n".join(lines)
