"""What one student's JupyterLab and kernels may take of the machine, where systemd does not run them.

The Littlest JupyterHub gives each user a memory and CPU cap with jupyterhub-systemdspawner (a systemd slice per
user). Here the hub's LocalProcessSpawner starts each person's server, and on a machine without systemd (a container,
CI) or a writable cgroup, rlimits are what the kernel enforces for an ordinary account: each server starts under
`prlimit` and `nice` (util-linux, coreutils), and everything it starts (kernels, terminals) inherits the limits.
The account cannot raise them again (only root raises a hard limit or lowers a nice value).

    memory      RLIMIT_AS of each process: an allocation past it fails in that process alone (MemoryError in a
                kernel), however much the machine has free; PERFAUDIT_HUB_MEMORY, default 2G (each student's
                total too: perfaudit/hub/watchdog.py)
    processes   RLIMIT_NPROC of the account (threads count): no fork bomb; PERFAUDIT_HUB_PROCESSES, default 512
    CPU         nice 10: students' kernels yield to the hub, Formgrader and the grading service; where root may
                make cgroups, equal shares per person and an optional cap (perfaudit/hub/person_groups.py)

A student's total (a systemd slice's MemoryMax) is kept under the same memory limit by the hub's watchdog service
(perfaudit/hub/watchdog.py), which stops their largest process past it; nice shares CPU between processes, not
students (person_groups.py's CPU groups share it between students). Where systemd runs, install
jupyterhub-systemdspawner and set c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner" with
c.SystemdSpawner.mem_limit and cpu_limit in perfaudit/hub/jupyterhub_config.py, as The Littlest JupyterHub does.
"""

import re
import shutil
from dataclasses import dataclass

NICE = 10
UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_bytes(text: str) -> int:
    """'2G', '512M', '1073741824' (binary units, as JupyterHub's mem_limit reads them) as a number of bytes."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.I)
    if not found:
        raise ValueError(f"not a size: {text!r} (write it as 2G, 512M or a number of bytes)")
    return int(float(found[1]) * UNITS[found[2].upper()])


def parse_cpus(text: str) -> float | None:
    """'1', '0.5' (CPUs, as JupyterHub's cpu_limit reads them); '' or 'none': no cap."""
    if text.strip().lower() in ("", "none"):
        return None
    try:
        cpus = float(text)
    except ValueError:
        cpus = 0.0
    if not 0.01 <= cpus <= 4096:
        raise ValueError(f"not a number of CPUs: {text!r} (write it as 1, 0.5, or none)")
    return cpus


@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    processes: int
    exchange_bytes: int = 2**30  # each student's share of the exchange (perfaudit/hub/exchange_share.py)
    cpus: float | None = None  # each person's CPU cap where cgroups are (perfaudit/hub/person_groups.py)
    nice: int = NICE

    def command(self, argv: list[str]) -> list[str]:
        """argv started under the limits: what c.Spawner.cmd runs for each person's server."""
        prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
        nice = shutil.which("nice") or "/usr/bin/nice"
        return [prlimit, f"--as={self.memory_bytes}", f"--nproc={self.processes}", "--",
                nice, "-n", str(self.nice), *argv]
