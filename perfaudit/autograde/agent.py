"""The kernel's side of the channel: answers the grader's questions about the student's objects with plain data.

Imported inside the student's kernel by each request (perfaudit/autograde/channel.py). It runs in the student's
process, so nothing here is trusted: student code may replace any of it, and then its own answers are wrong.
The grader never takes an answer as a verdict; it checks every answer against inputs it chose and values it
computed (perfaudit/checks.py), so a forged answer can at most be as right as a real one.

Requests (base64 JSON): lookup a name, call a reference, read an attribute: the grader runs no code of its own
here beyond the stand-ins it hands in as arguments (a slow function, its jit), whose answers it checks. Replies: {"ok": true, "value": ..., "dirs": [...]}, or {"ok": false, "error": ...}.
Values are tagged JSON: lists, dicts, arrays (dtype, shape, bytes), directories (their regular files), and
references to anything else (functions, objects), kept here by number.
"""

import base64
import collections.abc
import json
import os
import pathlib
import tempfile

MAX_DEPTH = 32
MAX_FILES = 1024
MAX_FILE_BYTES = 16 * 2**20
MAX_SNAPSHOT_BYTES = 32 * 2**20  # what one folder sends at most: its base64 fits the grader's reply limit
_refs = {}  # number -> object the grader holds a reference to
# number -> the function standing in for one of the grader's slow functions: handed in again, it is the same
# function, as a function passed twice in one process is (a time_call that remembers functions meets it again)
_slow_functions = {}


def _b64(data):
    return base64.b64encode(data).decode("ascii")


def _ref(value):
    number = len(_refs) + 1
    _refs[number] = value
    return {"$": "ref", "id": number, "callable": callable(value), "type": type(value).__name__[:100]}


def snapshot(path):
    """A directory's regular files (or one file) as {relative path: base64 bytes}; links and specials skipped.

    Top-level files first, then each folder's, shallowest first, so the files a check reads (report.json) come
    before any pile of others; a file over MAX_FILE_BYTES is left out (a profile written beside the evidence, say),
    and files stop at MAX_FILES or MAX_SNAPSHOT_BYTES in all; "truncated" says when some were left out.
    """
    path = pathlib.Path(path)
    if path.is_file():
        return {"$": "path", "kind": "file", "name": path.name, "files": {"": _b64(path.read_bytes()[:MAX_FILE_BYTES])}}
    if not path.is_dir():
        return {"$": "path", "kind": "missing", "name": path.name, "files": {}}
    found = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(root, d)))
        found += [os.path.join(root, n) for n in sorted(names)]
    found.sort(key=lambda f: (os.path.relpath(f, path).count(os.sep), f))
    files, total = {}, 0
    for full in found:
        if len(files) >= MAX_FILES:
            break
        if not os.path.islink(full) and os.path.isfile(full):
            size = os.path.getsize(full)
            if size > MAX_FILE_BYTES or total + size > MAX_SNAPSHOT_BYTES:
                continue
            total += size
            with open(full, "rb") as handle:
                files[os.path.relpath(full, path)] = _b64(handle.read(MAX_FILE_BYTES))
    return {"$": "path", "kind": "dir", "name": path.name, "files": files, "truncated": len(found) > len(files)}


def encode(value, depth=0):
    """The student's value as tagged JSON: plain data where it is plain data, a reference otherwise."""
    if depth > MAX_DEPTH:
        raise ValueError("a value nested more than 32 levels deep")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return {"$": "list", "v": [encode(item, depth + 1) for item in value]}
    if isinstance(value, dict):
        return {"$": "dict", "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if isinstance(value, pathlib.PurePath):
        return snapshot(value)
    array = _as_array(value)
    if array is not None:
        return array
    if isinstance(value, collections.abc.Sequence) and not isinstance(value, (bytes, bytearray, memoryview)):
        # another sequence of plain data (a deque, a range) reads as the list it holds, not as an object
        return {"$": "list", "v": [encode(item, depth + 1) for item in value]}
    return _ref(value)


def _as_array(value):
    import numpy as np

    if isinstance(value, np.generic):
        return value.item() if value.dtype.kind in "biuf" else None
    is_jax = type(value).__module__.startswith(("jax", "jaxlib"))
    if not isinstance(value, np.ndarray) and not (is_jax and hasattr(value, "__array__")):
        return None
    array = np.ascontiguousarray(np.asarray(value))
    if array.dtype.kind not in "biuf" and str(array.dtype) != "bfloat16":
        return None
    return {"$": "array", "dtype": str(array.dtype), "shape": list(array.shape), "data": _b64(array.tobytes()),
            "jax": is_jax}


def _decode(value, dirs):
    if not isinstance(value, dict):
        return value
    tag = value["$"]
    if tag == "list":
        return [_decode(v, dirs) for v in value["v"]]
    if tag == "tuple":
        return tuple(_decode(v, dirs) for v in value["v"])
    if tag == "dict":
        return {_decode(k, dirs): _decode(v, dirs) for k, v in value["v"]}
    if tag == "ref":
        return _refs[value["id"]]
    if tag == "array":
        import numpy as np

        dtype = _dtype(value["dtype"])
        array = np.frombuffer(base64.b64decode(value["data"]), dtype=dtype).reshape(value["shape"]).copy()
        if value.get("jax"):
            import jax

            return jax.device_put(array)
        return array
    if tag == "dirarg":
        folder = pathlib.Path(tempfile.mkdtemp(prefix="evidence-", dir=os.getcwd()))
        for name, data in value["files"].items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(data))
        dirs.append(folder)
        return folder
    if tag == "slow" and value.get("id") in _slow_functions:
        return _slow_functions[value["id"]]
    if tag == "slow":
        wrapped = _decode(value.get("wrapped"), dirs)

        def slow(x):
            from IPython import get_ipython

            from perfaudit.checks.held import HeldResult, placeholder

            ask = get_ipython().kernel.raw_input
            if value.get("call"):  # the call itself lasts as long as the grader decides
                ask(f"perfaudit-call {value['id']}")
            inner = placeholder() if wrapped is None else wrapped(x)
            return HeldResult(inner, lambda: ask(f"perfaudit-ready {value['id']}"))

        _slow_functions[value["id"]] = slow
        return slow
    if tag == "slowjit":
        from IPython import get_ipython

        from perfaudit.autograde.instruments import make_jit, new_workload

        jit = make_jit(value["id"], get_ipython().kernel.raw_input, lambda fn: _ref(fn)["id"])
        return jit(new_workload()) if value.get("new_workload") else jit
    if tag == "freshjit":
        import jax

        fn = _decode(value["fn"], dirs)
        return jax.jit(lambda x: fn(x))
    raise ValueError(f"unknown tag {tag!r}")


def _dtype(name):
    import numpy as np

    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def _user_namespace():
    from IPython import get_ipython

    return get_ipython().user_ns


def _answer(request):
    op, dirs = request["op"], []
    if op == "lookup":
        namespace = _user_namespace()
        if request["name"] not in namespace:
            raise NameError(f"name '{request['name']}' is not defined")
        value = namespace[request["name"]]
    elif op == "getattr":
        value = getattr(_refs[request["ref"]], request["name"])
    elif op == "call":
        function = _refs[request["ref"]]
        args = [_decode(a, dirs) for a in request["args"]]
        kwargs = {k: _decode(v, dirs) for k, v in request["kwargs"].items()}
        value = function(*args, **kwargs)
    else:
        raise ValueError(f"unknown request {op!r}")
    return {"ok": True, "value": encode(value), "dirs": [snapshot(d) for d in dirs]}


def handle(request_b64):
    """One request in, one reply out (both base64 JSON): the only entry point the grader uses."""
    try:
        reply = _answer(json.loads(base64.b64decode(request_b64)))
    except BaseException as error:  # noqa: BLE001 (the student's exception is the answer, not a crash)
        reply = {"ok": False, "error": {"type": type(error).__name__[:100], "message": str(error)[:2000]}}
    return _b64(json.dumps(reply).encode())
