"""Which of a student's processes is their server: the one the hub itself started, never one named like it.

The hub (JupyterHub, as root) starts each person's server as a child of its own process: LocalProcessSpawner forks,
takes the account's uid and execs c.Spawner.cmd, whose prlimit and nice exec the server in turn
(perfaudit/hub/server_limits.py), so the server's parent is the hub. A student's own process has as parent whatever
forked it (their server, a kernel, a terminal), or, orphaned, init or a subreaper: never the hub. Its command line
is the student's to write (exec -a, prctl, setproctitle), so it decides nothing. The hub's process is known by its
pid and its start time together (psutil compares both), so a pid used again after the hub stops protects nobody.
"""

import psutil


class Hub:
    """The JupyterHub process, as it was when the limits service started."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)

    def started(self, process: psutil.Process) -> bool:
        """Whether the hub itself started process: a person's server (or one of the hub's services)."""
        try:
            return process.ppid() == self.process.pid and process.parent() == self.process
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False


def processes_of(uid: int) -> list[psutil.Process]:
    """Every living process whose real uid is uid, with its command line and memory read once. Not a zombie: it has
    ended, holds nothing and cannot be stopped (its parent has not yet read its exit)."""
    return [p for p in psutil.process_iter(["uids", "cmdline", "memory_info", "status"])
            if p.info["uids"] and p.info["uids"].real == uid and p.info["memory_info"] is not None
            and p.info["status"] != psutil.STATUS_ZOMBIE]
