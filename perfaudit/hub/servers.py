"""Which of a student's processes is their server: the one the hub itself started, never one named like it; and
how every process of an account is ended (make hub's start, the accounts' removal).

The hub (JupyterHub, as root) starts each person's server as a child of its own process: LocalProcessSpawner forks,
takes the account's uid and execs c.Spawner.cmd, whose prlimit and nice exec the server in turn
(perfaudit/hub/server_limits.py), so the server's parent is the hub. A student's own process has as parent whatever
forked it (their server, a kernel, a terminal), or, orphaned, init or a subreaper: never the hub. Its command line
is the student's to write (exec -a, prctl, setproctitle), so it decides nothing. The hub's process is known by its
pid and its start time together (psutil compares both), so a pid used again after the hub stops protects nobody.
"""

import grp
import os
import pwd
import signal
from collections.abc import Iterable, Iterator

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


def members(group: str) -> list[str]:
    """The accounts of a unix group (a course's students' or instructors'), [] where there is no such group."""
    try:
        return sorted(grp.getgrnam(group).gr_mem)
    except KeyError:
        return []


def stop(process: psutil.Process) -> str | None:
    """Kill process; its command line (80 characters, for a log line and its student's note), or None where it was
    gone already."""
    try:
        process.kill()
    except psutil.NoSuchProcess:
        return None
    return " ".join(process.info["cmdline"] or [])[:80]


def each_account(accounts: Iterable[str]) -> Iterator[tuple[str, int, list[psutil.Process]]]:
    """(account, uid, its living processes: processes_of) for each of accounts that exists."""
    for account in accounts:
        try:
            uid = pwd.getpwnam(account).pw_uid
        except KeyError:
            continue
        yield account, uid, processes_of(uid)


def end_processes(uid: int, rounds: int = 20) -> list[psutil.Process]:
    """End every process of the account uid; returns those still alive after `rounds` tries (zombies are not).

    Each round asks the kernel, as that account, to kill every process it may signal (kill(-1)): the kernel walks the
    whole process table itself, so a process that forks and exits as fast as it can (a held-out attacker's loop,
    which made a kill by process id fail on a process gone meanwhile) is caught, and its child in a later round."""
    try:  # looked up before the fork: the child makes system calls only
        gid = pwd.getpwuid(uid).pw_gid
    except KeyError:  # an account removed already: the signal's right goes by the uid alone
        gid = uid
    for _ in range(rounds):
        running = processes_of(uid)
        if not running:
            return []
        child = os.fork()  # no program run as the account (root's own Python may be one it cannot run)
        if child == 0:
            try:  # this process becomes the account, and kill(-1) signals every process but its sender
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        psutil.wait_procs(running, timeout=1)
    return processes_of(uid)
