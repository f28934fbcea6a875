"""The system calls student code may not make, as a seccomp filter bubblewrap installs (`--seccomp`): those of the
kernel's keyrings (add_key, request_key, keyctl), which no namespace separates. Without the filter a kernel
possessed the grader's session keyring where the grader had one (a service's, a PAM login's), and keys a kernel
added to its uid's user keyring outlived it, found by a later kernel given the same uid: a channel between
students (a fresh attack found both). Container runtimes refuse the same calls by default.

A classic BPF program, built here for the machine's own architecture: calls of another architecture (32-bit
ones on a 64-bit machine, x32's) are refused whole. Where the architecture is not known here, there is no filter
and `program()` says so by returning None.
"""

import platform
import struct

# linux/audit.h, linux/filter.h, linux/seccomp.h
_ARCHES = {  # machine: (AUDIT_ARCH_..., numbers of add_key, request_key, keyctl, whether x32's bit exists)
    "x86_64": (0xC000003E, (248, 249, 250), True),
    "aarch64": (0xC00000B7, (217, 218, 219), False),
}
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data
_X32_BIT = 0x40000000
_ALLOW = 0x7FFF0000
_REFUSE = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM: "Operation not permitted"


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
