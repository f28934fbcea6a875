"""The first call made precise: a cold process against a cold function, and what a persistent cache changes.

A *cold process* has never run JAX: its first call also starts the backend and pays the process's one-time
lowering cost. A *cold function* is a new jit in a process that has already compiled something, after
`jax.clear_caches()`: tracing, lowering and compiling again, nothing else. Both are "first calls"; they are
different observations.

With the persistent compilation cache on, a compiled program is written to a directory and a later process loads
it instead of compiling. JAX writes only programs whose compile took at least
`jax_persistent_cache_min_compile_time_secs` (1 s by default, so a 16x16 `tanh(x @ x)` is never written); at 0 a
second process's "compile" is a load from disk, and JAX counts it as a cache hit.

    python -m perfaudit.coldstart                    # one fresh process, no persistent cache: JSON
    python -m perfaudit.coldstart --cache-dir DIR    # one fresh process, persistent cache in DIR: JSON
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from perfaudit import fresh

COMPILE_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "compile_s",
}
CACHE_HIT = "/jax/compilation_cache/cache_hits"
CACHE_MISS = "/jax/compilation_cache/cache_misses"


def _workload(x):
    import jax.numpy as jnp  # never at the top: measure() times JAX's import in a process that has not imported it

    return jnp.tanh(x @ x)


def _first_call(jax, x):
    """A first call of jax.jit(workload), synchronized, with JAX's compile events and cache counts for it."""

    def workload(x):  # the same name in every process: the persistent cache's key includes the program's name
        return _workload(x)

    parts = dict.fromkeys(COMPILE_EVENTS.values(), 0.0)
    counts = {CACHE_HIT: 0, CACHE_MISS: 0}

    def on_duration(event, duration_s, **kwargs):
        if event in COMPILE_EVENTS and kwargs.get("fun_name") in ("workload", "jit(workload)"):
            parts[COMPILE_EVENTS[event]] += duration_s

    def on_event(event, **kwargs):
        if event in counts:
            counts[event] += 1

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    try:
        start = time.perf_counter()
        jax.jit(workload)(x).block_until_ready()
        first_call_s = time.perf_counter() - start
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
        jax.monitoring.unregister_event_listener(on_event)
    return {"first_call_s": first_call_s, **parts, "cache_hits": counts[CACHE_HIT], "cache_misses": counts[CACHE_MISS]}


def measure(cache_dir=None, imported=None):
    """In this process, which must not have imported JAX yet: import JAX, start the backend, then a first call
    (the cold process) and, after jax.clear_caches(), a first call of a new jit (the cold function).

    imported, when given, is called once JAX is imported and before anything else: in_fresh_processes waits there
    until it is this process's turn to measure."""
    if "jax" in sys.modules:
        raise RuntimeError("perfaudit.coldstart.measure needs a process that has not imported JAX yet")
    start = time.perf_counter()
    # the measurement itself: JAX's import (NumPy's with it) is the cold process's first cost
    import jax
    import numpy as np

    import_s = time.perf_counter() - start
    if imported is not None:
        imported()
    if cache_dir is None:
        jax.config.update("jax_enable_compilation_cache", False)
    else:
        jax.config.update("jax_enable_compilation_cache", True)
        jax.config.update("jax_compilation_cache_dir", str(cache_dir))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    start = time.perf_counter()
    x = jax.device_put(np.eye(16, dtype=np.float32))  # starts the CPU backend
    backend_s = time.perf_counter() - start
    cold_process = _first_call(jax, x)
    jax.clear_caches()
    cold_function = _first_call(jax, x)
    backend = jax.default_backend()  # a fresh process beside a TPU measures the CPU: say which
    return {"import_s": import_s, "backend_s": backend_s, "backend": backend, "persistent_cache_dir": cache_dir,
            "cold_process": cold_process, "cold_function": cold_function}


READY, GO = "imported", "go"  # what a process that waits for its turn says, and what starts its measurement


def in_fresh_process(cache_dir=None):
    """measure() in a new Python process; its result."""
    return in_fresh_processes([cache_dir])[0]


def in_fresh_processes(cache_dirs):
    """measure() in one new Python process per entry of cache_dirs (None: no persistent cache); their results.

    The processes start together and import JAX side by side (most of a fresh process's second, and so each
    import_s is an import beside the others'); then each measures alone, in the order given: the next one is told
    to start only when the one before has exited, so no measurement shares the machine with another of these
    processes, and a cache the one before wrote is on disk for the next. Beside an accelerator they measure the CPU
    (perfaudit/fresh.py): each result's backend says which."""
    processes = []
    env = fresh.environment(fresh.this_process_backend())
    try:
        for cache_dir in cache_dirs:
            command = [sys.executable, "-m", "perfaudit.coldstart", "--wait"]
            command += ["--cache-dir", str(cache_dir)] if cache_dir else []
            errors = tempfile.TemporaryFile("w+")  # a file, not a pipe: nothing the process writes can block it
            processes.append((subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                               stderr=errors, text=True, env=env), errors))
        for process, errors in processes:
            if process.stdout.readline().strip() != READY:
                _failed(process, errors)
        results = []
        for process, errors in processes:
            process.stdin.write(GO + "\n")
            process.stdin.close()
            out = process.stdout.read()
            if process.wait() != 0:
                _failed(process, errors)
            results.append(json.loads(out))
        return results
    finally:
        for process, errors in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
            errors.close()


def _failed(process, errors):
    process.kill()
    process.wait()
    errors.seek(0)
    raise RuntimeError(f"the fresh process measuring a cold start failed:\n{errors.read()[-2000:]}")


def table(runs):
    """{label: measure() result} as text, in milliseconds."""
    def ms(seconds):
        return f"{seconds * 1e3:10.1f}"

    lines = [f"{'milliseconds':<44}{'first call':>10}{'trace':>10}{'lower':>10}{'compile':>10}  cache hits, misses"]
    for label, run in runs.items():
        for kind in ("cold_process", "cold_function"):
            if kind not in run:
                continue
            r = run[kind]
            lines.append(f"{label + ', ' + kind.replace('_', ' '):<44}{ms(r['first_call_s'])}{ms(r['trace_s'])}"
                         f"{ms(r['lower_s'])}{ms(r['compile_s'])}  {r['cache_hits']}, {r['cache_misses']}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m perfaudit.coldstart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", help="turn the persistent compilation cache on, in this directory, with no "
                                            "minimum compile time")
    parser.add_argument("--wait", action="store_true",
                        help=f"once JAX is imported, say {READY!r} and wait for a line on stdin before measuring")
    args = parser.parse_args(argv)

    def wait_for_turn():
        print(READY, flush=True)
        if sys.stdin.readline().strip() != GO:  # whoever started this process is gone: measure nothing
            os._exit(1)

    print(json.dumps(measure(args.cache_dir, wait_for_turn if args.wait else None)), flush=True)


if __name__ == "__main__":
    main()
    # Done: skip the interpreter's shutdown, which with JAX's backend started takes 0.15-0.2 s here (its thread
    # pools) that whoever waits for this process would count. The cache, if any, was written during the calls.
    os._exit(0)
