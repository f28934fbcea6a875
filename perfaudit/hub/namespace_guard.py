"""The hub's spawner: each person's server starts where no user namespace can be made, nor by what it starts.

Any account may make a user namespace of its own (`unshare -Ur`), and in it a mount namespace with a tmpfs, or an
IPC namespace with SysV segments: memory that no process of the account holds, and that the watchdog
(perfaudit/hub/watchdog.py), looking from the machine's own namespaces, cannot see; a student could take the
machine's memory past every share. So the hub's LocalProcessSpawner installs a seccomp filter
(perfaudit/autograde/isolation/syscalls.py's for_hub_servers) in the forked server while it is still root, before
it becomes the person: root needs no no_new_privs to install it, so `passwd` in a terminal still works. The
kernels and terminals the server starts inherit the filter, and no process can remove it. A student's `unshare -U`
then says "Operation not permitted"; what needs no user namespace (threads, subprocesses, JAX) runs as before.
The same filter refuses ptrace, process_vm_readv/writev and pidfd_getfd: a held-out attacker took their own
server's listening socket with pidfd_getfd, stopped the server (the hub saw it alive and kept its route) and served
their own pages at the server's address. (A debugger or py-spy then cannot attach in a student's terminal.)

Where the machine's architecture has no filter here (x86_64 and aarch64 have), the hub refuses to start servers,
saying so, rather than start them without it.
"""

import ctypes
from collections.abc import Callable

from jupyterhub.spawner import LocalProcessSpawner

from perfaudit.autograde.isolation import syscalls
from perfaudit.hub import person_groups

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2  # linux/prctl.h, linux/seccomp.h


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]  # struct sock_fprog


class NoFilterHere(RuntimeError):
    """This machine's architecture has no filter in syscalls.py."""


def installer(machine: str | None = None) -> Callable[[], None]:
    """A function that installs the filter (of this machine's architecture, or machine's) in the process that calls
    it (a forked child before exec, as root), with everything it needs made beforehand: after a fork, only the call
    itself is made."""
    program = syscalls.for_hub_servers(machine)
    if program is None:
        raise NoFilterHere("this machine's architecture has no filter that keeps students from making user "
                           "namespaces (perfaudit/autograde/isolation/syscalls.py knows x86_64 and aarch64): "
                           "the hub starts no server without it")
    ops = ctypes.create_string_buffer(program, len(program))
    fprog = (ops, _Program(len(program) // 8, ctypes.cast(ops, ctypes.c_void_p)))  # the buffer lives as long
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def install() -> None:
        if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog[1]), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "the seccomp filter of a student's server could not be installed")

    return install


def guarded(become: Callable[[], None], join: Callable[[], None] = lambda: None) -> Callable[[], None]:
    """become (the spawner's switch to the person's account), with the filter installed first, and the server moved
    into the person's cgroups (join: perfaudit/hub/person_groups.py) while still root."""
    install = installer()

    def preexec() -> None:
        join()
        install()
        become()

    return preexec


class GuardedSpawner(LocalProcessSpawner):
    """LocalProcessSpawner whose servers start under the filter, each in its person's cgroups (memory, CPU) where the
    machine has them (c.JupyterHub.spawner_class)."""

    def make_preexec_fn(self, name: str) -> Callable[[], None]:
        limits = person_groups.GroupLimits(self.mem_limit, self.cpu_limit)
        groups = []
        for hierarchy in person_groups.hierarchies():
            try:
                groups += person_groups.prepare(name, limits, [hierarchy])
            except OSError as error:  # a limit below what the group holds now (a hub restarted with less): not a stop
                self.log.warning("%s's %s group could not be set (%s)", name, "/".join(hierarchy.controllers), error)
        if not groups:
            self.log.warning("no cgroup here: %s's server is limited by rlimits, nice and the watchdog alone", name)
        return guarded(super().make_preexec_fn(name), person_groups.joiner(groups))
