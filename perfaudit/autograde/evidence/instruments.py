"""The grader's jit: a stand-in for jax.jit that hidden tests hand to a student's measuring code.

The student's code makes its audited function with `jit(fn)` and times it as it would any jitted function. Each
function the stand-in makes is really jax.jit of fn, and the grader keeps a record of its own for each one:
- its calls, each timed by the grader's own clock from the moment the call reaches it until the grader lets the
  result be ready (a span the student's clock, started before the call and stopped after the wait, must cover);
  the first call at each shape, which traces and compiles, is held 200-300 ms when the function computes the
  workload and 1-3 ms when it does not (a first call of another, cheaper function does not stand in for the
  workload's); of the later ones a third are held 25-40 ms at random, the others 1-3 ms: a timing of another call
  than it claims does not fit. Whether a first call computes the workload, the grader asks at the call: the
  kernel-side stand-in runs the function just compiled on a matrix the grader draws from a seed (the input's shape,
  dtype and placement: JAX's cache, no new trace) and reports a few entries, which the grader compares with
  tanh(A @ A);
- whether anyone waited for each result (an unsynchronized clock never waits);
- its traces, reported as jax traces fn, and 1 to 3 more that the grader causes at calls it picks, by changing a
  static argument (a trace count typed in does not follow them).
- its ahead-of-time stages: `trace`, `lower` and `compile`, each announced before JAX does it and held 20-150 ms
  at random after, so a timing of a stage that is shorter than the stage, or invented, does not fit; the holds keep
  the stages' whole spans apart, so timings of two stages reported swapped do not fit either; and the runs of the
  program `compile` returned, each held like a call (the first 200-300 ms, a third of the later ones 10-20 ms, the
  others 1-3 ms) and released only when waited for: a warm run timed as the first, or a run not waited for, does
  not fit. Each stage's report carries a fingerprint of what JAX's stage made (products.py) and each waited run a
  few entries of its output, at places the grader drew when the run began: the grader counts a stage only where
  the fingerprint is that of its own chain of the same computation, and a run only where the entries are
  tanh(x @ x) for its matrix x, so a prompt sent without JAX's stage or the program's run is none.
Whether the timed function computes the workload rests on its first call's answer, checked in the grader against
tanh(A @ A) for the grader's matrix; the saved JAXPR is compared with the grader's own. The grader runs no code of
its own in the student's process to learn either: what the stand-in reports is a claim, checked in the grader.

Calls and traces are counted per function made, never across: a student may jit other functions with it (a
sanity check of the output, say) without moving what the audited function's evidence is compared with.

The kernel-side half (`make_jit`, `HeldResult`) asks the grader through `ask(message)`, the kernel's stdin in a
graded kernel (perfaudit/autograde/wire/channel.py) and GraderJit.answer itself in one process (the checker, a
notebook run by hand). No answer carries a delay or anything else the grader keeps to itself: only which call
or run it was, the static argument the student's process must pass to jax.jit anyway, and the seed of the places
at which a first call's or a run's entries are read. What a kernel that speaks
this protocol itself can still do is in docs/grading-security.md.
"""

import itertools
import math
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from perfaudit.autograde.evidence import products
from perfaudit.autograde.evidence import asks
from perfaudit.checks.held import HeldResult

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

FIRST_HOLD_S = (0.2, 0.3)  # the first call at each shape
LONG_HOLD_S = (0.025, 0.040)  # a third of the later calls
SHORT_HOLD_S = (0.001, 0.003)  # the other later calls
CALL_HOLD_S = (0.0005, 0.0015)  # inside each call, before it returns
PROBES = 6  # entries of fn(A) a first call reports, for the matrix A the grader draws
PROBE_TOLERANCE = 0.02  # covers bfloat16 and float16 inputs; a function that is not tanh(A @ A) misses by far more
STAGE_HOLD_S = (0.02, 0.15)  # each of trace, lower and compile of the ahead-of-time API
FIRST_RUN_HOLD_S = (0.2, 0.3)  # the first run of a compiled program: a later run on a busy machine stays shorter
LONG_RUN_HOLD_S = (0.010, 0.020)  # a third of its later runs
STAGES = ("trace", "lower", "compile")
STAGES_APART_S = 0.015  # how far apart the spans of two stages of one function are held (_stage_hold)
CLOCK_SLACK_S = 50e-6  # the two processes read one monotonic clock; this covers rounding only
MAX_FUNCTIONS = 64  # functions one jit keeps a record of: what a kernel asks for beyond them is not recorded
# number -> [fn, ...] a jit made, in the process that makes them (the kernel's, or the checker's): a jit handed in
# again goes on numbering its functions where it left off.
_registry: dict[int, list[Callable[..., Any]]] = {}
# Numbers of the jits made in this process (negative: the channel's are positive). Never id(): a jit collected by
# the garbage collector frees its id for the next, which would find the old one's functions in _registry.
_own_numbers = itertools.count(1)


class Call:
    def __init__(self, key: tuple[tuple[Any, ...], str], salt: int, started: float, ready_hold_s: float,
                 probe: int | None = None) -> None:
        self.key, self.salt, self.started, self.ready_hold_s = key, salt, started, ready_hold_s
        self.probe = probe  # a first call: the seed of the grader's matrix (0 where the input is not a square matrix)
        # a probed first call: whether its entries were tanh(A @ A), once it was waited on
        self.gave_workload: bool | None = None
        self.span_s: float | None = None  # grader's clock: from the call's arrival until its result was let be ready
        self.polled: float | None = None  # when is_ready() first asked about its result, never waiting

    @property
    def shape(self) -> tuple[Any, ...]:
        return self.key[0]


class Run:
    """One run of a compiled program: held like a call, its span on the grader's clock once it was waited for, and
    the entries of its output the kernel reported then, at the places probed_at(seed, n) gives."""

    span_s: float | None

    def __init__(self, started: float, hold_s: float, seed: int) -> None:
        self.started, self.hold_s, self.span_s, self.seed = started, hold_s, None, seed
        self.entries: list[str] = []
        self.polled: float | None = None  # when is_ready() first asked about its result, never waiting


class FunctionRecord:
    """One function jit made: its calls in order, its traces, and the trace count at each call and wait."""

    calls: list[Call]

    def __init__(self, retrace_at: set[int]) -> None:
        self.calls, self.traces, self.salt = [], 0, 0
        self.retrace_at = retrace_at  # ordinals of repeat calls at which the grader changes the static argument
        self.repeats = 0
        self.counts: list[tuple[int, int]] = []  # (calls made so far, traces so far) when a call or a wait arrived
        self.function: Any = None  # the function jit was given, as GraderJit.resolve found it
        # (stage, grader's span, arrival, release, the fingerprint sent) for each trace, lower and compile, in order;
        # a stage arrives when its beginning is announced, before JAX does it, and is released after its hold
        self.stages: list[tuple[str, float, float, float, str]] = []
        self.begun: dict[str, float] = {}  # stage -> arrival of its announced beginning, until it is done
        self.runs: list[Run] = []  # Run of each call of a program compile() returned, in order

    def counts_after(self, call: int) -> set[int]:
        """Trace counts the student's code could have read after call number `call` returned: at any later call or
        wait, and now."""
        return {traces for calls, traces in self.counts if calls > call} | {self.traces}


class GraderJit:
    """The grader's side: records per function, holds chosen here (see the module docstring)."""

    functions: list[FunctionRecord]
    number: int | None
    resolve: Callable[[int], Any] | None
    _kept: dict[int, Callable[..., Any]]

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng, self.functions, self.number = rng, [], None
        # The student's function each jit(fn) was given, from the number the stand-in reports for it: a reference
        # the channel sets up (RemoteRef), or, in one process, the function itself. The grader calls it with a
        # matrix of its own: a claim of the stand-in's, checked by values.
        self.resolve, self._kept = None, {}

    def _uniform(self, bounds):
        return float(self.rng.uniform(*bounds))

    def answer(self, message: str, received: float | None = None) -> str:
        """The grader's answer to one message of the kernel-side stand-in ('' when there is nothing to say)."""
        received = time.perf_counter() if received is None else received
        kind, *rest = str(message).split(" ")
        rest = rest[1:]  # the jit's own number, by which the channel found this one
        if kind == asks.ASK_JIT and len(self.functions) < MAX_FUNCTIONS:
            record = FunctionRecord(set(self.rng.choice(range(1, 6), size=int(self.rng.integers(1, 4)),
                                                        replace=False).tolist()))
            kept = rest[0] if rest else ""
            record.function = self.resolve(int(kept)) if kept.isdigit() and self.resolve else None
            self.functions.append(record)
            return str(len(self.functions) - 1)
        record = self._record(rest[:1])
        if record is None:
            return ""
        if kind in (asks.ASK_CALL, asks.ASK_READY):
            record.counts.append((len(record.calls), record.traces))
        if kind == asks.ASK_CALL and len(rest) >= 3:
            return self._call(record, (_shape(rest[1]), rest[2][:20]), received)
        if kind == asks.ASK_TRACED:
            record.traces += 1
        elif kind == asks.ASK_STAGE_BEGIN and len(rest) >= 2 and rest[1] in STAGES:
            record.begun[rest[1]] = received
        elif kind == asks.ASK_STAGE and len(rest) >= 2 and rest[1] in STAGES:
            began = record.begun.pop(rest[1], received)  # no beginning announced: the stage is only its hold
            time.sleep(self._stage_hold(record, received - began))
            released = time.perf_counter()
            product = rest[2][:products.FINGERPRINT_CHARS] if len(rest) >= 3 else products.NONE
            record.stages.append((rest[1], released - began, began, released, product))
        elif kind == asks.ASK_RUN:
            first = not record.runs
            long = first or self.rng.random() < 1 / 3
            hold = self._uniform(FIRST_RUN_HOLD_S if first else LONG_RUN_HOLD_S if long else SHORT_HOLD_S)
            seed = int(self.rng.integers(1, 2**31))
            record.runs.append(Run(received, hold, seed))
            time.sleep(self._uniform(CALL_HOLD_S))
            return f"{len(record.runs) - 1} {seed}"
        elif kind == asks.ASK_RUN_READY and len(rest) >= 2 and rest[1].isdigit() and \
                int(rest[1]) < len(record.runs):
            run = record.runs[int(rest[1])]
            if run.span_s is None:
                run.entries = rest[2:2 + PROBES]
                time.sleep(max(0.0, run.hold_s - (time.perf_counter() - received)))
                run.span_s = time.perf_counter() - run.started
        elif kind == asks.ASK_POLL and len(rest) >= 3 and rest[2].isdigit():
            return "1" if self._poll(record, rest[1], int(rest[2]), rest[3:], received) else ""
        elif kind == asks.ASK_READY and len(rest) >= 2 and rest[1].isdigit() and int(rest[1]) < len(record.calls):
            call = record.calls[int(rest[1])]
            if call.span_s is None:
                if call.probe:
                    call.gave_workload = computes_workload(call.probe, call.shape, rest[2:])
                if call.probe is not None and not call.gave_workload:
                    call.ready_hold_s = self._uniform(SHORT_HOLD_S)
                time.sleep(max(0.0, call.ready_hold_s - (time.perf_counter() - received)))
                call.span_s = time.perf_counter() - call.started
        return ""

    def _poll(self, record, what, index, entries, received):
        """Whether a call's or a run's result is ready now, never waiting: once its hold has passed since it was
        first polled. The entries (a probed first call's, a run's) are read at that first poll, as at a wait."""
        held = record.calls if what == "call" else record.runs if what == "run" else []
        if index >= len(held):
            return False
        item = held[index]
        if item.span_s is not None:
            return True
        if item.polled is None:
            item.polled = received
            if what == "run":
                item.entries = entries[:PROBES]
            elif item.probe is not None:
                item.gave_workload = computes_workload(item.probe, item.shape, entries) if item.probe else None
                if not item.gave_workload:
                    item.ready_hold_s = self._uniform(SHORT_HOLD_S)
        if received - item.polled < (item.ready_hold_s if what == "call" else item.hold_s):
            return False
        if what == "call":
            record.counts.append((len(record.calls), record.traces))
        item.span_s = time.perf_counter() - item.started
        return True

    def _stage_hold(self, record, elapsed):
        """A hold of STAGE_HOLD_S for a stage JAX did in `elapsed` s, drawn so that the stage's whole span differs by
        STAGES_APART_S or more from each span of the function's other stages: timings of two stages reported
        swapped then each miss the stage they claim (a few draws; the last is kept if none is apart)."""
        others = [span for _, span, *_ in record.stages]
        for _ in range(16):
            hold = self._uniform(STAGE_HOLD_S)
            if all(abs(elapsed + hold - span) >= STAGES_APART_S for span in others):
                break
        return hold

    def _record(self, number):
        if number and number[0].isdigit() and int(number[0]) < len(self.functions):
            return self.functions[int(number[0])]
        return None

    def _call(self, record, key, received):
        first_at_shape = all(call.shape != key[0] for call in record.calls)
        if not first_at_shape:
            record.repeats += 1
            record.salt += record.repeats in record.retrace_at
        probe = None
        if first_at_shape:
            hold = self._uniform(FIRST_HOLD_S)
            square = len(key[0]) == 2 and key[0][0] == key[0][1] and 0 < key[0][0] <= MAX_PROBED_N
            probe = int(self.rng.integers(1, 2**31)) if square else 0
        else:
            hold = self._uniform(LONG_HOLD_S if self.rng.random() < 1 / 3 else SHORT_HOLD_S)
        record.calls.append(Call(key, record.salt, received, hold, probe))
        time.sleep(self._uniform(CALL_HOLD_S))
        return f"{len(record.calls) - 1} {record.salt}" + (f" {probe}" if probe else "")

    def __call__(self, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """jit(fn) right here, for a test that runs in the student's own process (the checker, the notebook)."""
        if self.number is None:
            self.number = -next(_own_numbers)
            self.resolve = self._kept.get
        return make_jit(self.number, self.answer, self._keep)(fn)

    def _keep(self, fn):
        self._kept[len(self._kept) + 1] = fn
        return len(self._kept)

    def new_workload(self) -> "NewWorkload":
        """This jit of a new function computing tanh(x @ x), made where it is used (NewWorkload)."""
        return NewWorkload(self)


class NewWorkload:
    """jit(a new function computing tanh(x @ x)) for a test to hand to the student's code: handed to a student's
    kernel it crosses as a request to make it there (perfaudit/autograde/wire/channel.py); in one process it is made
    here on first use."""

    _made: Callable[[Any], Any] | None

    def __init__(self, jit: GraderJit) -> None:
        self.jit, self._made = jit, None

    def _jitted(self):
        if self._made is None:
            self._made = self.jit(new_workload())
        return self._made

    def __call__(self, x: Any) -> Any:
        return self._jitted()(x)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") and name not in ("__name__", "__qualname__", "__wrapped__"):
            raise AttributeError(name)
        return getattr(self._jitted(), name)


MAX_PROBED_N = 2048  # a larger first call is not probed (a matrix that size costs the student's memory) and is held
# as a call of another function: there the computation itself, not the hold, makes the first call long


def probe_entries(seed: int, rows: "ArrayLike", columns: "ArrayLike", n: int) -> np.ndarray:
    """Entries (rows, columns) of the grader's n x n matrix for a first call, a hash of (seed, row, column): uniform,
    mean 0, variance 1/sqrt(n), so that the entries of A @ A are about 1 in size, where tanh is far from both the
    identity and saturation (x @ x without tanh, or a constant, misses). Any entry costs the same to make, so the
    grader makes only the row and the column it checks, never the whole matrix of a size a kernel names."""
    rows, columns = np.broadcast_arrays(np.asarray(rows, np.uint64), np.asarray(columns, np.uint64))
    with np.errstate(over="ignore"):  # the hash wraps around 2**64 by design
        mix = np.uint64(seed) + rows * np.uint64(0x9E3779B97F4A7C15) + columns * np.uint64(0xC2B2AE3D27D4EB4F)
        for factor in (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53):  # MurmurHash3's finalizer
            mix = (mix ^ (mix >> np.uint64(33))) * np.uint64(factor)  # type: ignore[operator]  # uint64, as above
    uniform = (mix >> np.uint64(11)).astype(np.float64) / 2.0**53  # type: ignore[operator]  # mix is uint64
    return (uniform - 0.5) * math.sqrt(12) * n ** -0.25


def probed_at(seed: int, n: int) -> list[list[int]]:
    """The PROBES entries (row, column) the grader asks for, from seed."""
    return np.random.default_rng(seed).integers(0, n, size=(PROBES, 2)).tolist()


def _entries_are(seed: int, n: int, reported: list[str], expected_at: Callable[[int, int], float]) -> bool:
    """Whether the PROBES entries reported, at probed_at(seed, n), are expected_at(row, column) each."""
    if len(reported) != PROBES:
        return False
    for (i, j), text in zip(probed_at(seed, n), reported):
        try:
            value = float(text[:32])
        except ValueError:
            return False
        if not abs(value - expected_at(i, j)) <= PROBE_TOLERANCE:  # NaN fails too
            return False
    return True


def computes_workload(seed: int, shape: tuple[int, ...], reported: list[str]) -> bool:
    """Whether the entries a first call reported are those of tanh(A @ A) for the grader's matrix A."""
    if not seed:
        return False
    n, every = shape[0], np.arange(shape[0])

    def expected_at(i, j):
        row, column = probe_entries(seed, i, every, n), probe_entries(seed, every, j, n)
        return math.tanh(float(row.astype(np.float32).astype(np.float64) @ column.astype(np.float32)))

    return _entries_are(seed, n, reported, expected_at)


def gave_workload(seed: int, x: "ArrayLike", reported: list[str]) -> bool:
    """Whether the entries a run reported are those of tanh(x @ x) for the grader's matrix x, at probed_at(seed)."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        return False
    return _entries_are(seed, a.shape[0], reported, lambda i, j: math.tanh(float(a[i] @ a[:, j])))


def _shape(text):
    """'16x16' as the kernel-side stand-in reports a call's input shape: a tuple of a few small ints ('' is a
    scalar's ()), or ('?',) for anything else."""
    parts = text.split("x") if text else []
    if len(parts) > 8 or not all(p.isdigit() and len(p) < 10 for p in parts):
        return ("?",)
    return tuple(int(p) for p in parts)


# --- the kernel's side: runs in the student's process --------------------------------------------------------


def make_jit(number: int, ask: Callable[[str], str],
             keep: Callable[[Callable[..., Any]], int]) -> Callable[..., Callable[[Any], Any]]:
    """The stand-in's jit in the student's process: jit(fn) is jax.jit of fn with a static argument the grader
    picks at each call, reporting each trace, and returning results whose readiness the grader decides. keep(fn):
    the number by which the grader can call fn itself."""
    import jax  # the kernel's side only: the grader imports this module and never starts JAX for it

    functions = _registry.setdefault(number, [])

    def jit(fn, **_options):  # options such as donate_argnums change nothing a measurement of this workload sees
        index = int(ask(f"{asks.ASK_JIT} {number} {keep(fn)}") or len(functions))
        functions.append(fn)
        salts = [0]

        def traced(x, salt):
            ask(f"{asks.ASK_TRACED} {number} {index}")
            return fn(x)

        traced.__name__ = getattr(fn, "__name__", "audited")
        inner = jax.jit(traced, static_argnums=1)

        def audited(x):
            if isinstance(x, jax.core.Tracer):  # make_jaxpr(audited), or a jit around it: no call of the grader's
                return inner(x, salts[-1])
            shape = "x".join(str(n) for n in np.shape(x))
            dtype = str(getattr(x, "dtype", type(x).__name__)).replace(" ", "")
            answer = ask(f"{asks.ASK_CALL} {number} {index} {shape or '-'} {dtype}")
            call, salt, seed = (answer + " 0 0 0").split(" ")[:3]  # seed: a first call's question, 0 for none
            salts.append(int(salt) if salt.isdigit() else 0)
            result, salt = inner(x, salts[-1]), salts[-1]  # type: ignore[assignment]  # the salt as an int

            probed: list[str] = []

            def entries():  # a first call's answer to the grader's question, computed once
                if not probed:
                    probed.append(_probe(inner, x, salt, int(seed)) if seed.isdigit() and int(seed) else "")
                return probed[0]

            def ready():
                ask(f"{asks.ASK_READY} {number} {index} {call}{entries()}")

            def poll():
                return ask(f"{asks.ASK_POLL} {number} {index} call {call}{entries()}") == "1"

            return HeldResult(result, ready, poll)

        # The ahead-of-time API of a jitted function, at the static argument of the latest call; the grader holds
        # each stage once JAX has done it.
        def ask_about(kind, *more):
            return ask(" ".join((kind, str(number), str(index), *map(str, more))))

        # a function's attributes, as jax.jit's own function has them
        audited.trace = lambda x: _Stage.made(  # type: ignore[attr-defined]
            "trace", lambda: inner.trace(x, salts[-1]), ask_about)
        audited.lower = lambda x: audited.trace(x).lower()  # type: ignore[attr-defined]
        audited.eval_shape = lambda x: inner.eval_shape(x, salts[-1])  # type: ignore[attr-defined]
        audited.__name__, audited.__wrapped__ = traced.__name__, fn  # type: ignore[attr-defined]
        return audited

    return jit


_workloads = itertools.count(1)


def new_workload() -> Callable[[Any], Any]:
    """A new function computing tanh(x @ x), with a name of its own: nothing is cached for it, wherever it runs."""
    import jax.numpy as jnp  # the kernel's side only, as make_jit

    def audited(x):
        return jnp.tanh(x @ x)

    audited.__name__ = audited.__qualname__ = f"perfaudit_stages_{os.getpid()}_{next(_workloads)}"
    return audited


def _probe(inner, x, salt, seed):
    """' v1 v2 ...': the entries the grader asks for of the jitted function on the grader's matrix, given the shape,
    dtype and placement of x, so that JAX runs the program it just compiled ('' when that fails)."""
    import jax  # the kernel's side only, as make_jit

    try:
        n = np.shape(x)[0]
        every = np.arange(n)
        a = probe_entries(seed, every[:, None], every[None, :], n).astype(np.float32)
        a = np.asarray(a, dtype=getattr(x, "dtype", np.float32))
        placed = jax.device_put(a, x.sharding) if getattr(x, "committed", False) else jax.device_put(a)
        out = np.asarray(inner(placed, salt))
        return "".join(f" {float(out[i, j]):.5g}" for i, j in probed_at(seed, n))
    except Exception:  # anything but a square matrix out: not the workload
        return ""


class _Stage:
    """JAX's Traced or Lowered object, the stage that made it held by the grader; lower() and compile() are held in
    turn, and the program compile() returns runs as the grader holds it. Everything else is JAX's own. Each stage
    is announced before JAX does it and reported with the fingerprint of what it made once done, so that the
    grader's span of a stage holds JAX's own work and its hold, and nothing of the next stage."""

    def __init__(self, value: Any, ask: Callable[..., str]) -> None:
        self._value, self._ask = value, ask

    @classmethod
    def made(cls, stage: str, make: Callable[[], Any], ask: Callable[..., str]) -> "_Stage":
        return cls(_staged(stage, make, ask), ask)

    def lower(self, *args: Any, **kwargs: Any) -> "_Stage":
        return _Stage.made("lower", lambda: self._value.lower(*args, **kwargs), self._ask)

    def compile(self, *args: Any, **kwargs: Any) -> "_Compiled":
        return _Compiled(_staged("compile", lambda: self._value.compile(*args, **kwargs), self._ask, self._value),
                         self._ask)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._value, name)


def _staged(stage, make, ask, lowered=None):
    """What make() returns, JAX's stage, announced to the grader before and held by it after, with its fingerprint."""
    ask(asks.ASK_STAGE_BEGIN, stage)
    value = make()
    ask(asks.ASK_STAGE, stage, products.fingerprint(stage, value, lowered))
    return value


class _Compiled:
    """A compiled program whose every run the grader holds, and whose results it lets be ready when waited for."""

    def __init__(self, compiled: Any, ask: Callable[..., str]) -> None:
        self._compiled, self._ask = compiled, ask

    def __call__(self, *args: Any, **kwargs: Any) -> HeldResult:
        run, seed = (self._ask(asks.ASK_RUN) + " 0").split(" ")[:2]
        result = self._compiled(*args, **kwargs)
        return HeldResult(result, lambda: self._ask(asks.ASK_RUN_READY, run, *_entries(result, seed)),
                          lambda: self._ask(asks.ASK_POLL, "run", run, *_entries(result, seed)) == "1")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)


def _entries(result, seed):
    """The entries of a run's output the grader asks for (probed_at(seed, n)), as text; none for an output that is
    not a square matrix the grader probes."""
    try:
        out = np.asarray(result)
        if not seed.isdigit() or out.ndim != 2 or out.shape[0] != out.shape[1] or out.shape[0] > MAX_PROBED_N:
            return []
        return [f"{float(out[i, j]):.6g}" for i, j in probed_at(int(seed), out.shape[0])]
    except Exception:  # noqa: BLE001 - not an array: no entries
        return []
