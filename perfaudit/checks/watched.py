"""What a visible self-check hands a student's measuring code so that it can see what the code did: a jit whose
functions note each call (its shape and dtype, whether it traced, how long it took to return) and hold each result
for a few milliseconds before it is let be ready, noting when the caller waited for it. A timing that covers its
call waited for the result; one that stopped the clock when the call returned is shorter than the call and its
hold by the whole hold, on any machine, however loaded. The grader's own jit does the same on its own clock
(perfaudit/autograde/evidence/instruments.py); this one runs where the student runs the notebook.
"""

import functools
import time

import numpy as np

from perfaudit.checks.held import HeldResult

HOLD_S = (0.002, 0.004)  # each result's hold, drawn per call: far above clock rounding, cheap for 50 calls


class Call:
    """One call of a watched function, on one clock: when it arrived, whether it traced, how long it took to
    return, and when its result was let be ready (None: the caller never waited for it)."""

    def __init__(self, shape, dtype, arrived, hold_s, function=0):
        self.shape, self.dtype, self.arrived, self.hold_s = shape, dtype, arrived, hold_s
        self.function = function  # which function the jit made, numbered from 0 in the order made
        self.returned_s, self.traced, self.released, self._first_polled = 0.0, False, None, None

    @property
    def span_s(self):
        """From the call's arrival until its result was let be ready: what a synchronized timing of it covers."""
        return None if self.released is None else self.released - self.arrived

    def wait(self):
        if self.released is None:
            time.sleep(self.hold_s)
            self.released = time.perf_counter()

    def poll(self):
        """is_ready(): ready once the hold has passed since it was first asked, as a wait would be."""
        now = time.perf_counter()
        if self.released is None:
            self._first_polled = self._first_polled or now
            if now - self._first_polled >= self.hold_s:
                self.released = now
        return self.released is not None


class WatchedJit:
    """A jit to hand to gather_evidence(steady_calls, jit) or run_audit: jax.jit itself, whose functions note every
    call of each (`calls`, in order, each with its function's number) and, for each function, its trace count
    before each call that jax.make_jaxpr made (`jaxpr_traces[function]`)."""

    def __init__(self, rng=None):
        self.rng = rng or np.random.default_rng()
        self.calls, self.jaxpr_traces = [], {}

    def __call__(self, fn, *args, **kwargs):
        import jax  # JAX on first use: see perfaudit/checks/__init__.py

        traces = [0]

        @functools.wraps(fn)
        def counted(*a, **k):
            traces[0] += 1
            return fn(*a, **k)

        number = len(self.jaxpr_traces)
        self.jaxpr_traces[number] = []
        return WatchedFunction(jax.jit(counted, *args, **kwargs), self, number, traces)

    def new_call(self, x, function):
        return Call(tuple(getattr(x, "shape", ())), str(getattr(x, "dtype", "")), time.perf_counter(),
                    float(self.rng.uniform(*HOLD_S)), function)


class WatchedFunction:
    def __init__(self, jitted, watcher, number, traces):
        self._jitted, self._watcher, self._number, self._traces = jitted, watcher, number, traces

    def __call__(self, x, *args, **kwargs):
        import jax  # JAX on first use: see perfaudit/checks/__init__.py

        watcher = self._watcher
        if isinstance(x, jax.core.Tracer):  # jax.make_jaxpr(audited) tracing through: no call to time
            watcher.jaxpr_traces[self._number].append(self._traces[0])
            return self._jitted(x, *args, **kwargs)
        call, before = watcher.new_call(x, self._number), self._traces[0]
        out = self._jitted(x, *args, **kwargs)
        call.returned_s, call.traced = time.perf_counter() - call.arrived, self._traces[0] > before
        watcher.calls.append(call)
        if not isinstance(out, jax.Array):
            call.released = call.arrived  # nothing to hold: counted as waited for
            return out
        return HeldResult(out, call.wait, call.poll)

    def __getattr__(self, name):
        return getattr(self._jitted, name)
