"""The kernel manager for every autograde kernel: the kernel runs in perfaudit/autograde/isolation/sandbox.py
(bubblewrap).

The sandbox has no network, so not even TCP loopback: the kernel and its clients talk ZMQ over ipc sockets in a
private folder that the sandbox sees as /run/kernel (the kernel reads a copy of the connection file naming that
path, so no path of the grader's is revealed). Once the kernel is up, the folder is closed to the sandbox's user:
student code cannot swap a socket for a link the grader would follow on a reconnect.

The kernel works in a scratch folder in memory that starts as a copy of the submission's regular files (staged
by the grader from submitted/, perfaudit/autograde/plugins/submission.py) and vanishes with it. All its processes
together stay within the memory limit (perfaudit/autograde/isolation/memory.py). Its raw stdout and stderr never reach
the grader's terminal: the first bytes are kept, escaped, for the instructor. Its environment holds what Python needs
and, from the grader's, only PERFAUDIT_*, JAX_* and XLA_* settings: not NBGRADER_EXECUTION.
"""

import contextlib
import json
import os
import shutil
import tempfile
import threading
from typing import Any

import zmq
from jupyter_client.manager import AsyncKernelManager

from perfaudit.autograde.isolation import memory, sandbox
from perfaudit.autograde.isolation.limits import SandboxLimits
from perfaudit.autograde.plugins import submission
from perfaudit.autograde.plugins.verdicts import printable
from perfaudit.autograde.wire import protocol

# A file each kernel start adds a line to, when set (.ci/run counts them). Not a PERFAUDIT_ name: the sandbox's
# environment takes those from the grader's (sandbox.student_env), and this stays on the grader's side.
START_LOG = "SANDBOXED_KERNEL_LOG"


class RawStream:
    """The first `limit` bytes a process writes to a pipe, the rest counted and dropped."""

    def __init__(self, limit: int) -> None:
        self.limit, self.kept, self.dropped = limit, bytearray(), 0
        self.read_fd, self.write_fd = os.pipe()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self):
        while chunk := os.read(self.read_fd, 65536):
            room = max(self.limit - len(self.kept), 0)
            self.kept += chunk[:room]
            self.dropped += max(len(chunk) - room, 0)
        os.close(self.read_fd)

    def text(self) -> str:
        note = f"\n[{self.dropped} more bytes dropped by the grader]" if self.dropped else ""
        return printable(self.kept.decode(errors="replace")) + note


class RawOutput:
    """The kernel's file descriptors 1 and 2, each capped on its own: a flood on one never hides the other
    (ipykernel echoes the two from separate threads, so their order is not fixed)."""

    def __init__(self, limit: int) -> None:
        self.stdout, self.stderr = RawStream(limit // 2), RawStream(limit - limit // 2)

    def __bool__(self) -> bool:
        return any(stream.kept or stream.dropped for stream in (self.stdout, self.stderr))

    def close_write_ends(self) -> None:
        os.close(self.stdout.write_fd)
        os.close(self.stderr.write_fd)

    def text(self) -> str:
        """What the kernel wrote, escaped for a person to read."""
        return f"[stdout]\n{self.stdout.text()}\n[stderr]\n{self.stderr.text()}"


class SandboxedKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernel runs sandboxed; TrustedExecute sets `submission` and `limits` first."""

    submission = None  # the student's submitted folder (read by submission.stage, regular files only)
    ignore = ()  # names in it the kernel does not get (CourseDirectory.ignore: checkpoints, earlier evidence)
    limits: SandboxLimits = None  # type: ignore[assignment]  # set before a start: TrustedExecute, or start_kernel
    raw_output = None  # RawOutput, once started
    memory_limit = None  # memory.MemoryLimit, once started
    _kernels_started = 0  # in this process: each kernel's sandbox gets a uid of its own (sandbox.sandbox_uid)
    interrupts = 0  # interrupts sent to this kernel: TrustedExecute tells by them a cell whose reply never came

    async def interrupt_kernel(self) -> None:  # type: ignore[override]  # async, as AsyncKernelManager's
        self.interrupts += 1
        await super().interrupt_kernel()

    async def start_kernel(self, **kw: Any) -> None:  # type: ignore[override]  # async, as AsyncKernelManager's
        sandbox.require()  # before anything is made: a clear refusal, not a failed launch
        _bound_messages(self.context)  # the control channel's socket
        self.limits = self.limits or SandboxLimits()
        # A signal would reach bwrap, not the kernel in its own session: interrupt over the control channel.
        self.kernel_spec.interrupt_mode = "message"  # type: ignore[union-attr]  # a kernel started has a spec
        self._cleanup = contextlib.ExitStack()
        self._private = tempfile.mkdtemp(prefix="perfaudit-kernel-")
        self._cleanup.callback(shutil.rmtree, self._private, ignore_errors=True)
        self._staged = tempfile.mkdtemp(prefix="perfaudit-submission-")
        self._cleanup.callback(shutil.rmtree, self._staged, ignore_errors=True)
        if self.submission is not None:
            submission.stage(self.submission, self._staged, self.ignore)
        self.transport = "ipc"
        self.ip = os.path.join(self._private, "kernel")  # sockets are <ip>-<n>
        self.connection_file = os.path.join(self._private, "kernel.json")
        self._sandboxed = sandbox.available()[0]
        SandboxedKernelManager._kernels_started += 1
        self.uid = sandbox.sandbox_uid(SandboxedKernelManager._kernels_started)
        _log_start(self._sandboxed)
        if self._sandboxed:
            kw["cwd"] = self._private  # bwrap's own; the kernel starts in its scratch folder
            _hand_to_sandbox_user(self._private, self._staged, self.uid)
        else:  # running unsandboxed, as asked: in a copy of the submission all the same
            kw["cwd"] = self._staged
        try:
            await super().start_kernel(**kw)
        except BaseException:
            self._cleanup.close()
            raise

    def client(self, **kwargs: Any) -> Any:
        """A client of this kernel whose sockets take no message part over protocol.MAX_MESSAGE_BYTES."""
        kc = super().client(**kwargs)
        _bound_messages(kc.context)  # before start_channels makes its sockets
        return kc

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        env = sandbox.student_env()
        if self._sandboxed:
            kernel_cmd = self._sandbox_connection_file(kernel_cmd)
            kw["env"] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # bwrap's own; the kernel's is below
            kernel_cmd = sandbox.command(kernel_cmd, submission=self._staged, private=self._private,
                                         limits=self.limits, env=env, uid=self.uid)
        else:
            kw["env"] = sandbox.unsandboxed_env(env)
            kernel_cmd = sandbox.command(kernel_cmd, submission=self._staged, private=self._private,
                                         limits=self.limits)
        self.memory_limit = memory.MemoryLimit(self.limits.memory_mb, os.path.basename(self._private))
        self._cleanup.callback(self.memory_limit.close)
        self.raw_output = RawOutput(self.limits.raw_output_bytes)
        kw["stdout"], kw["stderr"] = self.raw_output.stdout.write_fd, self.raw_output.stderr.write_fd
        try:
            await super()._async_launch_kernel(self.memory_limit.command_prefix() + kernel_cmd, **kw)
        finally:
            self.raw_output.close_write_ends()  # the kernel holds its own copies
        self.memory_limit.watch(self.provisioner.process.pid)  # type: ignore[union-attr]  # a local provisioner

    def _sandbox_connection_file(self, kernel_cmd):
        """The kernel reads a copy of the connection file whose socket paths are the sandbox's /run/kernel."""
        info = json.loads(open(self.connection_file).read())
        info["ip"] = f"{sandbox.KERNEL_DIR}/kernel"
        inside = os.path.join(self._private, "kernel-inside.json")
        with open(inside, "w") as handle:
            json.dump(info, handle)
        if os.geteuid() == 0:
            os.chown(inside, self.uid, self.uid)
        return [f"{sandbox.KERNEL_DIR}/kernel-inside.json" if part == self.connection_file else part
                for part in kernel_cmd]

    def close_private_folder(self) -> None:
        """Once the kernel has bound its sockets: its user may no longer add, remove or rename anything there, nor
        write the connection file it read, which lies on the grader's disk outside the scratch's size cap (a fresh
        attack appended 64 MB to it)."""
        if self._sandboxed and os.geteuid() == 0:
            os.chown(self._private, 0, 0)
            os.chmod(self._private, 0o755)
            inside = os.path.join(self._private, "kernel-inside.json")
            if os.path.exists(inside):
                os.chown(inside, 0, 0)
                os.chmod(inside, 0o644)

    async def _async_cleanup_resources(self, restart=False):
        await super()._async_cleanup_resources(restart=restart)
        if not restart and getattr(self, "_cleanup", None) is not None:
            self._cleanup.close()
            self._cleanup = None  # type: ignore[assignment]  # closed: none left

    cleanup_resources = _async_cleanup_resources  # what nbclient calls after a kernel died


def _log_start(sandboxed):
    """One line in the START_LOG file: a single append, whole, whichever grading process writes it."""
    if log := os.environ.get(START_LOG):
        line = f"{'sandboxed' if sandboxed else 'unsandboxed'} {os.getpid()}\n".encode()
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def _hand_to_sandbox_user(private, staged, uid):
    """As root: the sandbox's user writes the private folder (its sockets) and reads the staged submission."""
    if os.geteuid() != 0:
        return
    os.chown(private, uid, uid)
    os.chmod(private, 0o700)
    for root, dirs, files in os.walk(staged):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def _bound_messages(context: zmq.Context) -> None:
    """Every socket the context makes from now on drops a message part from the kernel over MAX_MESSAGE_BYTES, and
    the connection with it, before reading it whole (ZMQ_MAXMSGSIZE)."""
    context.setsockopt(zmq.MAXMSGSIZE, protocol.MAX_MESSAGE_BYTES)
