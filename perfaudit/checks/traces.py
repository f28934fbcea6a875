"""Traces: the trace counter, retracing at a new cache key, the prediction exercise, and JAXPRs."""

import functools
import re

import numpy as np

from perfaudit.checks.failure import fail
from perfaudit.checks.outputs import as_matrix, compare, device_matrix, output_tolerance, random_matrix


def check_trace_count(count, expected=2):
    """The body is traced once per new input shape: two shapes, two traces."""
    if type(count) is int and count == expected:
        return
    if type(count) is not int:
        fail(f"the trace count should be an int; found {type(count).__name__} {count!r:.40}.")
    hint = {
        0: "Does the traced function body increment the counter?",
        1: "Did both shapes go through the same jitted function?",
    }.get(count, "Without jax.jit the Python body runs on every call: wrap it with jax.jit.")
    fail(f"expected exactly {expected} traces (one per input shape); found {count}. {hint}")


def _count(traces):
    count = traces()
    if type(count) is not int:
        fail(f"traces() should return an int; found {type(count).__name__} {count!r:.40}.")
    return count


def clear_cache(jitted):
    """Drop jitted's cached traces with its own method, as jax.jit's functions have (`audited.clear_cache()`): the
    grader asks the student's object to do it, runs no code of its own there, and then checks the effect (the next
    call at a seen key must trace again). A function that jit did not make has no trace cache to clear."""
    clear = getattr(jitted, "clear_cache", None)
    if not callable(clear):
        fail("audited has no clear_cache(), which every function jax.jit returns has: make audited with jax.jit, "
             "wrapped around the function whose body counts the traces.")
    clear()


def _clear_caches_then(*keys):
    """Calls at seen keys [(argument, what)] after JAX's caches were cleared: a real trace counter goes up by one at
    each, a set of keys does not, and two in a row leave no room for a counter that counts every other call."""
    return [(None, "audited.clear_cache()", None)] + [(a, f"{what} after audited.clear_cache()", 1) for a, what in keys]


def _shuffled_calls(rng, keys):
    """A random sequence over keys [(argument, what)]: each key's first call adds a trace, every repeat none. Each
    key is also called once, after its first call, with the same matrix as a NumPy array (_as_numpy)."""
    order = list(range(len(keys))) + [int(i) for i in rng.integers(0, len(keys), size=int(rng.integers(2, 5)))]
    rng.shuffle(order)
    seen, calls = set(), []
    for i in order:
        argument, what = keys[i]
        calls.append((argument, what if i not in seen else f"{what}, again", 0 if i in seen else 1))
        seen.add(i)
    for argument, what in keys:
        first = next(i for i, call in enumerate(calls) if call[1] == what)
        calls.insert(int(rng.integers(first + 1, len(calls) + 1)), _as_numpy(argument, what))
    return calls


def _as_numpy(argument, what):
    """A call at a seen key with the same matrix as a NumPy array, not a device array: jit converts it and traces
    nothing, but its dispatch cache keeps a NumPy argument apart from a device array of the same shape and dtype (one
    entry more, as for a float64 array): a count of jit's cache entries (`audited._cache_size()`) is no trace count."""
    return np.asarray(argument), f"{what}, again as a NumPy array (the same key: jit converts it)", 0


def _expect_traces(jitted, traces, calls):
    """calls: [(argument, what it is, traces it should add)], made in order; fail at the first that differs.
    An argument None is a clear_cache() step."""
    for argument, what, expected in calls:
        if argument is None:
            clear_cache(jitted)
            continue
        before = _count(traces)
        out = jitted(argument)
        added = _count(traces) - before
        _check_computes_workload(out, argument, what)
        if added != expected:
            hint = "Is the function wrapped in jax.jit, and does its body count every trace?"
            fail(f"{what} should add {expected} trace(s); traces() went up by {added}. {hint}")


def _check_computes_workload(out, argument, what):
    """The counted function computes tanh(x @ x) for the grader's matrix (a bfloat16 one is not compared: its
    rounding is the dtype's): a counter beside a function that does no work counts nothing worth counting."""
    if str(getattr(argument, "dtype", "")) not in ("float32", "float64"):
        return
    a = np.asarray(argument, dtype=np.float64)
    atol, assumed = output_tolerance()
    compare(as_matrix(out, f"audited for {what}"), np.tanh(a @ a), f"audited should compute tanh(x @ x): for {what}",
            atol=atol, assumed=assumed)


def check_retrace_on_new_shape(jitted, traces, rng=None):
    """Each shape the function has not seen costs exactly one trace, each repeat none, in any order; after
    audited.clear_cache() a shape it has seen is traced again (the counter counts traces, not shapes)."""
    rng = rng or np.random.default_rng()
    sizes = rng.choice([n for n in range(5, 48) if n not in (8, 16, 32)], size=3, replace=False)  # no notebook's
    keys = [(device_matrix(random_matrix(rng, int(n))), f"a call at {int(n)}x{int(n)}") for n in sizes]
    _expect_traces(jitted, traces, _shuffled_calls(rng, keys) + _clear_caches_then(keys[0], keys[1]))


def check_traces_follow_jit(jitted, traces, rng=None):
    """jit's cache key, not a set of shapes: a new shape and a new dtype trace again, in any order; a repeat and a
    float64 NumPy array that jit converts to float32 (x64 is off) do not; after audited.clear_cache() all trace
    again."""
    rng = rng or np.random.default_rng()
    n = int(rng.integers(48, 96))  # sizes check_retrace_on_new_shape and the notebooks never use
    a = random_matrix(rng, n)
    import jax.numpy as jnp  # JAX on first use: see perfaudit/checks/__init__.py

    keys = [(device_matrix(a), f"a call at {n}x{n} float32"),
            (device_matrix(a).astype(jnp.bfloat16), f"a call at {n}x{n} bfloat16 (a new dtype)")]
    calls = _shuffled_calls(rng, keys)
    first_f32 = next(i for i, (_, what, _) in enumerate(calls) if what == keys[0][1])
    calls.insert(first_f32 + 1, (a.astype(np.float64), f"a call with a {n}x{n} float64 NumPy array "
                                                         "(converted to float32: the key of the float32 call)", 0))
    _expect_traces(jitted, traces, calls + _clear_caches_then(keys[1], keys[0]))


# Notebook 2, Part C: predict how many new traces each call of a fixed sequence adds. The right answers are facts of
# the JAX this process runs, so they are measured here, by running the same sequence as the notebook's
# make_sequence cell (tests/checks/test_traces.py holds the two together), never typed in.
TRACE_CASES_INPUTS = ("f(a)", "f(a) again", "f(b)", "f(a64)", "jax.jit(square)(a)", "jax.jit(lambda x: square(x))(a)")
TRACE_CASES_ARGUMENTS = ("scale_jit(a, 2.0)", "scale_jit(a, 3.0)", "scale_jit(a, two)", "repeat_jit(a, 2)",
                         "repeat_jit(a, 3)", "repeat_jit(a, 2) again", "total_jit((a, a))", "total_jit([a, a])")
TRACE_HINTS = {
    "f(a)": "the first call of a jitted function traces its body",
    "f(a) again": "same function, same shape and dtype: the cache has it",
    "f(b)": "bfloat16 is a new dtype, so a new cache key",
    "f(a64)": "with 64-bit mode off JAX converts a float64 NumPy array to float32 before it looks in the cache: "
              "the key of f(a)",
    "jax.jit(square)(a)": "a second jax.jit wrapper of the same Python function shares that function's trace cache",
    "jax.jit(lambda x: square(x))(a)": "a lambda written again is a new function object, so JAX traces it, and "
                                       "tracing it runs square's Python body again",
    "scale_jit(a, 2.0)": "the first call of scale_jit traces",
    "scale_jit(a, 3.0)": "a Python float is a weakly typed float32 scalar: its type is in the key, its value is not",
    "scale_jit(a, two)": "two is a float32 array, strongly typed, where 2.0 was weakly typed: a new key",
    "repeat_jit(a, 2)": "the first call of repeat_jit traces",
    "repeat_jit(a, 3)": "the value of a static argument is part of the key, and 3 is new",
    "repeat_jit(a, 2) again": "k=2 is in the cache since the first call",
    "total_jit((a, a))": "the first call of total_jit traces",
    "total_jit([a, a])": "a list is another pytree structure than a tuple, even with the same leaves",
}


def trace_sequence():
    """The notebook's make_sequence(): new jitted functions whose bodies record each trace in `traced`, and the
    calls in order ({name: call}). Keep it the same as the notebook's cell."""
    # JAX on first use: see perfaudit/checks/__init__.py
    import jax
    import jax.numpy as jnp

    traced = []

    def square(x):
        traced.append("square")
        return jnp.tanh(x @ x)

    def scale(x, s):
        traced.append("scale")
        return x * s

    def repeat(x, k):
        traced.append("repeat")
        for _ in range(k):
            x = jnp.tanh(x)
        return x

    def total(xs):
        traced.append("total")
        return sum(xs)

    f = jax.jit(square)
    scale_jit = jax.jit(scale)
    repeat_jit = jax.jit(repeat, static_argnums=1)
    total_jit = jax.jit(total)

    a = jax.device_put(np.eye(16, dtype=np.float32))
    b = jax.device_put(np.eye(16, dtype=jnp.bfloat16))
    a64 = np.eye(16)
    two = jax.device_put(np.float32(2.0))

    return traced, {
        "f(a)": lambda: f(a),
        "f(a) again": lambda: f(a),
        "f(b)": lambda: f(b),
        "f(a64)": lambda: f(a64),
        "jax.jit(square)(a)": lambda: jax.jit(square)(a),
        "jax.jit(lambda x: square(x))(a)": lambda: jax.jit(lambda x: square(x))(a),
        "scale_jit(a, 2.0)": lambda: scale_jit(a, 2.0),
        "scale_jit(a, 3.0)": lambda: scale_jit(a, 3.0),
        "scale_jit(a, two)": lambda: scale_jit(a, two),
        "repeat_jit(a, 2)": lambda: repeat_jit(a, 2),
        "repeat_jit(a, 3)": lambda: repeat_jit(a, 3),
        "repeat_jit(a, 2) again": lambda: repeat_jit(a, 2),
        "total_jit((a, a))": lambda: total_jit((a, a)),
        "total_jit([a, a])": lambda: total_jit([a, a]),
    }


def count_new_traces(traced, sequence):
    """Make the calls in order; {name: how many entries each call added to traced}."""
    import jax  # JAX on first use: see perfaudit/checks/__init__.py

    added = {}
    for name, call in sequence.items():
        before = len(traced)
        jax.block_until_ready(call())
        added[name] = len(traced) - before
    return added


@functools.lru_cache(maxsize=1)
def _trace_count_answers():
    return tuple(count_new_traces(*trace_sequence()).items())


def trace_count_answers():
    """{call: new traces} for the sequence of notebook 2's Part C, measured once per process with this JAX."""
    return dict(_trace_count_answers())


def check_trace_predictions(predicted, answers, cases):
    """predicted_traces holds, for each of `cases`, the number of new traces that call adds, as `answers` has it."""
    cases = list(cases)
    if not isinstance(predicted, dict):
        fail(f"predicted_traces should be a dict from each call in SEQUENCE to a number; found "
              f"{type(predicted).__name__}.")
    missing = [case for case in cases if case not in predicted]
    if missing:
        fail(f"predicted_traces has no entry for {', '.join(map(repr, missing))}: it needs one for every call in "
              "SEQUENCE, spelled as SEQUENCE's keys (start from dict.fromkeys(SEQUENCE, 0)).")
    wrong = []
    for case in cases:
        guess = predicted[case]
        if isinstance(guess, bool) or not isinstance(guess, (int, np.integer)):
            fail(f"predicted_traces[{case!r}] should be an int, the number of new traces; found "
                  f"{type(guess).__name__} {guess!r:.40}.")
        if guess != answers[case]:
            wrong.append(f"  {case}: you predicted {guess}, JAX traced {answers[case]} time(s): {TRACE_HINTS[case]}.")
    if wrong:
        fail(f"{len(wrong)} of these {len(cases)} predictions differ from what JAX does:\n" + "\n".join(wrong) +
              "\nRead JAX's own explanation under each call in the output of the cell that runs SEQUENCE.")


_WRAPPERS = {"jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat", "checkpoint"}
_EQUATION = re.compile(r"((?:\b\w+:\w+\[[\d,]*\]\s*)+)= (\w+)")
_VARIABLE = re.compile(r"\b([a-z]+)(?::\w+\[[\d,]*\])?")
_STRUCTURE_PARAMS = ("dimension_numbers",)  # what makes a product x @ x (and not x @ x.T), however it is written


MAX_JAXPR_CHARS = 20_000  # a JAXPR of tanh(x @ x) has a few hundred characters at any shape; reading one costs
# more than its length (the equations' pattern), so a longer text is refused before it is read


def _equations(text):
    """[(output types, primitive, params, operands)] of a JAXPR's text, in order, call wrappers left out: their
    inner equations stand for them, so make_jaxpr of a jitted function and of the function itself read alike."""
    if len(text) > MAX_JAXPR_CHARS:
        fail(f"the JAXPR text has {len(text):,} characters: a JAXPR of tanh(x @ x) has a few hundred. Save "
             "str(jax.make_jaxpr(f)(x)) itself.")
    found = []
    for match in _EQUATION.finditer(text):
        outputs, primitive = match.group(1).split(), match.group(2)
        if primitive in _WRAPPERS:
            continue
        rest, params = text[match.end():], ""
        if rest.startswith("["):  # balanced brackets: params can span lines and nest
            depth = 0
            for i, char in enumerate(rest):
                depth += {"[": 1, "]": -1}.get(char, 0)
                if depth == 0:
                    params, rest = rest[1:i], rest[i + 1:]
                    break
        operands = rest.split("\n", 1)[0].split()
        found.append((outputs, primitive, " ".join(params.split()), operands))
    return found


def jaxpr_canonical(text, params=None):
    """A JAXPR's computation with its variables renamed in order of use: two texts of the same program compare equal
    whatever names, wrappers and layout they have. params: the names of the params kept (None: all of them)."""
    names, program = {}, []
    for outputs, primitive, found, operands in _equations(str(text)):
        if params is not None:
            found = " ".join(p for p in re.split(r"\s(?=\w+=)", found) if p.split("=", 1)[0] in params)
        found = re.sub(r"name=\S+\s?", "", found)
        operands = [names.setdefault(_VARIABLE.fullmatch(o).group(1), f"v{len(names)}")
                    if _VARIABLE.fullmatch(o) else o for o in operands]
        kinds = [o.split(":", 1)[1] for o in outputs]
        for o in outputs:
            names[o.split(":", 1)[0]] = f"v{len(names)}"
        program.append((tuple(kinds), primitive, found, tuple(operands)))
    return program


def _dimension_numbers(params):
    """dimension_numbers=(([1], [0]), ([], [])) as its index lists in order, ((1,), (0,), (), ()), however JAX
    brackets them: what a product contracts and batches, read alike across JAX's ways of printing it."""
    groups = re.findall(r"[\[(]([\d,\s]*)[\])]", params)
    return "dimension_numbers=" + repr(tuple(tuple(int(i) for i in re.findall(r"\d+", g)) for g in groups))


def jaxpr_program(text):
    """The computation a JAXPR's text describes: [(output types, primitive, structural params, operands)]."""
    return [(kinds, primitive, _dimension_numbers(params) if params else params, operands)
            for kinds, primitive, params, operands in jaxpr_canonical(text, params=_STRUCTURE_PARAMS)]


def workload_program(n=16):
    """The program of tanh(x @ x) at n x n float32, as jaxpr_program reads it: one dot_general of x with itself that
    contracts x's columns with its rows and batches nothing (x @ x, not x @ x.T), then tanh of its result, both
    n x n float32. Written out from the primitives, so that the checks need no implementation of the workload."""
    kind = (f"f32[{n},{n}]",)
    return [(kind, "dot_general", "dimension_numbers=((1,), (0,), (), ())", ("v0", "v0")), (kind, "tanh", "", ("v1",))]


def jaxpr_of(jitted, n=16):
    """The JAXPR of jitted at n x n float32, asked of jitted itself with JAX's own methods on it
    (`jitted.trace(x).jaxpr.pretty_print()`), or None when it has no `trace` (a function jit did not make)."""
    trace = getattr(jitted, "trace", None)
    if not callable(trace):
        return None
    made = trace(device_matrix(np.eye(n))).jaxpr.pretty_print(use_color=False)
    if not isinstance(made, str):
        fail("audited.trace(x).jaxpr.pretty_print() should give the JAXPR's text, as it does for jax.jit's functions.")
    return made


def check_jaxpr_is_of(jitted, text, n=16):
    """The saved JAXPR is the one of `jitted` itself: the same equations as jitted's own trace at n x n, which must be
    the workload's (check_jaxpr_text). A function jit did not make has no trace to ask, so nothing shows the text
    is its JAXPR: it fails (a text typed in is no JAXPR of audited). jitted must compute tanh(x @ x) for a matrix
    the grader draws: the trace is asked of the student's object, so what it computes is checked too."""
    rng = np.random.default_rng()
    a = random_matrix(rng, n)
    _check_computes_workload(jitted(device_matrix(a)), a, f"a random {n}x{n} matrix")
    made = jaxpr_of(jitted, n)
    if made is None:
        fail("audited has no trace(), so jaxpr_text cannot be shown to be its JAXPR: make audited with "
             "jax.jit(counted_workload) and save str(jax.make_jaxpr(audited)(x16)).")
    if jaxpr_canonical(made) != jaxpr_canonical(str(text)):
        fail("jaxpr_text should be the JAXPR of audited itself: str(jax.make_jaxpr(audited)(x16)).")
    check_jaxpr_text(made, n)


def check_jaxpr_text(text, n=16):
    """The JAXPR of tanh(x @ x) at 16x16: its equations are a dot_general of x with itself, then tanh, at n x n
    float32 (workload_program)."""
    if not isinstance(text, str):
        fail(f"the JAXPR should be saved as text (str(jax.make_jaxpr(f)(x))); found {type(text).__name__}.")
    expected, found = workload_program(n), jaxpr_program(text)
    if found != expected:
        shown = ", ".join(f"{p} -> {' '.join(k)}" for k, p, *_ in found) or "no equations"
        want = ", ".join(f"{p} -> {' '.join(k)}" for k, p, *_ in expected)
        fail(f"the JAXPR of tanh(x @ x) at {n}x{n} float32 should compute {want}; this one computes {shown}. "
              "Save str(jax.make_jaxpr(f)(x)) for the 16x16 input.")
