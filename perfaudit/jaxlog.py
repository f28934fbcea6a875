"""JAX's own account of a call: why it traced again and what it compiled, captured as text.

With `jax_explain_cache_misses` JAX logs, for each trace, why the cache had nothing for the call (a function it
never saw, or the closest key it had and how it differs); with `jax_log_compiles` it logs each compile and how
long tracing, lowering and compiling took. Both go to the `jax` loggers at WARNING level; `captured()` turns both
on, keeps the lines instead of letting them reach stderr, and puts everything back afterwards.

    with jaxlog.captured() as lines:
        jitted(x)
    print("\n".join(lines))

`compiled()` keeps, instead, the name of each program XLA compiles (JAX's compile events): a jax.numpy call outside
jit shows as one too (jit(_mean), jit(_pad)), the first time it meets a shape.
"""

import contextlib
import logging

import jax

FLAGS = ("jax_explain_cache_misses", "jax_log_compiles")
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"  # one event per program XLA compiles


class _Lines(logging.Handler):
    def __init__(self, lines):
        super().__init__(level=logging.DEBUG)
        self.lines = lines

    def emit(self, record):
        self.lines.extend(record.getMessage().splitlines())


@contextlib.contextmanager
def captured():
    """Within the block, JAX explains every cache miss and logs every compile; yields the list of log lines."""
    lines = []
    logger = logging.getLogger("jax")
    handler = _Lines(lines)
    before = {flag: getattr(jax.config, flag) for flag in FLAGS}
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False  # the lines are kept here, not printed to stderr as well
    try:
        for flag in FLAGS:
            jax.config.update(flag, True)
        yield lines
    finally:
        for flag, value in before.items():
            jax.config.update(flag, value)
        logger.removeHandler(handler)
        logger.propagate = propagate


@contextlib.contextmanager
def compiled():
    """Within the block, the name of each program XLA compiles (jit(step), jit(_pad), ...), in order: yields the
    list."""
    names = []

    def listener(event, duration_s, **kwargs):
        if event == BACKEND_COMPILE:
            names.append(str(kwargs.get("fun_name", "?")))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield names
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
