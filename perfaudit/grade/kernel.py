"""The kernel manager for every autograde kernel: the kernel runs in perfaudit.sandbox (bubblewrap).

The sandbox has no network, so not even TCP loopback: the kernel and its client talk ZMQ over ipc sockets, which
live with the connection file in a private folder that is bound into the sandbox. The kernel's working folder is
the one nbgrader asks for (autograded/<student>/<assignment>/), writable by the sandbox while the kernel runs.

The kernel's environment is not the grader's: it holds what Python needs (perfaudit.sandbox.base_env) and, from
the grader's environment, only the PERFAUDIT_*, JAX_* and XLA_* settings (an instructor may pin JAX's platform or
XLA flags for the whole class). NBGRADER_EXECUTION and everything else stay outside: a notebook cannot tell that
it is being autograded.
"""

import contextlib
import os
import shutil
import tempfile

from jupyter_client.manager import AsyncKernelManager

from perfaudit import sandbox

class SandboxedKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernel process is started by perfaudit.sandbox.command()."""

    # AsyncKernelManager's public coroutines are KernelManager's _async_* functions: override those names.
    async def start_kernel(self, **kw):
        sandbox.require()  # before any folder changes hands: a clear refusal, not a failed launch
        # A signal would reach bwrap, not the kernel in its own session: interrupt over the control channel.
        self.kernel_spec.interrupt_mode = "message"
        self._sandbox_cleanup = contextlib.ExitStack()
        self._private = tempfile.mkdtemp(prefix="perfaudit-kernel-")
        self._sandbox_cleanup.callback(shutil.rmtree, self._private, ignore_errors=True)
        self.transport = "ipc"
        self.ip = os.path.join(self._private, "kernel")  # sockets are <ip>-<n>
        self.connection_file = os.path.join(self._private, "kernel.json")
        self._workdir = os.path.abspath(kw.get("cwd") or os.getcwd())
        kw["cwd"] = self._workdir
        self._sandbox_cleanup.enter_context(sandbox.workdir_for(self._workdir))
        self._sandbox_cleanup.enter_context(sandbox.workdir_for(self._private))
        try:
            await super().start_kernel(**kw)
        except BaseException:
            self._sandbox_cleanup.close()
            raise

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        # The connection file was just written (0600, the grader's): the sandbox user must read it.
        if os.geteuid() == 0 and sandbox.available()[0]:
            os.chown(self.connection_file, sandbox.sandbox_uid(), sandbox.sandbox_uid())
        env = sandbox.student_env()
        if not sandbox.available()[0]:  # running unsandboxed, as asked: a clean environment all the same
            kw["env"] = env = sandbox.unsandboxed_env(env)
        else:
            kw["env"] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # bwrap's own; the kernel's is below
        kernel_cmd = sandbox.command(kernel_cmd, workdir=self._workdir, env=env, writable=[self._private])
        await super()._async_launch_kernel(kernel_cmd, **kw)

    async def _async_cleanup_resources(self, restart=False):
        await super()._async_cleanup_resources(restart=restart)
        if not restart and getattr(self, "_sandbox_cleanup", None) is not None:
            self._sandbox_cleanup.close()  # the working folder goes back to its owner
            self._sandbox_cleanup = None

    cleanup_resources = _async_cleanup_resources  # what nbclient calls after a kernel died
