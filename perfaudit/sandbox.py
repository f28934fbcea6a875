"""STUB, replaced at merge by the bubblewrap sandbox (issue 5). It runs commands UNSANDBOXED.

Only the interface is here, so that perfaudit/confirm.py runs its harness through it: the caller runs the
returned argv with cwd=workdir and env=env itself.
"""

from dataclasses import dataclass


class SandboxUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 600
    memory_mb: int = 4096
    processes: int = 256
    file_mb: int = 256


def command(argv, *, workdir, env=None, limits=None):
    return list(argv)


def status():
    return "UNSANDBOXED (stub)"
