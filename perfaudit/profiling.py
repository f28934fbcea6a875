"""A profiler trace of steady calls (`jax.profiler.trace`), and what it shows, read back from the trace file.

The trace is the Perfetto/Chrome JSON (`*.trace.json.gz`) that JAX writes beside an XPlane protobuf under
`<folder>/plugins/profile/<timestamp>/`; open it at https://ui.perfetto.dev or in TensorBoard's profiler. On CPU
it shows the Python thread's side of each call (the jitted function's dispatch, argument parsing, handing the
executable over) and, on a worker thread, the compiled program's operations themselves.
"""

import gzip
import json
from pathlib import Path

import jax
import numpy as np


def trace_steady_calls(fn, x, folder, calls=5):
    """Compile jax.jit(fn) at x, then trace `calls` synchronized steady calls into folder; the trace file's path."""
    jitted = jax.jit(fn)
    jitted(x).block_until_ready()  # compiled before the trace: the trace holds steady calls only
    with jax.profiler.trace(str(folder)):
        for _ in range(calls):
            jitted(x).block_until_ready()
    traces = sorted(Path(folder).rglob("*.trace.json.gz"), key=lambda p: p.stat().st_mtime)
    if not traces:
        raise RuntimeError(f"jax.profiler.trace wrote no *.trace.json.gz under {folder}")
    return traces[-1]


def events(trace_file):
    """The complete events of a trace file: [(thread name, event name, microseconds)] in the order they began."""
    trace = json.loads(gzip.decompress(Path(trace_file).read_bytes()))
    threads = {(e.get("pid"), e.get("tid")): e.get("args", {}).get("name", "")
               for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "thread_name"}
    complete = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X"), key=lambda e: e.get("ts", 0))
    return [(threads.get((e.get("pid"), e.get("tid")), str(e.get("tid"))), e["name"], float(e.get("dur", 0.0)))
            for e in complete]


def summary(trace_file):
    """[(thread, event, count, median microseconds)] for each event name, in the order each first began; the
    profiler's own Python frames (names starting with '$') are left out."""
    rows = {}
    for thread, name, duration in events(trace_file):
        if name.startswith("$"):
            continue
        rows.setdefault((thread, name), []).append(duration)
    return [(thread, name, len(durations), float(np.median(durations))) for (thread, name), durations in rows.items()]


def table(rows, threads=None):
    """summary() rows as text; `threads` ({thread name: label}) shortens the thread names."""
    threads = threads or {}
    width = max((len(name) for _, name, _, _ in rows), default=10) + 2
    lines = [f"{'thread':<12}{'event':<{width}}{'count':>6}{'median us':>11}"]
    for thread, name, count, median in rows:
        lines.append(f"{threads.get(thread, thread)[:11]:<12}{name:<{width}}{count:>6}{median:>11.2f}")
    return "\n".join(lines)


def thread_labels(rows, marker="PjitFunction"):
    """{thread name: 'caller' or 'worker N'}: the thread that ran the jitted function's dispatch is the caller."""
    callers = {thread for thread, name, _, _ in rows if name.startswith(marker)}
    labels, workers = {}, 0
    for thread, _, _, _ in rows:
        if thread not in labels:
            if thread in callers:
                labels[thread] = "caller"
            else:
                workers += 1
                labels[thread] = f"worker {workers}"
    return labels
