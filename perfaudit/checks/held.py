"""Results whose readiness someone else decides, and a slow function that makes them: how a check knows whether, and
when, the caller waited for a result. The visible check of time_call uses them as they are; when a test runs in the
grader, the grader holds the call and the result back itself (perfaudit/autograde/wire/channel.py) and never tells the
student's process for how long."""

import time

import numpy as np

# JAX refuses an object that converts to an array only through __jax_array__ wherever it abstractifies an argument
# (jax.jit, and jax.numpy's functions, which are jitted); the hooks that would let a held result through are JAX's
# internals (docs/grading-security.md). Its refusal starts with JAX_REFUSAL; the student is told what to do instead,
# in their own run (perfaudit/unfilled.py) and in a graded notebook (perfaudit/autograde/plugins/verdicts.py).
JAX_REFUSAL = "Triggering __jax_array__() during abstractification"
PASSED_INTO_JAX = ("A result the course's check held back (a jax.Array that stands in for a jitted call's result) "
                   "went straight into jax.jit or a jax.numpy function, which JAX refuses: wait with "
                   "out.block_until_ready(), or read it with np.asarray(out) or jax.device_get(out), and pass that.")


def refused_by_jax(message):
    """Whether an error's message is JAX's refusal of a held result passed into a JAX function."""
    return JAX_REFUSAL in str(message)


class HeldResult:
    """A jitted call's result whose readiness the grader decides: every way of waiting for it, or of reading its
    values, waits for the grader first (block_until_ready, jax.block_until_ready, np.asarray, jax.device_get,
    float(), .item(), printing, indexing, arithmetic); its shape and dtype need no wait.

    It is a jax.Array, as the result it stands in for (`isinstance(out, jax.Array)` holds): HeldResult(inner, wait)
    makes an instance of a subclass of both, made on first use (_array_class), so that importing this module
    never imports JAX. It is no pytree of its own: jax.tree_util keeps it whole, as a leaf."""

    _NO_WAIT = frozenset({"shape", "dtype", "ndim", "size", "weak_type", "sharding", "aval", "itemsize", "nbytes",
                          "committed", "device", "is_fully_addressable", "is_fully_replicated", "__numpy_dtype__"})
    __hash__ = object.__hash__  # as before it was a jax.Array: a result stays usable as a key

    def __new__(cls, inner, wait, poll=None):
        return object.__new__(_array_class() if cls is HeldResult else cls)

    def __init__(self, inner, wait, poll=None):
        """wait(): wait for whoever decides, until the result is let be ready. poll(): ask, never waiting, whether it
        is ready now (True once it is); None where no one can be asked, and is_ready() then waits."""
        self._inner, self._wait, self._poll = inner, wait, poll
        self._ready = self._released = False  # released: a poll said ready, so no wait is asked for after it

    def block_until_ready(self):
        if not self._ready:
            if hasattr(self._inner, "block_until_ready"):
                self._inner.block_until_ready()
            if not self._released:
                self._wait()
            self._ready = True
        return self

    def is_ready(self):
        """jax.Array.is_ready(): whether the result can be read now, never waiting. Whoever holds the result lets
        it be ready once its hold has passed since it was first asked, so a loop that polls until True has waited
        as block_until_ready() does, and one that asks once and goes on has not."""
        if not self._ready:
            if self._poll is None:
                return self.block_until_ready()._ready
            self._released = self._released or bool(self._poll())
            self._ready = self._released and bool(getattr(self._inner, "is_ready", lambda: True)())
        return self._ready

    def copy_to_host_async(self):
        """jax.Array.copy_to_host_async(): starts a copy and returns at once; reading the values later waits."""

    def addressable_data(self, index):
        """jax.Array.addressable_data(i): the data on one device, which needs no wait to hand out; waiting for it
        or reading it waits for this whole result (the grader holds one result, not its shards)."""
        inner = self._inner.addressable_data(index) if hasattr(self._inner, "addressable_data") else self._inner
        return HeldResult(inner, self.block_until_ready, self.is_ready)

    def _value(self):
        return self.block_until_ready()._inner

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner if name in self._NO_WAIT else self._value(), name)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._value(), dtype=dtype)

    def __jax_array__(self):
        return self._value()

    def __repr__(self):
        return repr(self._value())

    def __str__(self):
        return str(self._value())

    def __format__(self, spec):
        return format(self._value(), spec)

    def __len__(self):
        return len(self._inner)

    def __iter__(self):
        return iter(self._value())

    def __getitem__(self, index):
        return self._value()[index]

    def __float__(self):
        return float(self._value())

    def __int__(self):
        return int(self._value())

    def __bool__(self):
        return bool(self._value())


def placeholder():
    """What a result with no computation behind it holds (a test's stand-in for a slow function)."""
    return np.zeros((1, 1), dtype=np.float32)


def _arithmetic(name):
    def method(self, *args):
        return getattr(self._value(), name)(*args)

    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
              "__matmul__", "__rmatmul__", "__pow__", "__neg__", "__abs__", "__eq__", "__ne__", "__lt__", "__le__",
              "__gt__", "__ge__"):
    setattr(HeldResult, _name, _arithmetic(_name))


def _attribute(name):
    def read(self):
        return getattr(self._inner if name in self._NO_WAIT else self._value(), name)

    return property(read)


_array_classes = []  # the jax.Array subclass, once made


def _array_class():
    """HeldResult made a jax.Array too: every attribute jax.Array has and HeldResult does not is read from the
    inner result (its values once waited for, as __getattr__ does), never from jax.Array's own, which would find
    no buffer behind a held result."""
    if not _array_classes:
        import jax  # a held result is made where JAX runs (see the class)

        own = {name for klass in HeldResult.__mro__[:-1] for name in vars(klass)}
        namespace = {}
        for name, value in vars(jax.Array).items():
            if name in own or name in ("__doc__", "__module__", "__slots__", "__weakref__", "__hash__"):
                continue
            namespace[name] = _attribute(name) if isinstance(value, property) or not callable(value) \
                else _arithmetic(name)
        _array_classes.append(type("HeldResult", (HeldResult, jax.Array), namespace))
    return _array_classes[0]


class FreshJit:
    """A new jax.jit of fn, made where fn lives and first called by the caller: its first call traces and compiles,
    whatever ran before. In one process it is made here on first use; handed to a student's kernel it crosses as a
    request to make it there (perfaudit/autograde/wire/channel.py), and the grader judges only the calls' effects on its
    own clock."""

    def __init__(self, fn):
        self.fn, self._jitted = fn, None

    def __call__(self, x):
        if self._jitted is None:
            import jax  # JAX on first use: see perfaudit/checks/__init__.py

            self._jitted = jax.jit(lambda v: self.fn(v))
        return self._jitted(x)


class SlowFunction:
    """fn(x) that takes call_delays_s to return and whose result becomes ready only after delays_s more, however the
    caller waits for it. `hold_call` and `hold_result` keep those delays and record, on the holder's clock, when each
    call arrived and each result was let be ready. When a test runs in the grader, the grader itself holds the call
    and the result back, and never tells the student's process for how long (perfaudit/autograde/wire/channel.py).
    `wrapped`: call that inside (a real JAX computation, traced and compiled on a first call) and hand back its
    result once ready. `leaves` > 1: each call returns (a, [b, ...]), `leaves` results as a training loop returns
    its weights and losses, each held on its own: the call counts as waited for once all of them are.
    """

    def __init__(self, delays_s, wrapped=None, call_delays_s=(), leaves=1):
        self.delays_s, self.call_delays_s, self.wrapped = list(delays_s), list(call_delays_s), wrapped
        self.leaves = leaves
        self.waited_s = []  # how long each wait for a result took
        self._first_polled = {}  # result -> when is_ready() first asked about it (poll_result)
        self.arrived_at, self.released_at = [], []  # each call's arrival, each result's release

    @staticmethod
    def _next(delays, done):
        return delays[min(len(done), len(delays) - 1)] if delays else 0.0

    @property
    def delay_s(self):
        """The delay of the next wait for a result."""
        return self._next(self.delays_s, self.waited_s)

    @property
    def call_delay_s(self):
        """The delay inside the next call."""
        return self._next(self.call_delays_s, self.arrived_at)

    def hold_call(self, arrived):
        """A call arrived at `arrived` (time.perf_counter()): hold it for its delay."""
        time.sleep(self.call_delay_s)
        self.arrived_at.append(arrived)

    def hold_result(self, asked):
        """The caller asked at `asked` to wait for a result: let it be ready after its delay. With a delay inside each
        call, only a call that arrived and whose result was not let be ready yet has a result to wait for: an ask
        with none pending (the student's process asking before its call) is answered at once and recorded nowhere,
        so a release can never come before its call."""
        if self.call_delays_s and len(self.released_at) >= len(self.arrived_at) * self.leaves:
            return
        time.sleep(self.delay_s)
        released = time.perf_counter()
        self.waited_s.append(released - asked)
        self.released_at.append(released)

    def poll_result(self, asked):
        """The caller asked at `asked`, never waiting, whether the next result is ready: it is once its delay has
        passed since the first such ask, and is then let be ready and recorded as a wait from that ask. As in
        hold_result, with no call pending there is nothing to wait for."""
        if self.call_delays_s and len(self.released_at) >= len(self.arrived_at) * self.leaves:
            return True
        first = self._first_polled.setdefault(len(self.released_at), asked)
        if asked - first < self.delay_s:
            return False
        released = time.perf_counter()
        self.waited_s.append(released - first)
        self.released_at.append(released)
        return True

    def waited(self, call):
        """Seconds the call-th call certainly took, or None when the student's code never waited for its result (or
        the call never asked). With a delay inside each call: from the call's arrival until its result was let be
        ready, so everything the call did between the two (tracing and compiling a first call) counts; a clock
        started only after the call returned reads less."""
        last = (call + 1) * self.leaves - 1  # the last of its results to be let be ready
        if len(self.waited_s) <= last or (self.call_delays_s and len(self.arrived_at) <= call):
            return None
        if self.call_delays_s:
            return self.released_at[last] - self.arrived_at[call]
        return self.waited_s[last]

    def __call__(self, x):
        if self.call_delays_s:
            self.hold_call(time.perf_counter())
        inner = placeholder() if self.wrapped is None else self.wrapped(x)
        held = [HeldResult(inner if i == 0 else placeholder(), lambda: self.hold_result(time.perf_counter()),
                           lambda: self.poll_result(time.perf_counter())) for i in range(self.leaves)]
        return held[0] if self.leaves == 1 else (held[0], held[1:])
