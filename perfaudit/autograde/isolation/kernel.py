"""The kernel manager for every autograde kernel: the kernel runs in perfaudit/autograde/isolation/sandbox.py
(bubblewrap).

The sandbox has no network, so not even TCP loopback: the kernel and its clients talk ZMQ over ipc sockets in the
sandbox's own socket folder, /run/kernel, a capped folder in memory (the kernel reads a read-only copy of the
connection file naming that path, so no path of the grader's is revealed). Before any client connects, the grader
seals that folder and checks it, and connects through its own descriptor of it (boundary.KernelSockets): student
code can neither write the grader's disk there nor swap a socket for a link the grader would follow.

The kernel works in a scratch folder in memory that starts as a copy of the submission's regular files (staged
by the grader from submitted/, perfaudit/autograde/isolation/submission.py) and vanishes with it. All its processes
together stay within the memory limit (perfaudit/autograde/isolation/memory.py). Its raw stdout and stderr never reach
the grader's terminal: the first bytes are kept, escaped, for the instructor. Its environment holds what Python needs
and, from the grader's, only PERFAUDIT_*, JAX_* and XLA_* settings: not NBGRADER_EXECUTION.
"""

import contextlib
import json
import os
import threading
from typing import Any

import zmq
from jupyter_client.manager import AsyncKernelManager

from perfaudit.autograde.isolation import memory, sandbox, submission
from perfaudit.autograde.isolation.boundary import HostFolder, KernelSockets
from perfaudit.autograde.isolation.limits import SandboxLimits
from perfaudit.autograde.text import printable
from perfaudit.autograde.wire import protocol

# A file each kernel start adds a line to, when set (.ci/run counts them). Not a PERFAUDIT_ name: the sandbox's
# environment takes those from the grader's (sandbox.student_env), and this stays on the grader's side.
START_LOG = "SANDBOXED_KERNEL_LOG"
STARTUP_S = 120  # for the kernel to bind its sockets (a busy machine); its client then waits for an answer


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
    _sockets: KernelSockets | None = None  # the last launch's sealed socket folder
    _launches = 0  # launches of this manager's kernel: a restart launches again
    crossed: str | None = None  # how the submission's code showed its hand at the boundary, read at cleanup

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
        self._host = HostFolder()
        self._cleanup.callback(self._host.remove)
        if self.submission is not None:
            submission.stage(self.submission, self._host.staged, self.ignore)
        self.transport = "ipc"
        self.ip = str(self._host.path / "kernel")  # where jupyter_client picks free names; the client's comes later
        self.connection_file = str(self._host.path / "kernel.json")
        self._sandboxed = sandbox.available()[0]
        SandboxedKernelManager._kernels_started += 1
        self.uid = sandbox.sandbox_uid(SandboxedKernelManager._kernels_started)
        _log_start(self._sandboxed)
        self._host.readable_by_sandbox()
        # bwrap's own working folder, a folder of the grader's; the kernel starts in its scratch folder (or,
        # running unsandboxed as asked, in a copy of the submission all the same)
        kw["cwd"] = str(self._host.path if self._sandboxed else self._host.staged)
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
        env = sandbox.student_env()  # PERFAUDIT_STUDENT among them: graded.grading() set it for the student graded
        staged = self._host.staged
        if self._sandboxed:
            kernel_cmd, inside = self._sandbox_connection_file(kernel_cmd)
            kw["env"] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # bwrap's own; the kernel's is below
            kernel_cmd = sandbox.command(kernel_cmd, submission=staged, host=self._host, connection=inside,
                                         limits=self.limits, env=env, uid=self.uid)
        else:
            kw["env"] = sandbox.unsandboxed_env(env)
            kernel_cmd = sandbox.command(kernel_cmd, submission=staged, host=self._host, limits=self.limits)
        self.memory_limit = memory.MemoryLimit(self.limits.memory_mb, self._host.path.name)
        self._cleanup.callback(self.memory_limit.close)
        self.raw_output = RawOutput(self.limits.raw_output_bytes)
        kw["stdout"], kw["stderr"] = self.raw_output.stdout.write_fd, self.raw_output.stderr.write_fd
        try:
            await super()._async_launch_kernel(self.memory_limit.command_prefix() + kernel_cmd, **kw)
        finally:
            self.raw_output.close_write_ends()  # the kernel holds its own copies
        process = self.provisioner.process  # type: ignore[union-attr]  # a local provisioner
        self.memory_limit.watch(process.pid)
        if self._sandboxed:  # before any client connects (the manager's own control socket included)
            names = [f"kernel-{port}" for port in self.ports]
            sockets = self._sockets = KernelSockets(sandbox.KERNEL_DIR)  # this launch's: a restart makes a new one
            self._cleanup.callback(sockets.close)
            folder = await sockets.seal(process.pid, names, gone=lambda: process.poll() is not None,
                                        timeout_s=STARTUP_S)
            self.ip = f"{folder}/kernel"

    def _sandbox_connection_file(self, kernel_cmd):
        """The kernel reads a copy of the connection file whose socket paths are the sandbox's /run/kernel, bound
        read-only at sandbox.CONNECTION_FILE: (the command naming it, the copy)."""
        with open(self.connection_file) as handle:
            info = json.load(handle)
        info["ip"] = f"{sandbox.KERNEL_DIR}/kernel"
        self._launches += 1  # a restart's copy is a file of its own
        inside = self._host.write(f"kernel-inside-{self._launches}.json", json.dumps(info))
        return [sandbox.CONNECTION_FILE if part == self.connection_file else part for part in kernel_cmd], inside

    def cleanup_ipc_files(self) -> None:
        """Nothing: the sockets lie in the sandbox's own folder in memory, gone with it; the grader removes nothing
        there by name."""

    async def _async_cleanup_resources(self, restart=False):
        if self._sockets is not None and self.crossed is None:  # read while the sealed folder is still held
            self.crossed = self._sockets.tampered()
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


def _bound_messages(context: zmq.Context) -> None:
    """Every socket the context makes from now on drops a message part from the kernel over MAX_MESSAGE_BYTES, and
    the connection with it, before reading it whole (ZMQ_MAXMSGSIZE)."""
    context.setsockopt(zmq.MAXMSGSIZE, protocol.MAX_MESSAGE_BYTES)
