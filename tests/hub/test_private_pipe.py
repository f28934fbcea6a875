"""The hub's kernel (perfaudit/hub/private_pipe.py, the python3 kernelspec of perfaudit/hub/jupyter_data): started
as the hub's servers start it, it holds no listening TCP socket, and a forked child's print still reaches the
notebook. ipykernel's own kernel, started the same way, listens on a loopback port: what a classmate finds in
/proc/net/tcp and floods."""

import inspect
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from ipykernel.kernelapp import IPKernelApp
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from listening_sockets import held_by, listening_tcp, unix_paths

from perfaudit.hub import settings
from perfaudit.hub.kernelspecs import HubKernelSpecs
from perfaudit.hub.private_pipe import PIPE_NAME, PrivatePipeKernelApp

START_S = 120  # a kernel's start on two busy cores
FORKED_PRINT = ("import os\nchild = os.fork()\nif child == 0:\n    print('printed by a forked child', flush=True)\n"
                "    os._exit(0)\nos.waitpid(child, 0)\nprint('the parent is done', flush=True)\n")


@pytest.fixture
def runtime(monkeypatch):
    """A private runtime folder as a person's server has (0700; a short path: a unix socket's holds 107 bytes), its
    kernels' too (JUPYTER_RUNTIME_DIR: they inherit the server's environment)."""
    folder = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def start(runtime, spec_manager):
    """A kernel started as a server of the hub starts it (its transport, its connection file in runtime), from
    spec_manager's python3: (manager, client)."""
    manager = KernelManager(kernel_name="python3", kernel_spec_manager=spec_manager,
                            transport=settings.KERNEL_TRANSPORT, connection_file=str(runtime / "kernel-1.json"))
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=START_S)
    except BaseException:
        stop(manager, client)
        raise
    return manager, client


def stop(manager, client):
    client.stop_channels()
    manager.shutdown_kernel(now=False)  # as the server's Shut Down: the kernel exits by itself


def pid_of(manager):
    return manager.provisioner.process.pid


def listening_ports_of(pid):
    """The listening TCP sockets the process holds: (address, port, uid) each."""
    listening = listening_tcp()
    return [listening[inode] for inode in held_by(pid) if inode in listening]


def unix_sockets_of(pid):
    paths = unix_paths()
    return sorted(paths[inode] for inode in held_by(pid) if inode in paths)


def stream_text(client, code):
    """What running code printed, stdout and stderr together."""
    msg_id = client.execute(code)
    printed, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        message = client.get_iopub_msg(timeout=deadline - time.monotonic())
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return "".join(printed)
    raise AssertionError(f"no idle after running the code: {printed}")


# The two ways the hub names its kernelspec: JUPYTER_PATH (each person's server, its Validate and terminal) and
# Formgrader's kernelspec manager (perfaudit/hub/jupyterhub_config.py).
@pytest.fixture(params=["JUPYTER_PATH", "Formgrader"])
def hub_spec_manager(request, monkeypatch):
    if request.param == "JUPYTER_PATH":
        monkeypatch.setenv("JUPYTER_PATH", str(settings.JUPYTER_DATA))
        return KernelSpecManager()
    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    return HubKernelSpecs()


def test_the_hub_s_kernel_listens_on_no_tcp_port_and_forwards_a_forked_child_s_print(runtime, hub_spec_manager):
    manager, client = start(runtime, hub_spec_manager)
    try:
        assert manager.kernel_spec.argv[1:4] == ["-P", "-m", "perfaudit.hub.private_pipe"]
        pid = pid_of(manager)
        assert listening_ports_of(pid) == []
        # Its sockets are unix sockets in folders of its owner's alone: its channels in the runtime folder, the
        # pipe in a folder of its own there.
        sockets = unix_sockets_of(pid)
        [pipe] = [path for path in sockets if Path(path).name == PIPE_NAME]
        assert sorted(set(sockets) - {pipe}) == [f"{runtime}/kernel-1-ipc-{n}" for n in range(1, 6)]
        assert Path(pipe).parent.parent == runtime
        for folder in (runtime, Path(pipe).parent):
            found = folder.stat()
            assert found.st_mode & 0o777 == 0o700 and found.st_uid == os.getuid(), folder  # (jupyter's is 1700)
        printed = stream_text(client, FORKED_PRINT)
        assert "printed by a forked child" in printed and "the parent is done" in printed, printed
    finally:
        stop(manager, client)
    assert not Path(pipe).parent.exists(), "the pipe's folder outlived its kernel"


def test_ipykernel_s_own_kernel_listens_on_a_loopback_port(runtime, monkeypatch):
    """The control: ipykernel_launcher, with the same transport, holds a listening loopback port (its pipe), and the
    test above would see it."""
    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    native = KernelSpecManager(kernel_dirs=[])  # ipykernel's own python3, whatever this machine installed
    manager, client = start(runtime, native)
    try:
        assert "ipykernel_launcher" in manager.kernel_spec.argv
        assert [address for address, _, _ in listening_ports_of(pid_of(manager))] == ["127.0.0.1"]
    finally:
        stop(manager, client)


def test_where_no_private_pipe_can_be_bound_the_kernel_works_without_one(runtime, monkeypatch):
    """A runtime folder whose sockets' paths pass the 107 bytes a unix socket's path may hold (the channels elsewhere):
    no pipe (a forked child's print is lost), no port either, and the kernel runs code."""
    deep = runtime / ("d" * 120)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(deep))
    monkeypatch.setenv("JUPYTER_PATH", str(settings.JUPYTER_DATA))
    manager, client = start(runtime, KernelSpecManager())
    try:
        pid = pid_of(manager)
        assert listening_ports_of(pid) == []
        assert [Path(path).name for path in unix_sockets_of(pid) if Path(path).name == PIPE_NAME] == []
        assert stream_text(client, "print(6 * 7)") == "42\n"
    finally:
        stop(manager, client)
    assert list(deep.iterdir()) == []  # the folder made for the pipe went at once


def test_the_kernelspec_is_ipykernel_s_but_for_its_launcher():
    """Same name, display name, language and metadata as ipykernel's own: notebooks saved with it, or for it, open
    with either. But the debugger is off: JupyterLab's debugger starts debugpy, which listens on two loopback ports."""
    ours = json.loads((settings.JUPYTER_DATA / "kernels" / "python3" / "kernel.json").read_text())
    native = KernelSpecManager(kernel_dirs=[]).get_kernel_spec("python3").to_dict()
    native["metadata"]["debugger"] = False
    assert {k: v for k, v in ours.items() if k != "argv"} == {k: v for k, v in native.items()
                                                             if k in ours and k != "argv"}
    assert ours["argv"] == ["python", "-P", "-m", "perfaudit.hub.private_pipe", "-f", "{connection_file}"]


def test_init_iopub_is_ipykernel_s_but_for_the_thread_class():
    """PrivatePipeKernelApp.init_iopub copies ipykernel's (it has no setting for the thread's class): an ipykernel
    whose init_iopub changed fails here, not in a student's kernel."""
    def body(method):
        lines = inspect.getsource(method).splitlines()[1:]
        return [line.strip() for line in lines if line.strip() and not line.strip().startswith(("#", '"""'))]

    ours = [line.replace("PrivatePipeIOPubThread(", "IOPubThread(") for line in body(PrivatePipeKernelApp.init_iopub)]
    assert ours == body(IPKernelApp.init_iopub)
