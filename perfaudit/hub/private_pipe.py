"""The kernel the hub's users run (kernelspec perfaudit/hub/jupyter_data/kernels/python3): ipykernel, whose pipe
from forked subprocesses is a unix socket in a folder of the kernel's own instead of a loopback port.

ipykernel (7.4.0) binds that pipe, which forwards a forked child's print to the notebook, on tcp://127.0.0.1:<random
port> in every kernel, whatever its channels' transport (IOPubThread._setup_pipe_in). /proc/net/tcp shows every
account each listening port and its owner: a classmate's one large message there is read whole before the pipe's
16-byte key check drops it, and the kernel grows past its owner's memory share. Here the pipe is ipc:// in a folder
made by mkdtemp (0700) in the account's Jupyter runtime folder, beside the kernel's channels: a forked child (the same
account) connects, no other account can. (Not beside the connection file: nbgrader's Validate writes that into /tmp.)
The kernel removes the folder as it exits; a kernel killed leaves it, as it leaves its connection file.

ipykernel has no setting for the pipe: the app below builds its IOPub thread as ipykernel's init_iopub does, with the
thread class below. Run as `python -P -m perfaudit.hub.private_pipe -f <connection file>`: -P keeps the working folder
(the notebook's) out of the search for the kernel's own modules, as ipykernel_launcher does; IPython puts it on
sys.path for the user's code.
"""

import atexit
import os
import shutil
import tempfile
import warnings

import zmq
from ipykernel.iostream import IOPubThread
from ipykernel.kernelapp import IPKernelApp
from jupyter_core.paths import jupyter_runtime_dir
from zmq.eventloop.zmqstream import ZMQStream

PIPE_NAME = "pipe"  # the socket's name in its folder


class PrivatePipeIOPubThread(IOPubThread):
    """ipykernel's IOPub thread, its subprocess pipe bound to ipc://<a private folder>/pipe."""

    _pipe_folder = None

    def _setup_pipe_in(self):
        """Bind the pipe in a new 0700 folder; where that fails, no pipe (as ipykernel does when it cannot bind):
        forked children's output is then lost, never sent through a port."""
        self._pipe_uuid = os.urandom(16)  # ipykernel's check, kept: the pipe's messages carry it
        pipe_in = self.socket.context.socket(zmq.PULL)
        pipe_in.linger = 0
        try:
            runtime = jupyter_runtime_dir()
            os.makedirs(runtime, mode=0o700, exist_ok=True)
            self._pipe_folder = tempfile.mkdtemp(prefix="kernel-pipe-", dir=runtime)
            atexit.register(self._remove_pipe_folder)
            self._pipe_address = f"ipc://{self._pipe_folder}/{PIPE_NAME}"
            pipe_in.bind(self._pipe_address)
        except (OSError, zmq.ZMQError) as e:
            warnings.warn(f"Couldn't bind IOPub Pipe in a private folder: {e}\nsubprocess output will be unavailable.",
                          stacklevel=2)
            self._pipe_flag = False
            pipe_in.close()
            self._remove_pipe_folder()
            return
        self._pipe_in = ZMQStream(pipe_in, self.io_loop)
        self._pipe_in.on_recv(self._handle_pipe_msg)

    def _setup_pipe_out(self):
        """In a forked child: a new context (the parent's does not survive a fork), connected to the private pipe."""
        ctx = zmq.Context()
        pipe_out = ctx.socket(zmq.PUSH)
        pipe_out.linger = 3000  # ipykernel's: 3 s for a send to finish before it is dropped
        pipe_out.connect(self._pipe_address)
        return ctx, pipe_out

    def _remove_pipe_folder(self):
        # A forked child inherits this exit handler: only the kernel itself removes the folder its pipe is in.
        if self._pipe_folder and self._is_master_process():
            shutil.rmtree(self._pipe_folder, ignore_errors=True)


class PrivatePipeKernelApp(IPKernelApp):
    """IPKernelApp whose IOPub thread is PrivatePipeIOPubThread; the rest is ipykernel's."""

    def init_iopub(self, context):
        # ipykernel 7.4.0's IPKernelApp.init_iopub, the thread's class aside (tests/hub/test_private_pipe.py compares
        # the two, so an upgrade of ipykernel that changes it fails there)
        self.iopub_socket = context.socket(zmq.XPUB)
        self.iopub_socket.linger = 1000
        self._apply_curve_server_options(self.iopub_socket)
        self.iopub_port = self._bind_socket(self.iopub_socket, self.iopub_port)
        self.log.debug("iopub PUB Channel on port: %i", self.iopub_port)
        self.configure_tornado_logger()
        self.iopub_thread = PrivatePipeIOPubThread(self.iopub_socket, pipe=True, session=self.session)
        self.iopub_thread.start()
        # backward-compat: wrap iopub socket API in background thread
        self.iopub_socket = self.iopub_thread.background_socket


if __name__ == "__main__":
    PrivatePipeKernelApp.launch_instance()
