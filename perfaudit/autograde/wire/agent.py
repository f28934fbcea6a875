"""The kernel's side of the channel: answers the grader's questions about the student's objects with plain data.

Imported inside the student's kernel by each request (perfaudit/autograde/wire/channel.py). It runs in the student's
process, so nothing here is trusted: student code may replace any of it, and then its own answers are wrong.
The grader never takes an answer as a verdict; it checks every answer against inputs it chose and values it
computed (perfaudit/checks.py), so a forged answer can at most be as right as a real one.

Requests: lookup a name, call a reference, read an attribute. The grader runs no code of its own here beyond the
stand-ins it hands in as arguments (a slow function, its jit, a fresh jit), and checks what they answer.
Values are tagged JSON (perfaudit/autograde/wire/protocol.py, shared with the grader): lists, dicts, arrays,
directories (their regular files), and references to anything else (functions, objects), kept here by number.
"""

import collections.abc
import os
import pathlib
import tempfile
from typing import Any

from perfaudit.autograde.evidence import asks
from perfaudit.autograde.wire import protocol
from perfaudit.autograde.wire.protocol import snapshot  # a name of this module too: what it sends of a folder

_refs: dict[int, Any] = {}  # number -> object the grader holds a reference to
# number -> the function standing in for one of the grader's slow functions: handed in again, it is the same
# function, as a function passed twice in one process is (a time_call that remembers functions meets it again)
_slow_functions: dict[int, collections.abc.Callable[[Any], Any]] = {}
# (number, jit) of the grader's loop jits handed in by the request being answered: once the call has returned, each
# reports which of the grader's batches reached it (loop_jit.py's Watch), one question per loop, not one per step
_watching: list[tuple[int, Any]] = []


def _ref(value):
    number = len(_refs) + 1
    _refs[number] = value
    return {protocol.TAG: protocol.REF, "id": number, "callable": callable(value),
            "type": type(value).__name__[:protocol.MAX_TYPE_CHARS]}


def encode(value: Any) -> Any:
    """The student's value as tagged JSON: plain data where it is plain data, a reference otherwise."""
    return protocol.encode(value, _encode_other, keep_tuples=False)


def _encode_other(value, depth):
    if isinstance(value, pathlib.PurePath):
        return snapshot(value)
    array = _as_array(value)
    if array is not None:
        return array
    if isinstance(value, collections.abc.Sequence) and not isinstance(value, (bytes, bytearray, memoryview)):
        # another sequence of plain data (a deque, a range) reads as the list it holds, not as an object
        return protocol.encode(list(value), _encode_other, keep_tuples=False, depth=depth)
    return _ref(value)


def _as_array(value):
    import numpy as np  # the agent imports nothing heavy (test_protocol): NumPy once a value may be an array

    if isinstance(value, np.generic):
        return value.item() if value.dtype.kind in "biuf" else None
    is_jax = type(value).__module__.startswith(("jax", "jaxlib"))
    if not isinstance(value, np.ndarray) and not (is_jax and hasattr(value, "__array__")):
        return None
    return protocol.encode_array(value, jax=is_jax)


def _decode(value, dirs):
    def other(tag, value, depth):
        if tag == protocol.REF:
            return _refs[value["id"]]
        if tag == protocol.ARRAY:
            array = protocol.decode_array(value)
            if value.get("jax"):
                import jax  # JAX in the agent only for a JAX array the grader hands in

                return jax.device_put(array)
            return array
        if tag == protocol.DIRARG:
            folder = pathlib.Path(tempfile.mkdtemp(prefix="evidence-", dir=os.getcwd()))
            protocol.Snapshot({"kind": "dir", "files": value["files"]}).unpack_into(folder)
            dirs.append(folder)
            return folder
        if tag == protocol.SLOW:
            return _slow_function(value, dirs)
        if tag == protocol.SLOWJIT:
            # IPython (json) and the instruments (NumPy) only when the grader hands in its jit: see _user_namespace
            from IPython import get_ipython

            from perfaudit.autograde.evidence.instruments import make_jit, new_workload

            jit = make_jit(value["id"], get_ipython().kernel.raw_input, lambda fn: _ref(fn)["id"])
            return jit(new_workload()) if value.get("new_workload") else jit
        if tag == protocol.LOOPJIT:
            # IPython and JAX only when the grader hands in its loop's jit: see _user_namespace
            from IPython import get_ipython

            from perfaudit.autograde.evidence.loop_jit import make_loop_jit

            ask = get_ipython().kernel.raw_input
            jit = make_loop_jit(lambda computes, function: ask(protocol.prompt(asks.ASK_TRACED, value["id"],
                                                                                int(computes), function)),
                                value.get("restart"), value.get("watch"))
            if value.get("watch"):
                _watching.append((value["id"], jit))
            return jit
        if tag == protocol.HANDOUT:
            # the grader's handout.py run here only when the grader hands in a loop of it: see _user_namespace
            from perfaudit.autograde.evidence.handed_out import made_from

            return made_from(value["source"], value["name"])
        if tag == protocol.FRESHJIT:
            import jax  # JAX in the agent only for the fresh jit the grader asks for

            fn = _decode(value["fn"], dirs)
            return jax.jit(lambda x: fn(x))
        raise ValueError(f"unknown tag {tag!r}")

    return protocol.decode(value, other)


def _slow_function(value, dirs):
    """The stand-in for the grader's slow function number value["id"]: the same function each time it is handed in."""
    if value["id"] in _slow_functions:
        return _slow_functions[value["id"]]
    wrapped = _decode(value.get("wrapped"), dirs)
    leaves = max(1, min(int(value.get("leaves") or 1), 64))

    def slow(x):
        # IPython and the checks (NumPy) only when the grader's slow function is called: see _user_namespace
        from IPython import get_ipython

        from perfaudit.checks.held import HeldResult, placeholder

        ask = get_ipython().kernel.raw_input
        if value.get("call"):  # the call itself lasts as long as the grader decides
            ask(protocol.prompt(asks.ASK_CALL, value["id"]))
        inner = placeholder() if wrapped is None else wrapped(x)
        def ready():
            ask(protocol.prompt(asks.ASK_READY, value["id"]))

        def poll():
            return ask(protocol.prompt(asks.ASK_POLL, value["id"])) == "1"

        held = [HeldResult(inner if i == 0 else placeholder(), ready, poll) for i in range(leaves)]
        return held[0] if leaves == 1 else (held[0], held[1:])  # a loop's (w, [losses]), each held on its own

    _slow_functions[value["id"]] = slow
    return slow


def _user_namespace():
    # The kernel has IPython loaded already; imported here so that importing the agent loads nothing heavy (json,
    # NumPy, JAX) anywhere else (tests/autograde/wire/test_protocol.py checks it).
    from IPython import get_ipython

    return get_ipython().user_ns


def _answer(request):
    dirs: list[pathlib.Path]
    op, dirs = request["op"], []
    if op == protocol.LOOKUP:
        namespace = _user_namespace()
        if request["name"] not in namespace:
            raise NameError(f"name '{request['name']}' is not defined")
        value = namespace[request["name"]]
        if isinstance(value, pathlib.PurePath):  # the folder is read when a test uses it, as it is then
            return protocol.reply({**_ref(value), "later": True}, [])
    elif op == protocol.VALUE:
        value = _refs[request["ref"]]
    elif op == protocol.GETATTR:
        value = getattr(_refs[request["ref"]], request["name"])
    elif op in protocol.CALLS:
        function = _refs[request["ref"]] if "ref" in request else _decode(request["fn"], dirs)
        args = [_decode(a, dirs) for a in request["args"]]
        kwargs = {k: _decode(v, dirs) for k, v in request["kwargs"].items()}
        value = function(*args, **kwargs)
    else:
        raise ValueError(f"unknown request {op!r}")
    encoded = encode(value)  # a loop's results ready, before its jits report what reached them
    _report_fed()
    return protocol.reply(encoded, [snapshot(d) for d in dirs])


def _report_fed():
    """Each watching loop jit of this call says which of the grader's batches reached it (asks.ASK_FED)."""
    if not _watching:
        return
    from IPython import get_ipython  # IPython only where the grader handed in a watching jit: see _user_namespace

    ask = get_ipython().kernel.raw_input
    for number, jit in _watching:
        ask(protocol.prompt(asks.ASK_FED, number, ",".join(str(i) for i in sorted(jit.fed())) or "-"))


def handle(request_b64: str) -> str:
    """One request in, one reply out (both base64 JSON): the only entry point the grader uses."""
    try:
        reply = _answer(protocol.unpack(request_b64))
    except BaseException as error:  # noqa: BLE001 (the student's exception is the answer, not a crash)
        reply = protocol.error_reply(error)
    finally:
        _watching.clear()  # this request's loop jits, reported or not
    return protocol.pack(reply)
