"""The untrusted side of confirming a verdict: runs a submission's cells and calls its functions, nothing more.

Started by perfaudit/confirm.py as `python -I -m perfaudit.harness` in a fresh copy of the student's folder
(through perfaudit.sandbox). It reads one JSON step per line on stdin and answers each with one JSON line:

  {"op": "run", "source": ...}                  run a notebook cell, as the kernel did
  {"op": "get", "name": ...}                    a variable's value, as plain data
  {"op": "call", "name": ..., "args": [...]}    call a function; {"matrix": rows} arguments become JAX arrays;
                                                "as_array": true returns the result as a float64 matrix
  {"op": "time_call", "delay": s}               time_call on a function whose result takes `delay` s to be ready
  {"op": "first_and_steady", "n": n, "steady": k, "seed": ...}
                                                time_call on a new jit of workload: a first call, k steady calls
  {"op": "traces", "sizes": [...], "seed": ...} audited at each size in turn, traces() read after each call

Replies hold plain data only (None, bool, int, float, str, lists, dicts with str keys), converted with the
base types' own methods, so an object that lies about itself (an __eq__ always true, an int whose __repr__
says 2) comes back as what it is. The grader compares; nothing here decides a verdict.

Student code cannot write on the protocol by printing: the protocol's file descriptors are copied before any
student code runs, and the process's stdout goes to stderr.
"""

import json
import os
import sys
import time


def _open_protocol():
    """The protocol's channels, moved off fds 0 and 1 before anything else runs."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    steps = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.dup2(2, 1)  # prints, from Python or C, now go to stderr
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull)
    return steps, replies


STEPS, REPLIES = _open_protocol()
# References taken before any student code runs: a student's monkeypatch of these names changes nothing here.
_dumps, _loads = json.dumps, json.loads
_perf_counter, _sleep = time.perf_counter, time.sleep

import numpy as np  # noqa: E402
import jax  # noqa: E402  (imported before the student's folder is on sys.path: a jax.py there cannot replace it)
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

_asarray, _float64, _float32, _ndarray_tolist = np.asarray, np.float64, np.float32, np.ndarray.tolist
_device_put = jax.device_put
_int_repr, _float_repr, _str_str = int.__repr__, float.__repr__, str.__str__
_dict_items, _list_iter, _tuple_iter = dict.items, list.__iter__, tuple.__iter__

MAX_DEPTH = 32


class NotPlainData(TypeError):
    pass


def plain(value, depth=0):
    """value as JSON-able data, read through the base types' methods (never the object's own)."""
    if depth > MAX_DEPTH:
        raise NotPlainData("nested too deeply")
    if value is None or value is True or value is False:
        return value
    if isinstance(value, bool):
        raise NotPlainData(f"a {type(value).__name__}, not plain data")
    if isinstance(value, int):
        return int(_int_repr(value))
    if isinstance(value, float):
        return float(_float_repr(value))
    if isinstance(value, str):
        return _str_str(value)
    if isinstance(value, dict):
        out = {}
        for key, item in _dict_items(value):
            if not isinstance(key, str):
                raise NotPlainData(f"a dict key {type(key).__name__}, not a string")
            out[_str_str(key)] = plain(item, depth + 1)
        return out
    if isinstance(value, list):
        return [plain(item, depth + 1) for item in _list_iter(value)]
    if isinstance(value, tuple):
        return [plain(item, depth + 1) for item in _tuple_iter(value)]
    if type(value).__module__.split(".")[0] in ("numpy", "jax", "jaxlib"):
        array = _asarray(value)
        if array.dtype.kind not in "biuf":
            raise NotPlainData(f"an array of {array.dtype}, not numbers")
        return _ndarray_tolist(array)
    raise NotPlainData(f"a {type(value).__name__}, not plain data")


def _matrix(rows):
    return _device_put(_asarray(rows, dtype=_float32))


def _arguments(args):
    return [_matrix(a["matrix"]) if isinstance(a, dict) and set(a) == {"matrix"} else a for a in args]


class _SlowResult:
    """A result that takes `delay` seconds to become ready, however the student waits for it."""

    def __init__(self, delay):
        self.delay = delay

    def block_until_ready(self):
        _sleep(self.delay)
        return self

    def __array__(self, dtype=None, copy=None):
        _sleep(self.delay)
        return np.zeros((1, 1), dtype=dtype)


class Harness:
    def __init__(self):
        self.shell = InteractiveShell.instance()
        self.ns = self.shell.user_ns

    def run(self, step):
        result = self.shell.run_cell(step["source"], store_history=True)
        error = result.error_before_exec or result.error_in_exec
        return None if error is None else f"{type(error).__name__}: {error}"

    def _lookup(self, name):
        if name not in self.ns:
            raise NameError(f"{name} is not defined after the notebook's cells ran")
        return self.ns[name]

    def get(self, step):
        return plain(self._lookup(step["name"]))

    def call(self, step):
        out = self._lookup(step["name"])(*_arguments(step.get("args", [])))
        if step.get("as_array"):
            return _ndarray_tolist(_asarray(out, dtype=_float64))
        return plain(out)

    def time_call(self, step):
        return plain(self._lookup("time_call")(lambda x: _SlowResult(step["delay"]), None))

    def _timed(self, fn, x):
        start = _perf_counter()
        seconds = plain(self._lookup("time_call")(fn, x))
        return seconds, _perf_counter() - start

    def first_and_steady(self, step):
        rows = np.random.default_rng(step["seed"]).standard_normal((step["n"], step["n"]))
        x = _matrix(rows / np.sqrt(step["n"]))
        fresh = jax.jit(self._lookup("workload"))  # a new function: its first call traces and compiles
        first, first_outer = self._timed(fresh, x)
        steady = [self._timed(fresh, x) for _ in range(step["steady"])]
        return {"first": first, "steady": [s for s, _ in steady],
                "outer": [first_outer] + [o for _, o in steady]}

    def traces(self, step):
        rng = np.random.default_rng(step["seed"])
        audited, traces = self._lookup("audited"), self._lookup("traces")
        before = plain(traces())
        after = []
        for n in step["sizes"]:
            audited(_matrix(rng.standard_normal((n, n))))
            after.append(plain(traces()))
        return {"before": before, "after": after}

    def ready(self, step):
        return None


def main():
    harness = Harness()
    # The kernel imports the student's own modules from the notebook's folder: so does this process, from here on.
    sys.path.insert(0, os.getcwd())
    for line in STEPS:
        step = _loads(line)
        try:
            reply = {"ok": True, "value": getattr(harness, step["op"])(step)}
        except BaseException as error:  # noqa: BLE001 (a student's SystemExit is an answer too)
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"[:2000]}
        REPLIES.write(_dumps(reply, allow_nan=True) + "\n")
        REPLIES.flush()


if __name__ == "__main__":
    main()
