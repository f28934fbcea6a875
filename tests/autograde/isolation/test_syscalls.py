"""The seccomp filter (perfaudit/autograde/isolation/syscalls.py): read by a small interpreter of classic BPF here,
and installed for real by bubblewrap in a graded kernel."""

import struct

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from perfaudit.autograde.isolation import sandbox, syscalls
from perfaudit.autograde.plugins.execute import TrustedExecute

ALLOW, REFUSE = 0x7FFF0000, 0x00050001


def _run(program, arch, nr, flags=0):
    """What the filter returns for a call (classic BPF: load a word of seccomp_data, jump if equal / greater or
    equal / any bit set, return); flags: the low half of the call's first argument."""
    ops = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    data, pc, accumulator = {0: nr, 4: arch, 16: flags}, 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:
            accumulator = data[k]
        elif code in (0x15, 0x35, 0x45):
            matched = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[code]
            pc += jt if matched else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unknown op {code:#x}")
        pc += 1


@pytest.mark.parametrize("machine, arch, refused, other", [
    ("x86_64", 0xC000003E, (248, 249, 250, 29), (0, 1, 9, 30, 31, 59, 231, 247, 251, 435)),
    ("aarch64", 0xC00000B7, (217, 218, 219, 194), (0, 56, 63, 195, 196, 216, 220, 222)),
])
def test_the_keyring_calls_and_shmget_are_refused_and_every_other_call_allowed(machine, arch, refused, other):
    program = syscalls.program(machine)
    assert [_run(program, arch, nr) for nr in refused] == [REFUSE] * 4
    assert [_run(program, arch, nr) for nr in other] == [ALLOW] * len(other)
    assert _run(program, 0x40000003, 0) == REFUSE  # another architecture's calls (i386 on x86_64): none


def test_x32_calls_are_refused_on_x86_64():
    assert _run(syscalls.program("x86_64"), 0xC000003E, 0x40000000 | 250) == REFUSE
    assert _run(syscalls.program("x86_64"), 0xC000003E, 0x40000000) == REFUSE


def test_an_unknown_architecture_gets_no_filter():
    assert syscalls.program("riscv64") is None and syscalls.for_hub_servers("riscv64") is None


NEWUSER, NEWNS, NO_SUCH_CALL = 0x10000000, 0x00020000, 0x00050026


@pytest.mark.parametrize("machine, arch, unshare, clone, others", [
    ("x86_64", 0xC000003E, 272, 56, (0, 1, 57, 59, 231, 248, 308)),
    ("aarch64", 0xC00000B7, 97, 220, (0, 56, 63, 217, 221, 268)),
])
def test_a_new_user_namespace_is_refused_clone3_answers_no_such_call_and_the_rest_is_allowed(
        machine, arch, unshare, clone, others):
    """The hub servers' filter (perfaudit/hub/namespace_guard.py): CLONE_NEWUSER alone or with other flags refused in
    unshare and clone; clone and unshare without it allowed (a thread, a fork, a mount namespace that then fails for
    want of privilege); any other call allowed, with any first argument."""
    program = syscalls.for_hub_servers(machine)
    assert [_run(program, arch, nr, flags) for nr in (unshare, clone)
            for flags in (NEWUSER, NEWUSER | NEWNS | 0x11)] == [REFUSE] * 4
    assert [_run(program, arch, nr, flags) for nr in (unshare, clone) for flags in (0, NEWNS, 0x003D0F00)] == [
        ALLOW] * 6
    assert [_run(program, arch, nr, NEWUSER) for nr in others] == [ALLOW] * len(others)
    assert _run(program, arch, 435) == NO_SUCH_CALL  # clone3: the C library falls back to clone
    assert _run(program, 0x40000003, 0) == REFUSE  # another architecture's calls: none
    # ptrace, process_vm_readv, process_vm_writev, pidfd_getfd: no reaching into a process, one's own server included
    reaching = {"x86_64": (101, 310, 311, 438), "aarch64": (117, 270, 271, 438)}[machine]
    assert [_run(program, arch, nr) for nr in reaching] == [REFUSE] * 4


def test_x32_calls_are_refused_by_the_hub_s_filter_too():
    assert _run(syscalls.for_hub_servers("x86_64"), 0xC000003E, 0x40000000 | 272, NEWUSER) == REFUSE
    assert _run(syscalls.for_hub_servers("x86_64"), 0xC000003E, 0x40000000) == REFUSE


KEYRINGS = """
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
for name, call in (("keyctl", lambda: libc.syscall(keyctl, 0, -3, 0)),  # the session keyring's id
                   ("add_key", lambda: libc.syscall(add_key, b"user", b"k", b"v", 1, -4)),  # into the user keyring
                   ("shmget", lambda: libc.shmget(0, 1 << 30, 0o1600))):  # a 1 GiB segment, held by no process
    print(name, call(), os.strerror(ctypes.get_errno()))
"""


@pytest.mark.skipif(not sandbox.available()[0] or syscalls.program() is None, reason="no sandbox or filter here")
def test_a_graded_kernel_reaches_no_keyring_and_makes_no_system_v_segment(tmp_path):
    nb = new_notebook(cells=[new_code_cell(KEYRINGS)])
    nb, _ = TrustedExecute(timeout=60).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert "".join(o.get("text", "") for o in nb.cells[0].outputs) == (
        "keyctl -1 Operation not permitted\nadd_key -1 Operation not permitted\nshmget -1 Operation not permitted\n")
