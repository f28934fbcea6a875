"""The limits on one submission's student code: one Configurable, set in nbgrader_config.py alone.

Plain `nbgrader autograde` and `python -m perfaudit.grade` read the same values (the batch command only passes
its command-line overrides as configuration). Memory counts every process of the submission together (a cgroup,
or a watchdog where there is none: perfaudit/autograde/isolation/memory.py); the scratch folder and /tmp are size-capped
memory file systems that vanish with the sandbox; the kernel's raw output (file descriptors 1 and 2) is kept up
to `raw_output_bytes`, escaped, for the instructor only.
"""

import resource

from traitlets import Integer
from traitlets.config import Configurable


def _capped(value, which, unit):
    """value (in unit) lowered to this process's hard limit, so a sandbox never raises a hard limit."""
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard // unit)


class SandboxLimits(Configurable):
    cpu_s = Integer(1800, help="CPU seconds per process (all threads): a backstop behind the notebook's own "
                               "time limit (TrustedExecute.notebook_timeout).").tag(config=True)
    memory_mb = Integer(4096, help="Memory of all of one submission's processes together, in MB.").tag(config=True)
    processes = Integer(512, help="Processes and threads of one submission (JAX starts a thread pool per core)."
                        ).tag(config=True)
    file_mb = Integer(256, help="Largest file a process may write, in MB.").tag(config=True)
    open_files = Integer(1024, help="Files, sockets and pipes one process may hold open (Linux's usual soft limit). "
                                    "Times `processes`, it stays a small part of the machine's file table "
                                    "(fs.file-max), which a submission could otherwise fill for every process on "
                                    "the machine.").tag(config=True)
    scratch_mb = Integer(512, help="Size of the submission's scratch folder (its working folder, in memory), "
                                   "and separately of its /tmp, in MB.").tag(config=True)
    raw_output_bytes = Integer(64 * 1024, help="Bytes of the kernel's raw stdout and stderr kept for the instructor "
                                               "(half each); the rest is counted and dropped.").tag(config=True)

    def rlimits(self) -> list[tuple[int, int]]:
        """[(resource, soft = hard limit)] for every process of the sandbox."""
        return [
            (resource.RLIMIT_CPU, _capped(self.cpu_s, resource.RLIMIT_CPU, 1)),
            # Each process also keeps under the whole submission's limit on its own (a fast, clear MemoryError).
            (resource.RLIMIT_AS, _capped(self.memory_mb, resource.RLIMIT_AS, 2**20) * 2**20),
            (resource.RLIMIT_NPROC, _capped(self.processes, resource.RLIMIT_NPROC, 1)),
            (resource.RLIMIT_FSIZE, _capped(self.file_mb, resource.RLIMIT_FSIZE, 2**20) * 2**20),
            (resource.RLIMIT_NOFILE, _capped(self.open_files, resource.RLIMIT_NOFILE, 1)),
        ]

    def describe(self) -> str:
        return (f"{self.memory_mb} MB memory for all processes together, {self.cpu_s} s CPU, {self.processes} "
                f"processes, {self.open_files} open files each, {self.file_mb} MB files, {self.scratch_mb} MB scratch")
