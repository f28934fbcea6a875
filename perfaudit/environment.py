"""What a first-call audit depends on besides the code: caches, dispatch, flags and CPUs.

`describe()` returns the fields the report's `environment` section gains in the "Going further" part. The
seed's fields (Python, jax, jaxlib, backend, device kind) are the student's to record in build_report.
"""

import os


def cpu_affinity():
    """The CPUs this process may run on, or None where the OS does not say (macOS, Windows)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return None


def describe():
    """Settings that change what a first call or a steady call measures, read from this process."""
    import jax

    cpu = jax.default_backend() == "cpu"
    return {
        # A warm persistent cache loads compiled code from disk: the "first call" would skip compilation.
        "persistent_compilation_cache": bool(jax.config.jax_enable_compilation_cache),
        "compilation_cache_dir": jax.config.jax_compilation_cache_dir,  # None: no cache even when enabled
        # With asynchronous dispatch a call returns before its result is ready (CPU only; other backends
        # are always asynchronous).
        "cpu_async_dispatch": bool(jax.config.read("jax_cpu_enable_async_dispatch")) if cpu else None,
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": cpu_affinity(),
    }
