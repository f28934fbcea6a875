"""Notebook 05's release with honest solutions written three ways, and copies of them, in a submitted/ folder.

For the similarity page's tests (tests/grade/test_similarity.py): real notebooks, the release's own with each
solution cell's code replaced by a student's, as Jupyter saves them. Each honest student answers every solution
cell in a way of their own (the checks of notebook 05 would pass each); a copy is one of them disguised.
"""

import json
import re
from pathlib import Path

from perfaudit import ASSIGNMENT, paths

NOTEBOOK = "05-audit"
RELEASE = paths.ROOT / "notebooks" / ASSIGNMENT

HONEST_A = {
    "count_traces": '''def count_traces(train, w, batches, lr0):
    """How many times train(w, batches, lr0, jit=...) traces over the loop."""
    traces = 0

    def counting_jit(fn, **options):
        @functools.wraps(fn)
        def counted(*args, **kwargs):
            nonlocal traces
            traces += 1  # Python runs this only while JAX traces
            return fn(*args, **kwargs)

        return jax.jit(counted, **options)

    jax.block_until_ready(train(w, batches, lr0, jit=counting_jit))
    return traces
''',
    "time_loop": '''def time_loop(run, data):
    """Seconds from calling run(data) until everything it returns is ready."""
    start = time.perf_counter()
    jax.block_until_ready(run(data))
    return time.perf_counter() - start
''',
    "fixed_train": '''def fixed_train(w, batches, lr0, jit=jax.jit):
    """The handed-out loop without its problems: (w, losses)."""
    size = max(len(y) for _, y in batches)

    def step(w, x, y, n, lr):
        err = jnp.where(jnp.arange(x.shape[0]) < n, x @ w - y, 0.0)
        return w - lr * x.T @ err / n, jnp.sum(err ** 2) / n

    step = jit(step)
    losses = []
    for i, (x, y) in enumerate(batches):
        n = len(y)
        x_padded = np.zeros((size, x.shape[1]), dtype=np.float32)
        x_padded[:n] = x
        y_padded = np.zeros(size, dtype=np.float32)
        y_padded[:n] = y
        w, loss = step(w, x_padded, y_padded, n, handout.learning_rate(lr0, i))
        losses.append(loss)
    return w, losses
''',
    "findings": '''# findings: {problem from handout.PROBLEMS: the evidence you measured, in a sentence}
findings = {
    "retrace-new-shape": f"{original_traces} traces for {len(batches)} batches, {one_size_traces} at one size",
    "jnp-outside-jit": f"compiled outside the step: {eager_compiles}",
    "timed-before-ready": f"{missed_s * 1e3:.1f} ms of work still pending when the clock stopped",
}
''',
}

HONEST_B = {
    "count_traces": '''def count_traces(train, w, batches, lr0):
    """How many times train(w, batches, lr0, jit=...) traces over the loop."""
    seen = []

    def jit_that_counts(f, **kw):
        def traced(*a, **k):
            seen.append(1)
            return f(*a, **k)
        traced.__signature__ = inspect.signature(f)
        traced.__name__ = f.__name__
        return jax.jit(traced, **kw)

    out = train(w, batches, lr0, jit=jit_that_counts)
    jax.tree_util.tree_map(lambda leaf: leaf.block_until_ready(), out)
    return len(seen)
''',
    "time_loop": '''def time_loop(run, data):
    """Seconds from calling run(data) until everything it returns is ready."""
    t0 = time.monotonic()
    result = run(data)
    for leaf in jax.tree_util.tree_leaves(result):
        leaf.block_until_ready()
    t1 = time.monotonic()
    return float(t1 - t0)
''',
    "fixed_train": '''def _pad_batch(x, y, rows):
    """x and y with zero rows added up to rows, and a mask of the real ones."""
    extra = rows - x.shape[0]
    mask = np.concatenate([np.ones(x.shape[0]), np.zeros(extra)]).astype(np.float32)
    return np.pad(x, ((0, extra), (0, 0))), np.pad(y, (0, extra)), mask


def _update(w, x, y, mask, lr):
    """One gradient step on the real rows; the loss stays on the device."""
    residual = (x @ w - y) * mask
    count = jnp.sum(mask)
    gradient = x.T @ residual / count
    return w - lr * gradient, jnp.dot(residual, residual) / count


def fixed_train(w, batches, lr0, jit=jax.jit):
    """The handed-out loop without its problems: (w, losses)."""
    rows = max(x.shape[0] for x, _ in batches)
    update = jit(_update)
    losses = []
    for step_number, (x, y) in enumerate(batches):
        x, y, mask = _pad_batch(x, y, rows)
        rate = handout.learning_rate(lr0, step_number)
        w, batch_loss = update(w, x, y, mask, rate)
        losses += [batch_loss]
    return w, losses
''',
    "findings": '''# findings: {problem from handout.PROBLEMS: the evidence you measured, in a sentence}
findings = {}
if AUDIT_VARIANT in ("A", "C"):
    findings["timed-before-ready"] = "the benchmark stops its clock %.1f ms too early" % (missed_s * 1000)
if AUDIT_VARIANT in ("A", "B"):
    findings["jnp-outside-jit"] = "eager compiles: " + ", ".join(eager_compiles)
if AUDIT_VARIANT == "A":
    findings["retrace-new-shape"] = "%d traces against %d at one size" % (original_traces, one_size_traces)
else:
    findings["retrace-static-argument"] = "%d traces at a single size" % one_size_traces
''',
}

HONEST_C = {
    "count_traces": '''class TraceCounter:
    """A jit for train(): compiles as jax.jit does and counts each time the function is traced."""

    def __init__(self):
        self.count = 0

    def __call__(self, function, **jit_options):
        @functools.wraps(function)
        def body(*args, **kwargs):
            self.count += 1
            return function(*args, **kwargs)
        return jax.jit(body, **jit_options)


def count_traces(train, w, batches, lr0):
    """How many times train(w, batches, lr0, jit=...) traces over the loop."""
    counter = TraceCounter()
    weights, losses = train(w, batches, lr0, jit=counter)
    jax.block_until_ready((weights, losses))
    return counter.count
''',
    "time_loop": '''def time_loop(run, data):
    """Seconds from calling run(data) until everything it returns is ready."""
    began = time.perf_counter_ns()
    jax.effects_barrier()
    outputs = jax.block_until_ready(run(data))
    del outputs
    return (time.perf_counter_ns() - began) / 1e9
''',
    "fixed_train": '''def fixed_train(w, batches, lr0, jit=jax.jit):
    """The handed-out loop without its problems: (w, losses)."""
    biggest = 0
    for features, targets in batches:
        biggest = max(biggest, features.shape[0])

    @jit
    def train_step(weights, features, targets, valid, rate):
        keep = jnp.arange(biggest) < valid
        error = jnp.where(keep, features @ weights - targets, 0)
        new_weights = weights - rate * (features.T @ error) / valid
        return new_weights, (error * error).sum() / valid

    history = []
    for index in range(len(batches)):
        features, targets = batches[index]
        valid = targets.shape[0]
        features = jnp.pad(jnp.asarray(features), ((0, biggest - valid), (0, 0)))
        targets = jnp.pad(jnp.asarray(targets), (0, biggest - valid))
        w, loss_value = train_step(w, features, targets, valid, handout.learning_rate(lr0, index))
        history.append(loss_value)
    return w, history
''',
    "findings": '''# findings: {problem from handout.PROBLEMS: the evidence you measured, in a sentence}
evidence = dict(measured)
findings = {name: None for name in handout.PROBLEMS if name in expected_problems(AUDIT_VARIANT)}
for name in findings:
    findings[name] = f"measured {name}: {evidence}"
''',
}


def renamed(code: dict[str, str], names: dict[str, str]) -> dict[str, str]:
    """The same answers with names changed: a copy disguised by renaming."""
    def rename(text):
        for old, new in names.items():
            text = re.sub(rf"\b{old}\b", new, text)
        return text
    return {cell: rename(text) for cell, text in code.items()}


def functions_reordered(code: dict[str, str]) -> dict[str, str]:
    """The same answers with each cell's top-level functions and classes in reverse order: a copy disguised by
    reordering."""
    return {cell: "\n\n\n".join(reversed(text.split("\n\n\n"))) for cell, text in code.items()}


def release_notebook(notebook: str = NOTEBOOK) -> dict:
    return json.loads((RELEASE / f"{notebook}.ipynb").read_text(encoding="utf-8"))


def filled(answers: dict[str, str], notebook: str = NOTEBOOK) -> dict:
    """The release notebook with each answered solution cell's code replaced by the answer."""
    found = release_notebook(notebook)
    for cell in found["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id].splitlines(keepends=True)
    return found


def submit(submitted: Path, student: str, content: dict | str | bytes, notebook: str = NOTEBOOK) -> Path:
    """Write a student's notebook into submitted/<student>/performance-audit/; content: a notebook, or raw text."""
    path = submitted / student / ASSIGNMENT / f"{notebook}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, dict):
        content = json.dumps(content, indent=1)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path
