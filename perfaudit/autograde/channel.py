"""The grader's side of the channel to a student's kernel: questions out, plain data back, checked on arrival.

Each request is one silent execute_request whose only content is a user expression calling
perfaudit.autograde.agent.handle(<base64 JSON>); nothing is stored in the kernel's history. The reply is read from
the execute_reply on the shell channel (never from what the kernel printed) and decoded strictly: known tags
only, finite sizes, arrays of numeric dtypes, directories materialised into a folder of the grader's own.
What comes back is the student's claim, never a verdict: the tests that run in the grader decide.

A call and a result whose durations the grader controls (SlowFunction, perfaudit/checks/held.py) cross as a
stand-in: when the student's code calls it, and when it waits on its result, the kernel asks on the stdin channel,
and the grader answers after a delay it chose and never sent. The grader's jit (perfaudit/autograde/instruments.py) crosses the
same way; its answer to a call is the call's number and the static argument that decides whether jit traces the
student's function again.
"""

import ast
import asyncio
import base64
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import zmq
from jupyter_client.blocking import BlockingKernelClient
from jupyter_core.utils import run_sync

from perfaudit.autograde import made_up
from perfaudit.autograde.instruments import GraderJit, NewWorkload
from perfaudit.checks.held import FreshJit, SlowFunction

MAX_REPLY_CHARS = 64 * 2**20
MAX_DEPTH = 32
MAX_FILES = 1024
MAX_FILE_BYTES = 16 * 2**20
MAX_FOLDERS = 16  # folders one answer may make the grader write (paths in it: an evidence folder, a file or two)
MAX_SNAPSHOT_BYTES = 48 * 2**20  # bytes one folder of an answer may make the grader write
ARRAY_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                "float32", "float64", "bfloat16"}
INTERRUPT_GRACE_S = 5


class KernelGone(Exception):
    """The kernel can answer no more requests (it died, hung past an interrupt, or its channel broke)."""

    def __init__(self, message, died=False):
        super().__init__(message)
        self.died = died  # the kernel process is gone (not merely unresponsive)


class StudentError(Exception):
    """The student's code raised, or answered with something that is not plain data."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class Timeout(StudentError):
    pass


class RemoteRef:
    """A student's object the kernel keeps: a function or anything that is not plain data."""

    def __init__(self, channel, number, is_callable, type_name):
        self._channel, self._number, self._callable, self._type = channel, number, is_callable, type_name

    def __call__(self, *args, **kwargs):
        if not self._callable:
            raise TypeError(f"'{self._type}' object is not callable")
        return self._channel.request({"op": "call", "ref": self._number}, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        try:
            return self._channel.request({"op": "getattr", "ref": self._number, "name": name})
        except StudentError as error:  # getattr(ref, name, default) and hasattr work as on the object itself
            if error.kind == "AttributeError":
                raise AttributeError(str(error)) from None
            raise

    def __repr__(self):
        return f"<the student's {self._type}>"


DRAIN_EVERY_S = 0.05  # what a kernel prints queues at most this long when its socket is another thread's
DRAIN_WAIT_S = 5.0  # a loop that cannot take the drain in this time is left to the next round


def _drop_queued(socket):
    try:
        for _ in range(1000):  # then back to the shell and stdin sockets; the rest on the next round
            socket.recv_multipart(zmq.NOBLOCK, copy=False)
    except zmq.Again:
        pass


class KernelChannel:
    """Requests to one kernel, all of one test within its time (start_test): then the kernel is interrupted."""

    def __init__(self, kernel_manager, scratch, iopub=None):
        self.km, self.timeout, self.deadline = kernel_manager, 0, 0
        # What the kernel prints while a test runs goes to the preprocessor's iopub socket, which nobody reads then:
        # it is read here and dropped as it comes, one message at a time, never left to pile up in the grader. That
        # socket belongs to an asyncio event loop, which may run in another thread: a ZMQ socket used by two threads
        # at once can abort the process, so it is read on its loop's thread (_iopub_loop), never beside it.
        self.iopub = None if iopub is None else zmq.Socket.shadow(iopub.underlying)
        self._iopub_async = iopub
        self.scratch = Path(scratch)  # the grader's folder for directories read back from the kernel
        self.client = BlockingKernelClient()
        self.client.load_connection_info(kernel_manager.get_connection_info())
        # No iopub: nothing reads what the kernel prints during a request, so nothing of it may queue up here.
        self.client.start_channels(iopub=False, hb=False)
        self._slow = {}  # number -> SlowFunction or GraderJit whose results wait for the grader
        self.gone = None  # why the kernel can answer no more, once it cannot
        self._folders_made = 0  # by the answer being decoded

    def close(self):
        self.client.stop_channels()

    def start_test(self, timeout):
        """Every request of the next test shares these seconds: a kernel that answers slowly cannot multiply them."""
        self.timeout, self.deadline = timeout, time.monotonic() + timeout

    # --- one request ---

    def request(self, request, args=(), kwargs=None):
        if self.gone:
            raise KernelGone(self.gone)
        mirrors = []
        if request["op"] == "call":
            request = {**request, "args": [self._encode(a, mirrors) for a in args],
                       "kwargs": {str(k): self._encode(v, mirrors) for k, v in (kwargs or {}).items()}}
        payload = base64.b64encode(json.dumps(request).encode()).decode()
        expression = f"__import__('perfaudit.autograde.agent', fromlist=['handle']).handle('{payload}')"
        reply = self._round_trip(expression)
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise StudentError(_text(error.get("type"), 100), _text(error.get("message"), 2000))
        dirs = reply.get("dirs") or []
        if len(dirs) != len(mirrors):
            raise StudentError("ValueError", "the kernel's answer does not hold the directories it was given")
        for local, snapshot in zip(mirrors, dirs):
            self._write_snapshot(snapshot, local)
        self._folders_made = 0
        return self.decode(reply.get("value"))

    def _round_trip(self, expression):
        msg_id = self.client.execute("", silent=True, store_history=False, user_expressions={"r": expression},
                                     allow_stdin=True)
        deadline, interrupted = self.deadline, False
        poller = zmq.Poller()
        poller.register(self.client.shell_channel.socket, zmq.POLLIN)
        poller.register(self.client.stdin_channel.socket, zmq.POLLIN)
        owner = self._iopub_loop()
        if self.iopub is not None and owner is None:
            poller.register(self.iopub, zmq.POLLIN)
        wait_s = 0.5 if owner is None else DRAIN_EVERY_S  # with the socket on another thread: drained this often
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if interrupted:
                    self.gone = "the kernel stopped responding, even to an interrupt"
                    raise KernelGone(self.gone)
                run_sync(self.km.interrupt_kernel)()
                interrupted, deadline = True, time.monotonic() + INTERRUPT_GRACE_S
                continue
            events = dict(poller.poll(timeout=min(left, wait_s) * 1000))
            if not events and not run_sync(self.km.is_alive)():
                self.gone = "the kernel died (it crashed, exited, or ran out of memory)"
                raise KernelGone(self.gone, died=True)
            if self.iopub is not None and (owner is not None or self.iopub in events):
                self._drop_output(owner)
            if self.client.stdin_channel.socket in events:
                self._answer_input(self.client.stdin_channel.get_msg(timeout=0))
            if self.client.shell_channel.socket in events:
                msg = self.client.shell_channel.get_msg(timeout=0)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                if interrupted:
                    raise Timeout("Timeout", f"the test did not finish within {self.timeout:.0f} s, so the grader interrupted it")
                return _read_reply(msg)

    def _iopub_loop(self):
        """The event loop that the iopub socket belongs to when it runs in another thread, else None (then this
        thread is the socket's only user)."""
        loop = getattr(self._iopub_async, "_current_loop", None)
        if loop is None or not loop.is_running() or getattr(loop, "_thread_id", None) == threading.get_ident():
            return None
        return loop

    def _drop_output(self, owner=None):
        """Read what the kernel printed and drop it: here, or on the thread of the loop that owns the socket."""
        if owner is None:
            _drop_queued(self.iopub)
            return

        async def on_its_thread():
            _drop_queued(self.iopub)

        try:
            asyncio.run_coroutine_threadsafe(on_its_thread(), owner).result(timeout=DRAIN_WAIT_S)
        except Exception:  # noqa: BLE001 - a busy or closing loop: the rest is dropped on the next round
            pass

    def _answer_input(self, msg):
        """The student's code waits on a result whose readiness the grader controls: wait, then release it."""
        received = time.perf_counter()
        kind, number, detail = (str(msg.get("content", {}).get("prompt", "")).split(" ") + ["", ""])[:3]
        slow = self._slow.get(int(number)) if number.isdigit() else None
        answer = ""
        if isinstance(slow, GraderJit):
            answer = slow.answer(str(msg.get("content", {}).get("prompt", ""))[:200], received)
        elif slow is not None and kind == "perfaudit-call":
            slow.hold_call(received)
        elif slow is not None and kind == "perfaudit-ready":
            slow.hold_result(received)
        self.client.input(answer)

    # --- values out ---

    def _encode(self, value, mirrors, depth=0):
        if depth > MAX_DEPTH:
            raise ValueError("argument nested too deeply")
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, RemoteRef):
            if value._channel is not self:
                raise ValueError("a reference from another kernel")
            return {"$": "ref", "id": value._number}
        if isinstance(value, (GraderJit, NewWorkload)):  # a NewWorkload: the kernel applies the jit to a new workload
            jit = value.jit if isinstance(value, NewWorkload) else value
            number = next((n for n, known in self._slow.items() if known is jit), len(self._slow) + 1)
            self._slow[number] = jit
            jit.number = number
            jit.resolve = lambda kept: RemoteRef(self, kept, True, "function")
            return {"$": "slowjit", "id": number, "new_workload": isinstance(value, NewWorkload)}
        if isinstance(value, FreshJit):  # made in the kernel; the grader judges the calls on its own clock
            return {"$": "freshjit", "fn": self._encode(value.fn, mirrors, depth + 1)}
        if isinstance(value, SlowFunction):  # one number each: handed in again, the kernel knows it as the same
            number = next((n for n, known in self._slow.items() if known is value), len(self._slow) + 1)
            self._slow[number] = value
            wrapped = None if value.wrapped is None else self._encode(value.wrapped, mirrors, depth + 1)
            return {"$": "slow", "id": number, "wrapped": wrapped, "call": bool(value.call_delays_s)}
        if isinstance(value, Path):
            if not self._mirrorable(value):
                raise ValueError(f"a test may hand the student's code only folders made by checks.new_folder() or "
                                 f"read back from the kernel, not {value}")
            mirrors.append(value)
            return {"$": "dirarg", "files": _read_dir(value)}
        if isinstance(value, (list, tuple)):
            return {"$": "list" if isinstance(value, list) else "tuple",
                    "v": [self._encode(v, mirrors, depth + 1) for v in value]}
        if isinstance(value, dict):
            return {"$": "dict", "v": [[self._encode(k, mirrors, depth + 1), self._encode(v, mirrors, depth + 1)]
                                       for k, v in value.items()]}
        is_jax = type(value).__module__.startswith(("jax", "jaxlib"))
        array = np.ascontiguousarray(np.asarray(value))
        if str(array.dtype) not in ARRAY_DTYPES:
            raise TypeError(f"cannot send a {type(value).__name__} to the student's kernel")
        return {"$": "array", "dtype": str(array.dtype), "shape": list(array.shape),
                "data": base64.b64encode(array.tobytes()).decode(), "jax": is_jax}

    def _mirrorable(self, path):
        """Folders the grader made for tests: the only ones whose contents the kernel's answer may replace."""
        path = path.resolve()
        return any(path == root or root in path.parents for root in (self.scratch.resolve(), *made_up.test_folders()))

    # --- values back: hostile input ---

    def decode(self, value, depth=0):
        if depth > MAX_DEPTH:
            raise StudentError("ValueError", "a value nested more than 32 levels deep")
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value
        if not isinstance(value, dict) or not isinstance(value.get("$"), str):
            raise StudentError("ValueError", "an answer that is not plain data")
        tag = value["$"]
        if tag == "list":
            return [self.decode(v, depth + 1) for v in _list(value.get("v"))]
        if tag == "dict":
            out = {}
            for pair in _list(value.get("v")):
                key = self.decode(_list(pair)[0], depth + 1) if len(_list(pair)) == 2 else None
                if not isinstance(key, (str, int, float, bool, type(None))):
                    raise StudentError("ValueError", "a dict whose keys are not plain data")
                out[key] = self.decode(pair[1], depth + 1)
            return out
        if tag == "array":
            return _array(value)
        if tag == "ref":
            return RemoteRef(self, _int(value.get("id")), bool(value.get("callable")), _text(value.get("type"), 100))
        if tag == "path":
            self._folders_made += 1
            if self._folders_made > MAX_FOLDERS:
                raise StudentError("ValueError", f"an answer with more than {MAX_FOLDERS} folders in it")
            local = Path(tempfile.mkdtemp(prefix="read-back-", dir=self.scratch))
            kind = value.get("kind")
            self._write_snapshot({**value, "kind": "dir" if kind == "dir" else kind}, local)
            if kind == "file":
                return local / _safe_name(value.get("name"))
            if kind == "missing":
                return local / _safe_name(value.get("name"))
            return local
        raise StudentError("ValueError", f"an answer with an unknown tag {tag!r:.40}")

    def _write_snapshot(self, snapshot, local):
        """Replace local's contents with the regular files of a snapshot the kernel sent (relative, capped)."""
        if not isinstance(snapshot, dict) or not isinstance(snapshot.get("files"), dict):
            raise StudentError("ValueError", "a directory answer that is not a directory")
        files = snapshot["files"]
        if len(files) > MAX_FILES:
            raise StudentError("ValueError", f"more than {MAX_FILES} files in a directory")
        local = Path(local)
        if local.exists():
            shutil.rmtree(local)
        local.mkdir(parents=True)
        written = 0
        for name, data in files.items():
            if snapshot.get("kind") == "file" and name == "":
                name = _safe_name(snapshot.get("name"))
            parts = Path(str(name)).parts
            if not parts or Path(str(name)).is_absolute() or ".." in parts:
                raise StudentError("ValueError", f"a file name outside its directory: {str(name)[:80]!r}")
            content = base64.b64decode(_text(data, MAX_FILE_BYTES * 2), validate=True)
            written += len(content)
            if len(content) > MAX_FILE_BYTES or written > MAX_SNAPSHOT_BYTES:
                raise StudentError("ValueError", f"a folder larger than the grader reads ({MAX_SNAPSHOT_BYTES} bytes)")
            target = local.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)


def _read_reply(msg):
    content = msg.get("content", {})
    if content.get("status") != "ok":
        raise StudentError("KernelError", "the kernel did not run the grader's request")
    result = content.get("user_expressions", {}).get("r", {})
    if result.get("status") != "ok":
        raise StudentError(_text(result.get("ename"), 100) or "Error",
                           f"the grader's request failed in the kernel: {_text(result.get('evalue'), 500)}")
    text = result.get("data", {}).get("text/plain", "")
    if not isinstance(text, str) or len(text) > MAX_REPLY_CHARS:
        raise StudentError("ValueError", "an answer larger than the grader reads")
    try:
        reply = json.loads(base64.b64decode(ast.literal_eval(text), validate=True))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise StudentError("ValueError", "an answer the grader cannot read") from None
    if not isinstance(reply, dict):
        raise StudentError("ValueError", "an answer the grader cannot read")
    return reply


def _read_dir(path):
    """A folder of the grader's, as the files sent with an argument (it is usually new and empty)."""
    path = Path(path)
    if not path.is_dir():
        return {}
    return {str(p.relative_to(path)): base64.b64encode(p.read_bytes()).decode()
            for p in sorted(path.rglob("*")) if p.is_file() and not p.is_symlink()}


def _array(value):
    dtype, shape = value.get("dtype"), _list(value.get("shape"))
    if dtype not in ARRAY_DTYPES or len(shape) > 8 or not all(isinstance(n, int) and 0 <= n < 2**31 for n in shape):
        raise StudentError("ValueError", "an array the grader does not read")
    data = base64.b64decode(_text(value.get("data"), MAX_REPLY_CHARS), validate=True)
    np_dtype = np.dtype(_bfloat16() if dtype == "bfloat16" else dtype)
    if len(data) != int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize:
        raise StudentError("ValueError", "an array whose bytes do not match its shape")
    return np.frombuffer(data, dtype=np_dtype).reshape(shape).copy()


def _bfloat16():
    import ml_dtypes

    return ml_dtypes.bfloat16


def _list(value):
    if not isinstance(value, list):
        raise StudentError("ValueError", "an answer that is not plain data")
    return value


def _int(value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise StudentError("ValueError", "an answer that is not plain data")
    return value


def _text(value, limit):
    return value[:limit] if isinstance(value, str) else ""


def _safe_name(name):
    name = _text(name, 200)
    return name if name and "/" not in name and name not in (".", "..") else "file"
