"""The grader's side of the channel to a student's kernel: questions out, plain data back, checked on arrival.

Each request is one silent execute_request whose only content is a user expression calling the kernel's side,
perfaudit/autograde/wire/agent.py (the format and its limits: perfaudit/autograde/wire/protocol.py); nothing is stored
in the kernel's history. The reply is read from the execute_reply on the shell channel (never from what the kernel
printed) and decoded strictly: known tags only, finite sizes, arrays of numeric dtypes, each answer checked whole
before its folders are written into a folder of the grader's own. What comes back is the student's claim, never a
verdict: the tests that run in the grader decide.

A call and a result whose durations the grader controls (SlowFunction, perfaudit/checks/held.py) cross as a
stand-in: when the student's code calls it, and when it waits on its result, the kernel asks on the stdin channel,
and the grader answers after a delay it chose and never sent. The grader's jit
(perfaudit/autograde/evidence/instruments.py) crosses the same way; its answer to a call is the call's number and the
static argument that decides whether jit traces the student's function again.
"""

import asyncio
import math
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import zmq
from jupyter_client.blocking import BlockingKernelClient
from jupyter_core.utils import run_sync

from perfaudit.autograde.errors import KernelGone, RaisedInKernel, StudentError, Timeout
from perfaudit.autograde.evidence import asks, made_up
from perfaudit.autograde.evidence.instruments import GraderJit, NewWorkload
from perfaudit.autograde.evidence.handed_out import HandedOut
from perfaudit.autograde.evidence.loop_jit import LoopJit
from perfaudit.autograde.wire import protocol
from perfaudit.checks.held import FreshJit, SlowFunction

if TYPE_CHECKING:
    from jupyter_client.manager import AsyncKernelManager

INTERRUPT_GRACE_S = 5


class RemoteRef:
    """A student's object the kernel keeps: a function or anything that is not plain data."""

    def __init__(self, channel: "KernelChannel", number: int, is_callable: bool, type_name: str) -> None:
        self._channel, self._number, self._callable, self._type = channel, number, is_callable, type_name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._callable:
            raise TypeError(f"'{self._type}' object is not callable")
        return self._channel.request({"op": "call", "ref": self._number}, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        try:
            return self._channel.request({"op": "getattr", "ref": self._number, "name": name})
        except StudentError as error:  # getattr(ref, name, default) and hasattr work as on the object itself
            if error.kind == "AttributeError":
                raise AttributeError(str(error)) from None
            raise

    def __repr__(self) -> str:
        return f"<the student's {self._type}>"

    def beside(self, function: "HandedOut") -> Callable[..., Any]:
        """function (one the grader made, a HandedOut) made in this reference's kernel and called there."""
        return lambda *args, **kwargs: self._channel.request({"op": "call", "fn": function}, args, kwargs)


class ReadLater:
    """A value the kernel keeps whose contents are read when a test uses it (a path: its folder as it is then)."""

    def __init__(self, ref: RemoteRef) -> None:
        self.ref = ref

    def read(self) -> Any:
        return self.ref._channel.request({"op": protocol.VALUE, "ref": self.ref._number})


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

    timeout: float
    deadline: float
    gone: str | None

    def __init__(self, kernel_manager: "AsyncKernelManager", scratch: str | Path,
                 iopub: zmq.Socket | None = None) -> None:
        self.km, self.timeout, self.deadline = kernel_manager, 0, 0
        # What the kernel prints while a test runs goes to the preprocessor's iopub socket, which nobody reads then:
        # it is read here and dropped as it comes, one message at a time, never left to pile up in the grader. That
        # socket belongs to an asyncio event loop, which may run in another thread: a ZMQ socket used by two threads
        # at once can abort the process, so it is read on its loop's thread (_iopub_loop), never beside it.
        self.iopub: zmq.Socket[bytes] | None = None if iopub is None else zmq.Socket.shadow(iopub.underlying)
        self._iopub_async = iopub
        self.scratch = Path(scratch)  # the grader's folder for directories read back from the kernel
        self.exchange = Exchange(self.scratch, self)
        self.client = BlockingKernelClient()
        self.client.load_connection_info(kernel_manager.get_connection_info())
        # No iopub: nothing reads what the kernel prints during a request, so nothing of it may queue up here.
        self.client.start_channels(iopub=False, hb=False)
        self.gone = None  # why the kernel can answer no more, once it cannot

    def close(self) -> None:
        self.client.stop_channels()

    def start_test(self, timeout: float) -> None:
        """Every request of the next test shares these seconds: a kernel that answers slowly cannot multiply them."""
        self.timeout, self.deadline = timeout, time.monotonic() + timeout
        # An answer is read within the test's time too; one that came back in time, while the grader was still
        # dropping what the kernel printed, gets the grace an interrupted test gets.
        self.exchange.timeout, self.exchange.deadline = self.timeout, self.deadline + INTERRUPT_GRACE_S

    # --- one request ---

    def request(self, request: dict[str, Any], args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None) -> Any:
        if self.gone:
            raise KernelGone(self.gone)
        mirrors: list[Path] = []
        if "fn" in request:  # a function of the grader's, made in the kernel (a HandedOut)
            request = {**request, "fn": self.exchange.encode(request["fn"], mirrors)}
        if request["op"] in protocol.CALLS:
            request = {**request, "args": [self.exchange.encode(a, mirrors) for a in args],
                       "kwargs": {str(k): self.exchange.encode(v, mirrors) for k, v in (kwargs or {}).items()}}
        reply = self._round_trip(protocol.request_expression(request))
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise RaisedInKernel(_text(error.get("type"), protocol.MAX_TYPE_CHARS),
                                 _text(error.get("message"), protocol.MAX_ERROR_CHARS))
        return self.exchange.answer(reply, mirrors)

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
            events = dict(poller.poll(timeout=min(left, wait_s) * 1000))  # type: ignore[arg-type]  # ms, a float
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
                    raise Timeout("Timeout", f"the test did not finish within {self.timeout:.0f} s, so the grader "
                                             "interrupted it")
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
        text = str(msg.get("content", {}).get("prompt", ""))[:protocol.MAX_PROMPT_CHARS]
        word, number, details = protocol.read_prompt(text)
        slow = self.exchange.slow.get(number)  # type: ignore[arg-type]  # no number: no instrument
        answer = ""
        if isinstance(slow, LoopJit):
            if word == asks.ASK_TRACED:
                # whether the traced function computes a step, and which function made with the jit it is
                slow.traced(details[:1] == ["1"], details[1] if len(details) > 1 else "0")
            elif word == asks.ASK_FED and details:  # the batches that reached its functions: "0,2,3", or "-"
                slow.reached(int(i) for i in details[0].split(",") if i.isascii() and i.isdigit() and len(i) < 6)
        elif isinstance(slow, GraderJit):
            answer = slow.answer(text, received)
        elif slow is not None and word == asks.ASK_CALL:
            slow.hold_call(received)
        elif slow is not None and word == asks.ASK_READY:
            slow.hold_result(received)
        elif slow is not None and word == asks.ASK_POLL:
            answer = "1" if slow.poll_result(received) else ""
        self.client.input(answer)


class Exchange:
    """The grader's side of one notebook's values: arguments out (its instruments numbered, its folders sent) and
    answers back, each decoded and checked whole before any folder of it is written (the kernel is the student's
    process: its answers are hostile input)."""

    timeout: float
    slow: dict[int, SlowFunction | GraderJit | LoopJit]

    def __init__(self, scratch: str | Path, channel: KernelChannel | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.scratch = Path(scratch)  # the grader's folder for folders read back from the kernel
        self.channel = channel  # the one whose references may be sent back
        self.slow = {}  # number -> SlowFunction or GraderJit whose results wait for the grader, or a LoopJit
        self.folders = 0  # read back so far
        self.kept_bytes = self.kept_entries = 0  # written so far, all kept until the notebook ends
        self.clock, self.deadline, self.timeout = clock, math.inf, 0  # the running test's (start_test)

    def on_time(self) -> None:
        """Raise Timeout once the running test's time is up: an answer is read within it, like any other work."""
        if self.clock() > self.deadline:
            raise Timeout("Timeout", f"the test did not finish within {self.timeout:.0f} s (the grader was still "
                                     "reading what your code answered)")

    # --- values out ---

    def encode(self, value: Any, mirrors: list[Path]) -> Any:
        """value as the kernel receives it; the grader's folders in it are appended to mirrors."""
        def other(value, depth):
            if isinstance(value, np.generic):
                return value.item()
            if isinstance(value, RemoteRef):
                if value._channel is not self.channel:
                    raise ValueError("a reference from another kernel")
                return {protocol.TAG: protocol.REF, "id": value._number}
            if isinstance(value, (GraderJit, NewWorkload)):  # NewWorkload: the kernel applies it to a new workload
                jit = value.jit if isinstance(value, NewWorkload) else value
                number = next((n for n, known in self.slow.items() if known is jit), len(self.slow) + 1)
                self.slow[number] = jit
                jit.number = number
                # a reference comes back only through a channel
                jit.resolve = lambda kept: RemoteRef(self.channel, kept, True, "function")  # type: ignore[arg-type]
                return {protocol.TAG: protocol.SLOWJIT, "id": number, "new_workload": isinstance(value, NewWorkload)}
            if isinstance(value, FreshJit):  # made in the kernel; the grader judges the calls on its own clock
                return {protocol.TAG: protocol.FRESHJIT, "fn": protocol.encode(value.fn, other, depth=depth + 1)}
            if isinstance(value, HandedOut):  # made anew in the kernel from the grader's handout.py
                return {protocol.TAG: protocol.HANDOUT, "name": value.name, "source": value.source}
            if isinstance(value, LoopJit):  # the kernel reports each trace; the grader counts it (_answer_input)
                number = next((n for n, known in self.slow.items() if known is value), len(self.slow) + 1)
                self.slow[number] = value
                value.number = number
                return {protocol.TAG: protocol.LOOPJIT, "id": number, "restart": value.restart, "watch": value.watch}
            if isinstance(value, SlowFunction):  # one number each: handed in again, the kernel knows it as the same
                number = next((n for n, known in self.slow.items() if known is value), len(self.slow) + 1)
                self.slow[number] = value
                wrapped = None if value.wrapped is None else protocol.encode(value.wrapped, other, depth=depth + 1)
                return {protocol.TAG: protocol.SLOW, "id": number, "wrapped": wrapped,
                        "call": bool(value.call_delays_s), "leaves": value.leaves}
            if isinstance(value, Path):
                if not self._mirrorable(value):
                    raise ValueError(f"a test may hand the student's code only folders made by hidden.new_folder() "
                                     f"or read back from the kernel, not {value}")
                mirrors.append(value)
                files = protocol.snapshot(value)["files"] if value.is_dir() else {}  # a new folder, usually empty
                return {protocol.TAG: protocol.DIRARG, "files": files}
            array = protocol.encode_array(value, jax=type(value).__module__.startswith(("jax", "jaxlib")))
            if array is None:
                raise TypeError(f"cannot send a {type(value).__name__} to the student's kernel")
            return array

        return protocol.encode(value, other)

    def _mirrorable(self, path):
        """Folders the grader made for tests: the only ones whose contents the kernel's answer may replace."""
        path = path.resolve()
        return any(path == root or root in path.parents for root in (self.scratch.resolve(), *made_up.test_folders()))

    # --- values back ---

    def answer(self, reply: dict[str, Any], mirrors: list[Path]) -> Any:
        """The value of a reply, its folders written: those in it into new folders, the kernel's `dirs` over the
        test folders handed to it (mirrors), in order."""
        try:
            dirs = reply.get("dirs") or []
            if not isinstance(dirs, list) or len(dirs) != len(mirrors):
                raise protocol.WireError("the kernel's answer does not hold the folders it was given")
            written = [(local, protocol.Snapshot(sent, self.on_time)) for local, sent in zip(mirrors, dirs)]
            paths = []

            def other(tag, value, depth):
                if tag == protocol.ARRAY:
                    return protocol.decode_array(value)
                if tag == protocol.REF:  # a reference comes back only through a channel
                    ref = RemoteRef(self.channel, _int(value.get("id")), bool(value.get("callable")),  # type: ignore[arg-type]
                                    _text(value.get("type"), protocol.MAX_TYPE_CHARS))
                    return ReadLater(ref) if value.get("later") is True else ref
                if tag == protocol.PATH:
                    paths.append(tag)
                    if len(paths) > protocol.MAX_PATHS:
                        raise protocol.WireError(f"an answer with more than {protocol.MAX_PATHS} folders in it")
                    sent = protocol.Snapshot(value, self.on_time)
                    self.folders += 1
                    local = self.scratch / f"read-back-{self.folders}"
                    written.append((local, sent))
                    return sent.path_in(local)
                raise protocol.WireError(f"an answer with an unknown tag {tag!r:.40}")

            value = protocol.decode(reply.get("value"), other, self.on_time)
        except protocol.WireError as error:
            raise StudentError("ValueError", str(error)) from None
        self._keep(sum(sent.size for _, sent in written), sum(sent.entries for _, sent in written))
        for local, sent in written:
            if local.exists():  # a test folder handed to the kernel: its contents as the kernel left them
                shutil.rmtree(local)
            sent.unpack_into(local)
        return value


    def _keep(self, size, entries):
        """Count what an answer makes the grader write, refused whole past the notebook's budget."""
        if self.kept_bytes + size > protocol.MAX_NOTEBOOK_BYTES or \
                self.kept_entries + entries > protocol.MAX_NOTEBOOK_ENTRIES:
            raise StudentError("ValueError", f"your code's answers in this notebook hold more files than the grader "
                                             f"keeps for one notebook ({protocol.MAX_NOTEBOOK_BYTES // 2**20} MiB, "
                                             f"{protocol.MAX_NOTEBOOK_ENTRIES} files and folders in all). Of an "
                                             f"evidence folder the grader reads only report.json and the files it "
                                             f"names; keep other folders your functions return small.")
        self.kept_bytes += size
        self.kept_entries += entries


def _read_reply(msg):
    content = msg.get("content", {})
    if content.get("status") != "ok":
        raise StudentError("KernelError", "the kernel did not run the grader's request")
    result = content.get("user_expressions", {}).get("r", {})
    if result.get("status") != "ok":
        raise RaisedInKernel(_text(result.get("ename"), 100) or "Error",
                             f"the grader's request failed in the kernel: {_text(result.get('evalue'), 500)}")
    # The text is the student's to choose (an IPython formatter for str): read by a pattern and a counted JSON
    # decoding, never evaluated, so that what it costs the grader is linear in its length (protocol.unpack).
    try:
        data = result.get("data")
        return protocol.unpack(protocol.reply_base64(data.get("text/plain") if isinstance(data, dict) else None))
    except protocol.WireError as error:
        raise StudentError("ValueError", str(error)) from None


def _int(value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise protocol.WireError("an answer that is not plain data")
    return value


def _text(value, limit):
    return value[:limit] if isinstance(value, str) else ""


def _safe_name(name):
    name = _text(name, 200)
    return name if name and "/" not in name and name not in (".", "..") else "file"
