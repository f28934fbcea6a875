"""The grader's jit for a training loop (notebook 5): hidden tests hand it to the student's fixed_train as `jit`.

Each function the loop makes with it is jax.jit of that function with the options the loop gave (static_argnums,
static_argnames, ...), and the grader counts each of its traces itself: in a graded kernel each trace asks on the
kernel's stdin, and the grader's side counts the question (perfaudit/autograde/wire/channel.py); in one process (the
checker, a test) it counts here. So "fixed_train traces once per loop" is the grader's own count, whatever the
student's count_traces says.

With `restart=(given, instead)` the loop runs from other weights than it was given, in its jitted programs only: inside
each program the grader's jit makes, the given weights (the ones the grader handed the loop: cast, reshaped, or
packed into a longer array with other values, as a traced argument or a constant the function closes over) are
`instead`. A fix whose steps carry the weights through the functions it jitted ends where the handed-out loop ends
from `instead`; one whose weights come from anywhere else (the NumPy reference or the handed-out loop, beside a token
call or sent through a jitted identity; NumPy updates that copy a jitted NaN) ends where the loop ends from `given`.
The kernel can learn `instead`, though: the jit it is handed holds it in its closure, and a jitted function that
returns the weights it was passed hands it back; a fix written against the grader can then train from it in NumPy
(admitted in docs/grading-security.md).

Each trace also says whether the function's program computes a step's arithmetic in JAX (a matrix product, or a
product summed, and no call back into Python: computes_a_step), which a fix's step does however it takes its data.

With `watch` (the grader's batches' x) the jit also finds which of those batches reached the functions made with it
(Watch): as an argument of a call (padded, stacked, joined with y or transposed, as a fix may take them; at run time
where the call is inside another trace, a scan or the student's own jax.jit) or as a constant a program closes over.
A fix computes each step in JAX, so each batch reaches it; a loop that runs a first step, or a token call, in JAX and
the rest in NumPy leaves batches that never did. The kernel reports them once the loop has returned (the agent asks
ASK_FED after the grader's call), so a timed loop pays one question, not one a step.
"""

import functools
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

RESTART_TOLERANCE = 1e-5  # relative: the given weights as the loop passes them, cast (float32, float64) or reshaped
RESTART_MAX_SIZE = 1 << 16  # arrays the given weights are looked for in, at most (a loop's stacked batches fit)


class LoopJit:
    """The grader's side: `traces`, counted as each is reported. Called in one process, it is the jit itself."""

    number: int | None

    def __init__(self, restart: tuple[Sequence[float], Sequence[float]] | None = None,
                 watch: Iterable[Any] | None = None) -> None:
        self.restart, self.traces, self.computing, self.number = restart, 0, 0, None
        self.functions: set[str] = set()  # which of the functions made with it traced, as the loop numbered them
        self.watch = None if watch is None else [fingerprint(x) for x in watch]
        self.reported: set[int] = set()  # the watched batches the kernel reported (the wire's ASK_FED)
        self._jit: Callable[..., Callable[..., Any]] | None = None

    def reached(self, indices: Iterable[int]) -> None:
        self.reported.update(i for i in indices if 0 <= i < len(self.watch or ()))

    def fed(self) -> set[int]:
        """The watched batches that reached a function made with it: as the kernel reported, or, in one process,
        found here."""
        if self._jit is not None:
            return self._jit.fed()  # type: ignore[attr-defined]
        return set(self.reported)

    def traced(self, computes: bool, function: str = "0") -> None:
        self.traces += 1
        self.computing += computes
        self.functions.add(function[:8])

    def __call__(self, fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        if self._jit is None:  # one jit, which numbers the functions made with it
            self._jit = make_loop_jit(self.traced, self.restart, self.watch)
        return self._jit(fn, **options)


def make_loop_jit(traced: Callable[[bool, str], Any], restart: tuple[Sequence[float], Sequence[float]] | None = None,
                  watch: Sequence[Any] | None = None) -> Callable[..., Callable[..., Any]]:
    """The jit, where the loop runs: jax.jit(fn, **options) whose body calls traced(whether fn computes a step, which
    function made with this jit it is) at each trace (and, with restart, runs fn's program with the other weights in
    place of the given ones). Its `fed()` is the watched batches that reached the functions it made (Watch)."""
    import jax  # where the loop runs only: the grader imports this module and never starts JAX for it
    import numpy as np

    made: list[str] = []
    seen = Watch(watch or ())

    def jit(fn, **options):
        function = str(len(made))
        made.append(function)

        @functools.wraps(fn)  # jax.jit finds static_argnames in fn's signature
        def counted(*a, **k):
            program = Program(fn, a, k)
            traced(program.computes_a_step(), function)
            if watch and program.closed is not None:
                seen.keep(program.closed.consts)  # batches the program closes over reach it too
            if restart is None:
                return fn(*a, **k)
            return program.run_restarted(*(np.asarray(v, np.float64).ravel() for v in restart))

        jitted = jax.jit(counted, **options)
        return Watched(jitted, seen) if watch else jitted

    jit.fed = seen.found  # type: ignore[attr-defined]
    return jit


class Watched:
    """A function made with the grader's jit, watched: jax.jit's function, whose calls first show their arguments to
    the Watch; its ahead-of-time stages (trace, lower, compile) are watched too, so a program compiled ahead of time
    shows what it is called on. Anything else (eval_shape, ...) is jax.jit's."""

    STAGES = ("trace", "lower", "compile")

    def __init__(self, jitted: Any, watch: "Watch") -> None:
        self._jitted, self._watch, self.__wrapped__ = jitted, watch, jitted  # inspect.signature follows __wrapped__

    def __call__(self, *a: Any, **k: Any) -> Any:
        self._watch.keep((a, k))
        return self._jitted(*a, **k)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._jitted, name)
        if name not in self.STAGES:
            return found

        @functools.wraps(found)
        def staged(*a, **k):
            return Watched(found(*a, **k), self._watch)

        return staged


def fingerprint(x: Any) -> list[Any]:
    """A batch's x as the kernel looks for it: [rows, its first row, a digest of all of it], each as float32."""
    import numpy as np  # the grader's NumPy, or the kernel's

    rows = np.ascontiguousarray(np.asarray(x, np.float32).reshape(len(x), -1))
    return [len(rows), rows[0].tolist(), hashlib.sha256(rows.tobytes()).hexdigest()]


class Watch:
    """Which watched batches (fingerprint) the arrays handed to the jit's functions hold. The arrays are kept as they
    are handed in (a NumPy array copied: a loop may refill one buffer at each step) and searched once the loop has
    returned (found), so a step pays a copy, not a search."""

    def __init__(self, fingerprints: Sequence[Any]) -> None:
        self.fingerprints = list(fingerprints)
        self.kept: list[Any] = []  # concrete arrays, NumPy or JAX

    def keep(self, values: Any) -> None:
        """The float arrays of two dimensions or more among values; those that are a trace's (a call inside a scan or
        another jit), at run time, through a debug callback."""
        import jax  # where the loop runs only, as make_loop_jit's
        import numpy as np

        if not self.fingerprints:
            return
        arrays = [leaf for leaf in jax.tree_util.tree_leaves(values)
                  if getattr(leaf, "ndim", 0) >= 2 and np.issubdtype(getattr(leaf, "dtype", np.int8), np.floating)]
        abstract = [leaf for leaf in arrays if isinstance(leaf, jax.core.Tracer)]
        self.kept.extend(np.array(leaf) if isinstance(leaf, np.ndarray) else leaf
                         for leaf in arrays if not isinstance(leaf, jax.core.Tracer))
        if abstract:
            jax.debug.callback(lambda *values: self.kept.extend(np.array(v) for v in values), *abstract)

    def found(self) -> set[int]:
        """The watched batches that some kept array holds: each batch's rows in a row, as they are or with the
        array's last two axes swapped, in its first or last columns (x joined with y), padding around them."""
        import jax  # where the loop runs only, as make_loop_jit's
        import numpy as np

        jax.effects_barrier()  # the debug callbacks of a program that has run
        found: set[int] = set()
        for array in list(self.kept):
            array = np.asarray(array, np.float32)
            for view in (array, np.swapaxes(array, -1, -2)):
                for rows in _column_windows(view, len(self.fingerprints[0][1])):
                    found |= {i for i, fp in enumerate(self.fingerprints) if i not in found and _holds(rows, fp)}
        return found


def _column_windows(view: Any, features: int) -> list[Any]:
    """view's first and last `features` columns, as rows of that many values (none where it has fewer columns)."""
    import numpy as np  # where the loop runs only, as make_loop_jit's

    columns = view.shape[-1]
    if columns < features:
        return []
    return [np.ascontiguousarray(view[..., start:start + features]).reshape(-1, features)
            for start in sorted({0, columns - features})]


def _holds(rows: Any, fp: Sequence[Any]) -> bool:
    """Whether rows holds the fingerprinted batch's rows, one after another."""
    import numpy as np  # where the loop runs only, as make_loop_jit's

    count, first, digest = fp
    for start in np.flatnonzero((rows == np.float32(first)).all(axis=1)):
        block = rows[start:start + count]
        if len(block) == count and hashlib.sha256(block.tobytes()).hexdigest() == digest:
            return True
    return False


STEP_ARITHMETIC = {"dot_general", "conv_general_dilated"}  # a matrix product, however it is written (@, einsum, ...)
HOST_CALLS = {"pure_callback", "io_callback"}  # values computed in Python, handed back to the program


class Program:
    """fn's program on these arguments (the traced ones abstract, static ones as given): traced once more, apart from
    the jit's own trace, which stays fn's business."""

    def __init__(self, fn: Callable[..., Any], a: tuple, k: dict) -> None:
        import jax  # where the loop runs only, as make_loop_jit's

        self.closed: Any = None  # fn's ClosedJaxpr, or None where fn's trace fails
        self.fn, (self.leaves, self.tree) = fn, jax.tree_util.tree_flatten((a, k))
        self.at = [i for i, leaf in enumerate(self.leaves) if isinstance(leaf, jax.core.Tracer)]
        try:
            self.closed, shape = jax.make_jaxpr(self._called, return_shape=True)(*(
                jax.ShapeDtypeStruct(self.leaves[i].shape, self.leaves[i].dtype, weak_type=_weak(self.leaves[i]))
                for i in self.at))  # a Python number stays weak: the program promotes types as fn's own trace does
            self.out_tree = jax.tree_util.tree_structure(shape)
        except Exception:  # noqa: BLE001 - fn's own trace reports what is wrong with it; this one only judges it
            self.closed = None

    def _called(self, *traced):
        import jax  # where the loop runs only, as make_loop_jit's

        filled = list(self.leaves)
        for i, value in zip(self.at, traced):
            filled[i] = value
        a, k = jax.tree_util.tree_unflatten(self.tree, filled)
        return self.fn(*a, **k)

    def computes_a_step(self) -> bool:
        """Whether the program computes a step's arithmetic: a matrix product, or a product that is summed, in it or in
        any program it holds (scan, while, a nested jit, a branch), and hands nothing to Python to compute."""
        if self.closed is None:
            return False
        names = _primitives(self.closed.jaxpr)
        return not names & HOST_CALLS and (bool(names & STEP_ARITHMETIC) or {"mul", "reduce_sum"} <= names)

    def run_restarted(self, given: Any, instead: Any) -> Any:
        """The program's outputs, in the jit's trace, with `instead` wherever an argument or a constant it closes over
        holds `given`."""
        # where the loop runs only, as make_loop_jit's
        import jax
        import numpy as np

        traced = [_restarted_traced(self.leaves[i], given, instead) for i in self.at]
        if self.closed is None:
            return self._called(*traced)
        # a constant may be a tracer of an enclosing trace (the step made inside the student's own jitted function,
        # closing over its values): restarted in the program as an argument is
        consts = [_restarted_traced(c, given, instead) if isinstance(c, jax.core.Tracer)
                  else _restarted_constant(np.asarray(c), given, instead) for c in self.closed.consts]
        flat = jax.core.eval_jaxpr(self.closed.jaxpr, consts, *traced)
        return jax.tree_util.tree_unflatten(self.out_tree, flat)


def _weak(traced: Any) -> bool:
    return bool(getattr(getattr(traced, "aval", None), "weak_type", False))


def _restarted_traced(value, given, instead):
    """value, in the program, with instead at the first place its flat values hold given (there is no branch of
    Python: the values are not known while tracing)."""
    # where the loop runs only, as make_loop_jit's
    import jax
    import jax.numpy as jnp

    size = given.size
    if not isinstance(value, jax.core.Tracer) or not jnp.issubdtype(value.dtype, jnp.floating) \
            or not size <= value.size <= RESTART_MAX_SIZE:
        return value
    flat, was = value.ravel(), jnp.asarray(given, value.dtype)
    places = jnp.arange(value.size - size + 1)[:, None] + jnp.arange(size)[None, :]
    found = jnp.all(jnp.abs(flat[places] - was) <= RESTART_TOLERANCE * (1 + jnp.abs(was)), axis=1)
    replaced = jax.lax.dynamic_update_slice(flat, jnp.asarray(instead, value.dtype), (jnp.argmax(found),))
    return jnp.where(found.any(), replaced, flat).reshape(value.shape)


def _restarted_constant(value, given, instead):
    """A constant of the program (known: NumPy), with instead at the first place its flat values hold given."""
    import numpy as np  # where the loop runs only, as make_loop_jit's

    size = given.size
    if not np.issubdtype(value.dtype, np.floating) or not size <= value.size <= RESTART_MAX_SIZE:
        return value
    flat = value.ravel()
    windows = np.lib.stride_tricks.sliding_window_view(flat.astype(np.float64), size)
    found = np.all(np.abs(windows - given) <= RESTART_TOLERANCE * (1 + np.abs(given)), axis=1)
    if not found.any():
        return value
    start = int(np.argmax(found))
    flat = flat.copy()
    flat[start:start + size] = instead.astype(value.dtype)
    return flat.reshape(value.shape)


def _primitives(jaxpr: Any) -> set[str]:
    """The names of the primitives in jaxpr and in every program it holds."""
    names = set()
    stack = [jaxpr]
    while stack:
        program = stack.pop()
        for eqn in program.eqns:
            names.add(eqn.primitive.name)
            for param in eqn.params.values():
                for inner in param if isinstance(param, (list, tuple)) else (param,):
                    inner = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr's program
                    if hasattr(inner, "eqns"):
                        stack.append(inner)
    return names
