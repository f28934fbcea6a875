"""Fresh Python processes that measure JAX beside a notebook, and the backend they measure.

Some measurements need a process of their own: the sweep with CPU asynchronous dispatch off, the one-time lowering
cost, cold starts. On the CPU a fresh process uses the backend this one uses. An accelerator may admit one process
at a time: a TPU's second process stops with "Internal error when accessing libtpu multi-process lockfile", and
does not fall back to the CPU. So where this process runs on an accelerator, a fresh process measures the CPU
explicitly (JAX_PLATFORMS=cpu), and what it returns says so: never a crash, never an accelerator's name on a CPU's
numbers.
"""

import os
import sys


def this_process_backend():
    """jax.default_backend() of this process, or None where this process has not imported JAX (nothing to hold)."""
    if "jax" not in sys.modules:
        return None
    import jax  # only where this process has imported it already: never a backend started here to ask

    return jax.default_backend()


def platform_for_fresh_process(parent_backend):
    """The JAX_PLATFORMS a fresh process gets beside a process on parent_backend: None (JAX's own choice, the same as
    the parent's) when the parent runs on the CPU or has not started JAX; 'cpu' beside an accelerator."""
    return None if parent_backend in (None, "cpu") else "cpu"


def environment(parent_backend, **settings):
    """The environment of a fresh process beside a process on parent_backend: this one's, with settings (names of
    environment variables) and, beside an accelerator, JAX_PLATFORMS=cpu."""
    env = {**os.environ, **settings}
    platform = platform_for_fresh_process(parent_backend)
    if platform is not None:
        env["JAX_PLATFORMS"] = platform
    return env


def measured_on(backend, parent_backend):
    """Where a fresh process measured, in words for the notebook's output."""
    where = f"a fresh Python process on the {backend} backend"
    if parent_backend in (None, backend):
        return where
    return (f"{where}, not the {parent_backend}: this process holds the {parent_backend}, and an accelerator may "
            "admit one process at a time")
