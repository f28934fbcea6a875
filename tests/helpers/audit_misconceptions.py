"""Notebook 5's misconceptions as fixtures: each is a solution cell as a student might write it, named by what it must
do: fail the visible self-check named in its name, with a message that names the mistake (`message`, a regular
expression) and blames nothing the student got right (`blames_not`). tests/checks/test_audit.py runs the source
notebook's own cells (perfaudit/../source/performance-audit/05-audit.ipynb), with the instructor's solution in every
other cell, and the fixture in its cell."""

import io
import json
import os
from contextlib import redirect_stdout
from dataclasses import dataclass

from perfaudit import paths, variants

NOTEBOOK = paths.ROOT / "source" / "performance-audit" / "05-audit.ipynb"


@dataclass(frozen=True)
class Misconception:
    cell: str  # the grade_id of the solution cell it replaces
    source: str  # what the student wrote there
    message: str  # a regular expression the failing self-check's message matches
    blames_not: tuple[str, ...] = ()  # words the message must not hold: it blames what is right


COUNTER = '''
def count_traces(train, w, batches, lr0):
    traces = 0

    def counting_jit(fn, **options):
{body}
    jax.block_until_ready(train(w, batches, lr0, jit=counting_jit))
    return traces
'''

FIX = '''
def fixed_train(w, batches, lr0, jit=jax.jit):
    size = max(len(y) for _, y in batches)

    def step(w, x, y, n, lr{static_parameter}):
        err = jnp.where(jnp.arange(x.shape[0]) < n, x @ w - y, 0.0)
        return w - lr * x.T @ err / n, jnp.sum(err ** 2) / {divisor}

    step = jit(step{options})
    losses = []
    for i, (x, y) in enumerate(batches):
        n = len(y)
{pad}
        w, loss = step(w, x_padded, y_padded, n, handout.learning_rate(lr0, i){static_argument})
        losses.append(loss)
    return w, losses
'''
NUMPY_PAD = '''        x_padded = np.zeros((size, x.shape[1]), dtype=np.float32)
        x_padded[:n] = x
        y_padded = np.zeros(size, dtype=np.float32)
        y_padded[:n] = y'''
JNP_PAD = '''        x_padded = jnp.pad(x, ((0, size - n), (0, 0)))
        y_padded = jnp.pad(y, (0, size - n))'''


def fix(static_parameter="", divisor="n", options="", pad=NUMPY_PAD, static_argument=""):
    return FIX.format(static_parameter=static_parameter, divisor=divisor, options=options, pad=pad,
                      static_argument=static_argument)


MISCONCEPTIONS = {
    "fails-selfcheck_count_traces-counts-calls": Misconception("count_traces", COUNTER.format(body='''
        jitted = jax.jit(fn, **options)

        def counted(*args, **kwargs):
            nonlocal traces
            traces += 1  # at every call of the step: a count of calls
            return jitted(*args, **kwargs)

        return counted
'''), "counts calls, not traces", ("static", "signature")),
    "fails-selfcheck_count_traces-counts-compilations": Misconception("count_traces", '''
def count_traces(train, w, batches, lr0):
    compiles = 0

    def listener(event, duration_s, **kwargs):  # JAX reports each program XLA compiles
        nonlocal compiles
        if event == "/jax/core/compile/backend_compile_duration":
            compiles += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        jax.block_until_ready(train(w, batches, lr0))
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return compiles
''', r"more than its traces: a count of what JAX compiled\?", ("static", "signature", "counts calls")),
    "fails-selfcheck_count_traces-drops-static-argnums": Misconception("count_traces", COUNTER.format(body='''
        @functools.wraps(fn)
        def counted(*args, **kwargs):
            nonlocal traces
            traces += 1
            return fn(*args, **kwargs)

        return jax.jit(counted)  # the loop's options left out
'''), r"did not hand jax.jit the option the loop gave it \(static_argnums=4\)", ("counts calls",)),
    "fails-selfcheck_count_traces-takes-no-options": Misconception("count_traces", '''
def count_traces(train, w, batches, lr0):
    traces = 0

    def counting_jit(fn):  # no options at all
        @functools.wraps(fn)
        def counted(*args, **kwargs):
            nonlocal traces
            traces += 1
            return fn(*args, **kwargs)

        return jax.jit(counted)

    jax.block_until_ready(train(w, batches, lr0, jit=counting_jit))
    return traces
''', "unexpected keyword argument 'static_argnums'.*must take those options", ("counts calls",)),
    "fails-selfcheck_count_traces-drops-static-argnames-signature": Misconception("count_traces", COUNTER.format(
        body='''
        def counted(*args, **kwargs):  # no functools.wraps: jax.jit sees (*args, **kwargs)
            nonlocal traces
            traces += 1
            return fn(*args, **kwargs)

        return jax.jit(counted, **options)
'''), r"static_argnames='stage'.*functools.wraps\(fn\) keeps it", ("counts calls",)),
    "fails-selfcheck_count_traces-takes-positional-arguments-only": Misconception("count_traces", COUNTER.format(
        body='''
        def counted(*args):  # no functools.wraps, no keywords: jax.jit finds no `stage` to make static
            nonlocal traces
            traces += 1
            return fn(*args)

        return jax.jit(counted, **options)
'''), r"jax.jit refused the loop's static_argnames .* functools.wraps\(fn\) gives it fn's signature",
        ("counts calls",)),
    "fails-selfcheck_time_loop-waits-for-the-weights-only": Misconception("time_loop", '''
def time_loop(run, data):
    start = time.perf_counter()
    out = run(data)
    out[0].block_until_ready()  # the weights; the losses are left running
    return time.perf_counter() - start
''', r"waited for 1 of the \d+ arrays run\(data\) returned", ()),
    "fails-selfcheck_time_loop-waits-for-the-last-loss-only": Misconception("time_loop", '''
def time_loop(run, data):
    start = time.perf_counter()
    w, losses = run(data)
    losses[-1].block_until_ready()
    return time.perf_counter() - start
''', r"waited for 1 of the \d+ arrays run\(data\) returned", ()),
    "fails-selfcheck_fixed_train-pads-with-jnp-outside-jit": Misconception("fixed_train", fix(pad=JNP_PAD),
        r"compiled jit\(_pad\) \d+ times.* a jax.numpy call outside the step", ("static", "mean", "differs")),
    "fails-selfcheck_fixed_train-keeps-the-step-number-static": Misconception("fixed_train", fix(
        static_parameter=", i", options=", static_argnums=5", static_argument=", i"),
        r"argument 5: 0 \(static\), 1 \(static\).*a value that changes from step to step is static",
        ("shape", "pad every batch", "count_traces")),
    "fails-selfcheck_fixed_train-keeps-the-learning-rate-static": Misconception("fixed_train", fix(
        options=", static_argnums=4"), r"argument 4: .*\(static\).*a value that changes from step to step is static",
        ("shape", "pad every batch", "count_traces")),
    "fails-selfcheck_fixed_train-starts-from-zeros": Misconception("fixed_train", fix().replace(
        "    losses = []\n", "    w = jnp.zeros(len(w), dtype=jnp.float32)  # a fresh start\n    losses = []\n"),
        r"given starting weights other than zeros, returned the weights the handed-out loop ends with from zeros",
        ("mean", "static", "learning rate")),
    "fails-selfcheck_fixed_train-mean-counts-the-padding": Misconception("fixed_train", fix(divisor="x.shape[0]"),
        r"over \d+ rows, but the batch has \d+: the mean counts the padded rows", ("learning rate", "static")),
    "fails-selfcheck_fixed_train-jits-its-step-inside-the-loop": Misconception("fixed_train", fix().replace(
        "    step = jit(step)\n", "").replace("        w, loss = step(", "        w, loss = jit(step)("),
        r"nothing in the arguments changed between its traces: jit was called again for each step.*make the step "
        r"once, before the loop", ("pad every batch", "static", "mean", "count_traces")),
    "fails-selfcheck_findings-names-a-wrong-cause": Misconception("findings", '''
findings = {  # variant A: its retrace blamed on a static argument, which nothing measured shows
    "retrace-static-argument": f"{original_traces} traces over {len(batches)} steps: something static changes",
    "jnp-outside-jit": f"the compile log shows {', '.join(eager_compiles)} compiled outside the jitted step",
    "timed-before-ready": f"the results were ready {missed_s * 1e3:.1f} ms after the benchmark's clock stopped",
}
''', r"names 'retrace-static-argument', but what you measured does not back it: over batches of one size the "
        r"loop traced 1 time", ("leaves it out",)),
    "fails-selfcheck_findings-lists-everything": Misconception("findings", '''
findings = {problem: f"measured: {original_traces} traces, {eager_compiles}, {missed_s:.3f} s missed"
            for problem in handout.PROBLEMS}
''', r"names 'retrace-static-argument', but what you measured does not back it", ("leaves it out",)),
    "fails-selfcheck_findings-leaves-a-measured-problem-out": Misconception("findings", '''
findings = {
    "retrace-new-shape": f"{original_traces} traces over the notebook's batches, {one_size_traces} at one size",
    "jnp-outside-jit": f"the compile log shows {', '.join(eager_compiles)} compiled outside the jitted step",
}
''', r"backs 'timed-before-ready' \(the results were ready .* ms after the benchmark's clock stopped.*leaves it out",
        ("does not back",)),
}


def cells():
    """{grade_id: source} of the source notebook's code cells, in order."""
    notebook = json.loads(NOTEBOOK.read_text())
    return {cell["metadata"]["nbgrader"]["grade_id"]: "".join(cell["source"]) for cell in notebook["cells"]
            if cell["cell_type"] == "code"}


def student_with(variant):
    """A student id whose variant of notebook 5 is `variant` (perfaudit/variants.py): student-0, student-1, ..."""
    return next(f"student-{n}" for n in range(1000) if variants.assigned(f"student-{n}").variant == variant)


def run_cells(names, replaced=None, variant="A"):
    """Run the notebook's cells `names`, in order, in one namespace (the fixture's source in place of its cell),
    as a student whose variant is `variant`; returns the namespace. What they print is kept out of the test's
    output."""
    namespace, sources = {"__name__": "__main__"}, cells()
    before = os.environ.get(variants.STUDENT_ENV)
    os.environ[variants.STUDENT_ENV] = student_with(variant)
    try:
        for name in names:
            source = replaced.source if replaced is not None and name == replaced.cell else sources[name]
            with redirect_stdout(io.StringIO()):
                exec(compile(source, f"<05-audit.ipynb: {name}>", "exec"), namespace)
    finally:
        if before is None:
            del os.environ[variants.STUDENT_ENV]
        else:
            os.environ[variants.STUDENT_ENV] = before
    return namespace
