"""JAX's own account of a call: why it traced again and what it compiled, captured as text.

With `jax_explain_cache_misses` JAX logs, for each trace, why the cache had nothing for the call (a function it
never saw, or the closest key it had and how it differs); with `jax_log_compiles` it logs each compile and how
long tracing, lowering and compiling took. Both go to the `jax` loggers at WARNING level; `captured()` turns both
on, keeps the lines instead of letting them reach stderr, and puts everything back afterwards.

    with jaxlog.captured() as lines:
        jitted(x)
    print("\n".join(lines))
"""

import contextlib
import logging

import jax

FLAGS = ("jax_explain_cache_misses", "jax_log_compiles")


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
