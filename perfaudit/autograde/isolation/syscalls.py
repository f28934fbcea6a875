"""The system calls student code may not make, as a seccomp filter bubblewrap installs (`--seccomp`): those of the
kernel's keyrings (add_key, request_key, keyctl), which no namespace separates. Without the filter a kernel
possessed the grader's session keyring where the grader had one (a service's, a PAM login's), and keys a kernel
added to its uid's user keyring outlived it, found by a later kernel given the same uid: a channel between
students (a fresh attack found both). Container runtimes refuse the same calls by default.

And shmget, which makes a System V shared-memory segment: one written and detached is held by no process, so where
the grader is no root and its memory limit is the watchdog's (perfaudit/autograde/isolation/memory.py, which adds
up resident sets), a held-out attacker's notebook held 5.3 GB of them against a 4 GB limit, unseen until the
kernel's namespace went. Nothing graded needs it (NumPy, JAX, ZeroMQ and multiprocessing share memory through
/dev/shm, which the limit counts).

The hub's servers start under a filter of their own from here (`for_hub_servers()`,
perfaudit/hub/namespace_guard.py): a student may not make a user namespace, in which a tmpfs or SysV segments would
hold memory the watchdog cannot see, nor reach into a process (their own server's listening socket).

Classic BPF programs, built here for the machine's own architecture: calls of another architecture (32-bit ones on a
64-bit machine, x32's) are refused whole. Where the architecture is not known here, there is no filter and each
builder says so by returning None.
"""

import platform
import struct

# linux/audit.h, linux/filter.h, linux/seccomp.h
_ARCHES = {  # machine: (AUDIT_ARCH_..., numbers of add_key, request_key, keyctl, shmget, whether x32's bit exists)
    "x86_64": (0xC000003E, (248, 249, 250, 29), True),
    "aarch64": (0xC00000B7, (217, 218, 219, 194), False),
}
_CLONES = {"x86_64": (272, 56, 435), "aarch64": (97, 220, 435)}  # machine: unshare, clone, clone3
_REACHING = {"x86_64": (101, 310, 311, 438), "aarch64": (117, 270, 271, 438)}  # ptrace, process_vm_*, pidfd_getfd
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (_ARG0: the low half of args[0], little-endian)
_X32_BIT = 0x40000000
_CLONE_NEWUSER = 0x10000000
_ALLOW = 0x7FFF0000
_REFUSE = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM: "Operation not permitted"
_NO_SUCH_CALL = 0x00050000 | 38  # SECCOMP_RET_ERRNO | ENOSYS


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter as bubblewrap reads it from a file descriptor (struct sock_filter entries), or None where this
    architecture is not known here."""
    known = _ARCHES.get(machine or platform.machine())
    if known is None:
        return None
    arch, refused, has_x32 = known
    checks = [_op(_JGE_K, _X32_BIT)] if has_x32 else []
    checks += [_op(_JEQ_K, number) for number in refused]
    ops = [_op(_LD_W_ABS, _ARCH), _op(_JEQ_K, arch, jt=1), _op(_RET_K, _REFUSE), _op(_LD_W_ABS, _NR)]
    # each check jumps, when it matches, over the checks after it and the ALLOW to the REFUSE at the end
    ops += [_op(code, k, jt=len(checks) - i) for i, (code, _, _, k) in
            enumerate(struct.unpack("=HBBI", check) for check in checks)]
    return b"".join([*ops, _op(_RET_K, _ALLOW), _op(_RET_K, _REFUSE)])


def for_hub_servers(machine: str | None = None) -> bytes | None:
    """The hub servers' filter. unshare and clone asking for a new user namespace (CLONE_NEWUSER) refused with EPERM;
    clone3, whose flags sit in memory a classic filter cannot read, answers ENOSYS, and the C library then makes the
    thread or process with clone (container runtimes answer it so too). And the calls that reach into another
    process, even one's own (ptrace, process_vm_readv/writev, pidfd_getfd): with pidfd_getfd a held-out attacker took
    the listening socket of their own server, stopped it (the hub saw it alive and kept its route) and answered their
    server's address with pages of their own. Every other call allowed. None where this architecture is not known."""
    machine = machine or platform.machine()
    known, numbers, reaching = _ARCHES.get(machine), _CLONES.get(machine), _REACHING.get(machine)
    if known is None or numbers is None or reaching is None:
        return None
    (arch, _, has_x32), (unshare, clone, clone3) = known, numbers
    # (code, k, jump when true): a number jumps that many ops ahead, a name to the last two ops
    steps: list[tuple[int, int, int | str]] = [
        (_LD_W_ABS, _ARCH, 0), (_JEQ_K, arch, 1), (_RET_K, _REFUSE, 0), (_LD_W_ABS, _NR, 0),
        *([(_JGE_K, _X32_BIT, "refuse")] if has_x32 else []),
        (_JEQ_K, clone3, "no such call"), *[(_JEQ_K, number, "refuse") for number in reaching],
        (_JEQ_K, unshare, 2), (_JEQ_K, clone, 1), (_RET_K, _ALLOW, 0),  # then the flags: args[0]
        (_LD_W_ABS, _ARG0, 0), (_JSET_K, _CLONE_NEWUSER, "refuse"), (_RET_K, _ALLOW, 0)]
    ends = {"refuse": len(steps), "no such call": len(steps) + 1}
    ops = [_op(code, k, jt=ends[jump] - i - 1 if isinstance(jump, str) else jump)
           for i, (code, k, jump) in enumerate(steps)]
    return b"".join([*ops, _op(_RET_K, _REFUSE), _op(_RET_K, _NO_SUCH_CALL)])
