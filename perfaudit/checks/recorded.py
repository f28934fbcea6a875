"""The checks' own view of a training loop's traces: a jit that records each trace of the functions it makes, with
what was in the cache key (each traced argument's shape and dtype, each static argument's value). A self-check sets
what a student's count_traces reports against it, and tells a fixed loop that traces more than once what changed,
as it measured it. (What a loop compiles besides: perfaudit/jaxlog.py, compiled.)

    jit = RecordingJit()
    train(w, batches, lr0, jit=jit)
    jit.count, jit.changes()   # 3, ['argument 2 (x): f32[37,8], f32[52,8], f32[80,8]']

JAX is imported in the functions that run it, never at the module's top (perfaudit/checks/__init__.py).
"""

import functools

VALUE_CHARS = 24  # a static value as a message shows it


def _describe(value):
    """A traced argument as its abstract value (f32[37,8], weak_type noted), anything else (a static value) as its
    repr, cut short."""
    import jax  # JAX on first use

    def leaf(v):
        if isinstance(v, jax.core.Tracer):
            aval = v.aval
            return f"{aval.str_short()}{' (weak type)' if getattr(aval, 'weak_type', False) else ''}"
        return f"{v!r:.{VALUE_CHARS}} (static)"

    leaves = [leaf(v) for v in jax.tree_util.tree_leaves(value)]
    return leaves[0] if len(leaves) == 1 else "(" + ", ".join(leaves) + ")"


class RecordingJit:
    """jit(fn, **options): jax.jit of fn with the options it was given, whose body records, at each trace, the
    function's name and a description of each argument. `traces`: [(name, {argument: description})] in order."""

    def __init__(self):
        self.traces = []

    def __call__(self, fn, **options):
        import jax  # JAX on first use

        @functools.wraps(fn)
        def recorded(*a, **k):
            key = {f"argument {i}": _describe(v) for i, v in enumerate(a)}
            key.update({f"argument {name!r}": _describe(v) for name, v in k.items()})
            self.traces.append((getattr(fn, "__name__", "step"), key))
            return fn(*a, **k)

        return jax.jit(recorded, **options)

    @property
    def count(self):
        return len(self.traces)

    def changes(self):
        """For each function traced more than once, each argument whose description changed between its traces,
        with the values it took (in order, each once): what made the cache key new."""
        found = []
        for name in dict.fromkeys(name for name, _ in self.traces):
            keys = [key for traced, key in self.traces if traced == name]
            for argument in dict.fromkeys(a for key in keys for a in key):
                seen = list(dict.fromkeys(key.get(argument, "absent") for key in keys))
                if len(seen) > 1:
                    shown = ", ".join(seen[:4]) + (f", ... ({len(seen)} in all)" if len(seen) > 4 else "")
                    found.append(f"{name}'s {argument}: {shown}")
        return found
