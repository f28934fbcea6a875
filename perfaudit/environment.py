"""What a first-call audit depends on besides the code: caches, dispatch, flags, CPUs, and what a reader needs to
reproduce it.

`reproducibility()` returns the optional `environment` fields that let someone else repeat the measurement (CPU
model, OS, NumPy, time, load, clock resolution, matmul precision, JAX settings); notebooks 3 and 4 record them.
`describe()` returns the fields the report's `environment` section gains in the "Going further" part. The
seed's fields (Python, jax, jaxlib, backend, device kind) are the student's to record in build_report.
"""

import os
import platform
import time
from datetime import datetime, timezone

import numpy as np


def cpu_affinity():
    """The CPUs this process may run on, or None where the OS does not say (macOS, Windows)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return None


def describe():
    """Settings that change what a first call or a steady call measures, read from this process."""
    import jax  # JAX on first use: the graders import this module (autograde/plugins/envrecord.py) without running JAX

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


def cpu_model():
    """The processor's name as the OS reports it (Linux: /proc/cpuinfo's model name), or None."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def environment_settings():
    """The JAX_* and XLA_FLAGS environment variables of this process, {name: value}: settings that change what
    JAX does without a line of code."""
    return {name: value for name, value in sorted(os.environ.items()) if name.startswith("JAX_") or name == "XLA_FLAGS"}


def reproducibility():
    """What a reader needs to reproduce a measurement, read from this process now: take it when you measure."""
    import jax  # JAX on first use: the graders import this module (autograde/plugins/envrecord.py) without running JAX

    return {
        "cpu_model": cpu_model(),
        "os": platform.platform(),
        "numpy": np.__version__,
        "timestamp_utc": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        # Runnable processes averaged over 1, 5 and 15 minutes: a busy machine stretches every timing.
        "load_average": [round(load, 2) for load in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "clock_resolution_s": time.get_clock_info("perf_counter").resolution,
        # None: the backend's default (float32 products on CPU, TF32 on recent NVIDIA GPUs, bfloat16 on TPUs).
        "matmul_precision": jax.config.jax_default_matmul_precision,
        "environment_variables": environment_settings(),
    }
