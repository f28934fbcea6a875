"""One memory limit for all the processes of one submission's kernel together.

An rlimit (RLIMIT_AS) holds per process: a notebook that starts five processes of 1.5 GB each gets 7.5 GB past a
4 GB limit. A MemoryLimit holds for the whole group instead:

- cgroup v2: a group with memory.max (and memory.swap.max 0, so swap does not dodge it); the kernel OOM-kills
  inside the group when it is full, and memory.events counts the kills;
- cgroup v1: a group with memory.limit_in_bytes (and memory.memsw.limit_in_bytes equal to it where swap is
  accounted), OOM killing on (oom_kill_disable 0: a full group is killed in, never paused), use_hierarchy 1;
- watchdog, where no writable memory cgroup hierarchy exists (not root, read-only, macOS-like containers) or
  PERFAUDIT_MEMORY_MECHANISM=watchdog asks for it: a thread that every 50 ms sums the resident memory of the
  process tree rooted at the watched pid (found through the ppid links in /proc/*/stat) and the memfds its
  processes hold open (memory no resident set shows), and SIGKILLs the whole tree when the sum passes the limit.
  Coarse (memory can grow for up to 50 ms past the limit, shared pages count once per process, SysV shared memory
  and the sandbox's folders in memory, each capped on its own, are not counted), but the same rule without
  privileges.

Groups are made as <the grader's own cgroup>/perfaudit/<name>, or <hierarchy root>/perfaudit/<name> where the
grader's own cgroup cannot hold children (cgroup v2 forbids processes and controlled children side by side), so
limits on the grader's own group still hold over what it starts. A command joins its group before it execs
(command_prefix), so every process it starts is in the group from its first instruction on.

Every write goes to a file inside the cgroup hierarchy found in /proc/self/mountinfo, opened without following
symlinks; the watchdog only reads /proc and only signals the processes of the tree it watches.

Whether a process of the group was killed from outside the submission is read from the machine's own records,
never guessed from a death: the group's counters (an OOM kill in the group while the group never hit its own
limit: a parent group's limit or the machine's memory chose it) and the kernel log's OOM-kill lines naming the
group or a process of the watched tree (killed_from_outside). A process that exits or kills itself leaves neither.
"""

import functools
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from perfaudit.autograde.isolation import cgroupfs
from perfaudit.autograde.isolation.oomlog import kernel_oom_kills, monotonic_us
from perfaudit.autograde.isolation.proctree import (memfd_bytes, process_table, rss_bytes, signal_if_same, stat,
                                                   tree)
from perfaudit.autograde.isolation.proctree import read_file as _read

MECHANISM_ENV = "PERFAUDIT_MEMORY_MECHANISM"  # "watchdog": use the fallback even where cgroups work
CGROUP_V2, CGROUP_V1, WATCHDOG = "cgroup v2", "cgroup v1", "watchdog"
PARENT = "perfaudit"  # the group that holds every submission's group
WATCH_INTERVAL_S = 0.05
CLOSE_WAIT_S = 5.0  # how long close() waits for a group or tree to empty before giving up (it never raises)
_MB = 2**20


# ---------------------------------------------------------------------------------------------- file access

def _write(path: str, text: str) -> None:
    """One write(2), as cgroup files want it; errors (EBUSY, EINVAL, EACCES) surface here, not at a later flush."""
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _keyed(text: str) -> dict[str, int]:
    """'key N' lines (memory.events, memory.oom_control) as a dict."""
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            values[parts[0]] = int(parts[1])
    return values


def _read_int(path: str) -> int | None:
    try:
        return int(_read(path).strip())
    except (OSError, ValueError):
        return None


def _sanitize(name: str) -> str:
    """[A-Za-z0-9_.-] only, no leading dot (so never '.' or '..'), at most 64 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(name)).lstrip(".")[:64] or "submission"


# ------------------------------------------------------------------------------------------------- cgroups

@dataclass(frozen=True)
class _Hierarchy:
    version: int  # 1 or 2
    mount: str  # where the hierarchy holding the memory controller is mounted
    parents: tuple[str, ...]  # where a perfaudit/ group may go, best first


def _hierarchy() -> _Hierarchy | None:
    """The mounted cgroup hierarchy that has the memory controller, and this process's group in it."""
    groups, v1 = cgroupfs.own_groups(), None
    for mount in cgroupfs.mounted():
        if "memory" not in mount.controllers:
            continue
        if mount.version == 2:  # the memory controller lives in one hierarchy only: this is it
            own = cgroupfs.own_dir(mount, groups.get(""))
            return _Hierarchy(2, mount.point, tuple(dict.fromkeys(p for p in (own, mount.point) if p)))
        if v1 is None or mount.root == "/":
            own = cgroupfs.own_dir(mount, groups.get("memory"))
            v1 = _Hierarchy(1, mount.point, tuple(dict.fromkeys(p for p in (own, mount.point) if p)))
    return v1


def _enable_memory(group: str) -> None:
    """cgroup v2: children of group get memory.* files only once memory is in its cgroup.subtree_control."""
    if "memory" not in _read(os.path.join(group, "cgroup.subtree_control")).split():
        _write(os.path.join(group, "cgroup.subtree_control"), "+memory")


def _configure(hierarchy: _Hierarchy, group: str, limit_bytes: int) -> None:
    """The limit on a group nothing runs in yet; OSError where the group cannot hold it."""
    def path(name):
        return os.path.join(group, name)

    if hierarchy.version == 2:
        _write(path("memory.max"), str(limit_bytes))
        if os.path.exists(path("memory.swap.max")):
            _write(path("memory.swap.max"), "0")  # memory.max does not count swap: none, or swap dodges the limit
        return
    if _read(path("memory.use_hierarchy")).strip() != "1":  # always 1 since Linux 5.13; settable while childless
        _write(path("memory.use_hierarchy"), "1")
    _write(path("memory.limit_in_bytes"), str(limit_bytes))
    if os.path.exists(path("memory.memsw.limit_in_bytes")):  # memory + swap: the same limit, swap no way out
        _write(path("memory.memsw.limit_in_bytes"), str(limit_bytes))
    if _keyed(_read(path("memory.oom_control"))).get("oom_kill_disable", 0) != 0:  # inherited from the parent
        _write(path("memory.oom_control"), "0")  # a full group would pause its processes forever instead
        if _keyed(_read(path("memory.oom_control"))).get("oom_kill_disable", 0) != 0:
            raise OSError(f"{group}: memory.oom_control keeps oom_kill_disable 1")


def _make_group(hierarchy: _Hierarchy, name: str, limit_bytes: int) -> str:
    """A new, limited group <parent>/perfaudit/<name>[.n] under the first parent that takes one; its path."""
    error: OSError = OSError(f"no place for a memory group in {hierarchy.mount}")
    for parent in hierarchy.parents:
        for _ in range(5):  # another MemoryLimit may remove an empty perfaudit/ between our mkdirs: again
            try:
                if hierarchy.version == 2:
                    # EBUSY where the grader's own group holds processes (only the root may): the next parent
                    _enable_memory(parent)
                base = os.path.join(parent, PARENT)
                try:
                    os.mkdir(base, 0o755)
                except FileExistsError:
                    pass
                if hierarchy.version == 2:
                    _enable_memory(base)
                group = _mkdir_unique(base, name)
            except FileNotFoundError as e:
                error = e
                continue
            except OSError as e:
                error = e
                break
            try:
                _configure(hierarchy, group, limit_bytes)
            except OSError as e:
                _remove_group(group)
                error = e
                break
            return group
    raise error


def _mkdir_unique(base: str, name: str) -> str:
    for n in range(1000):
        group = os.path.join(base, name if n == 0 else f"{name}.{n}")
        try:
            os.mkdir(group, 0o755)
            return group
        except FileExistsError:
            continue
    raise FileExistsError(f"{base}/{name}: 1000 groups of that name exist")


def _group_pids(group: str) -> list[int]:
    try:
        return [int(p) for p in _read(os.path.join(group, "cgroup.procs")).split()]
    except (OSError, ValueError):
        return []


def _remove_group(group: str) -> None:
    """SIGKILL everything in group until it is empty, remove it, and remove perfaudit/ above it once empty.

    An empty perfaudit/ left behind would keep whoever manages the grader's own group (systemd, a container
    runtime) from removing that group. Gives up silently after CLOSE_WAIT_S.
    """
    deadline = time.monotonic() + CLOSE_WAIT_S
    kill_file = os.path.join(group, "cgroup.kill")  # cgroup v2 since Linux 5.14: every process, forks included
    if os.path.exists(kill_file):
        try:
            _write(kill_file, "1")
        except OSError:
            pass
    while True:
        for pid in _group_pids(group):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.rmdir(group)
            break
        except FileNotFoundError:
            break
        except OSError:  # EBUSY: processes still exiting
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
    try:
        os.rmdir(os.path.dirname(group))  # perfaudit/, unless other submissions' groups are in it
    except OSError:
        pass


@functools.cache
def _probe() -> tuple[str, str]:
    """(mechanism, why): a trial group made, a process moved into it by command_prefix, the group removed."""
    if sys.platform != "linux":
        return WATCHDOG, f"cgroups need Linux (this is {sys.platform})"
    hierarchy = _hierarchy()
    if hierarchy is None:
        return WATCHDOG, "no cgroup hierarchy with the memory controller is mounted"
    try:
        group = _make_group(hierarchy, f"probe.{os.getpid()}", 256 * _MB)
    except OSError as e:
        return WATCHDOG, f"cannot make a memory cgroup ({e})"
    try:
        run = subprocess.run([*_join_prefix(group), sys.executable, "-c", ""], capture_output=True, text=True,
                             timeout=30)
        if run.returncode != 0:
            return WATCHDOG, f"cannot move a process into a memory cgroup ({run.stderr.strip() or run.returncode})"
    except (OSError, subprocess.SubprocessError) as e:
        return WATCHDOG, f"cannot move a process into a memory cgroup ({e})"
    finally:
        _remove_group(group)
    return (CGROUP_V2 if hierarchy.version == 2 else CGROUP_V1), f"groups under {os.path.dirname(group)}"


def _join_prefix(group: str) -> list[str]:
    """sh writes its own pid into the group, then execs the command: nothing of it runs outside the group.

    If the write fails, `&&` stops there: the command never starts at all (sh exits non-zero).
    """
    procs = shlex.quote(os.path.join(group, "cgroup.procs"))
    return ["/bin/sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh"]


def mechanism() -> str:
    """Which mechanism a MemoryLimit made now would use here: "cgroup v2", "cgroup v1" or "watchdog".

    The probe (a trial group, a trial process moved into it) runs once per process; the environment variable is
    read every time, so a test can force the watchdog with PERFAUDIT_MEMORY_MECHANISM=watchdog.
    """
    forced = os.environ.get(MECHANISM_ENV, "").strip().lower()
    if forced == WATCHDOG:
        return WATCHDOG
    if forced not in ("", "auto"):
        raise ValueError(f"{MECHANISM_ENV}={forced!r}: use 'watchdog', 'auto' or leave it unset")
    return _probe()[0]


# ----------------------------------------------------------------------------------------------- the limit

class MemoryLimit:
    """A memory limit (MB) for all processes of one submission together; see the module's docstring.

    With a cgroup: start the command as command_prefix() + argv. With the watchdog: start argv, then watch(pid).
    Doing both always works. close() (or leaving a `with` block) kills what is left and removes the group.
    """

    mechanism: str  # "cgroup v2", "cgroup v1" or "watchdog": for the grading summary
    path: str | None  # the group's folder (cgroups), None for the watchdog

    def __init__(self, limit_mb: int, name: str) -> None:
        if int(limit_mb) <= 0:
            raise ValueError(f"limit_mb must be positive, not {limit_mb!r}")
        self.limit_mb = int(limit_mb)
        self.name = _sanitize(name)
        self._limit = self.limit_mb * _MB
        self._closed = False
        self._final: tuple[bool, float | None, str | None] | None = None  # (exceeded, usage, killed from
        # outside) read just before removal
        self._started_us = monotonic_us() - 1_000_000  # the kernel log's OOM kills from then on (1 s of margin)
        self._version = 0
        self.path = None
        if mechanism() != WATCHDOG:
            hierarchy = _hierarchy()
            try:
                if hierarchy is None:
                    raise OSError("the cgroup hierarchy is gone")
                self.path = _make_group(hierarchy, self.name, self._limit)
                self._version = hierarchy.version
            except OSError:
                self.path = None  # this group failed where the probe worked: the watchdog still holds the limit
        self.mechanism = {1: CGROUP_V1, 2: CGROUP_V2}.get(self._version, WATCHDOG)
        # watchdog state
        self._lock = threading.Lock()
        self._seen: dict[int, int] = {}  # pid -> start time of every live process seen in the watched tree
        self._ever: set[int] = set()  # every pid ever seen in the tree: the kernel log names a killed one by it
        self._peak: int | None = None
        self._killed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"MemoryLimit({self.limit_mb} MB, {self.name!r}, {self.mechanism}{where})"

    def __enter__(self) -> "MemoryLimit":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def command_prefix(self) -> list[str]:
        """argv prefix that moves the command into the group before it execs, so every child is in it from the
        start (a process moved in later would leave what it already forked outside). [] for the watchdog."""
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")
        return _join_prefix(self.path) if self.path else []

    def watch(self, pid: int) -> None:
        """Watchdog: start watching the process tree rooted at pid. With a cgroup: nothing to do.

        Call it right after starting the process: a child that its parent leaves before the first look (50 ms)
        is not in the tree. In a bubblewrap sandbox (its own pid namespace) orphans stay in the tree anyway.
        """
        if self.path is not None:
            return
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")
        ancestor, ancestors = os.getpid(), set()
        while ancestor > 0 and ancestor not in ancestors:  # the tree would hold the grader itself
            ancestors.add(ancestor)
            ancestor = (stat(ancestor) or (0, 0, ""))[0]
        if pid in ancestors:
            raise ValueError(f"pid {pid} is the grader or one of its ancestors: the watchdog would kill it")
        info = stat(pid)
        if info is None:
            return  # already gone: nothing to limit
        with self._lock:
            self._seen[pid] = info[1]
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"memory-watchdog-{self.name}", daemon=True)
            self._thread.start()

    def exceeded(self) -> bool:
        """True once the group hit its limit and something in it was killed for that (by the kernel's OOM killer
        in the group, or by the watchdog)."""
        if self._final is not None:
            return self._final[0]
        if self.path is None:
            return self._killed
        try:
            if self._version == 2:
                events = _keyed(_read(os.path.join(self.path, "memory.events")))
                return events.get("oom_kill", 0) > 0 or events.get("oom_group_kill", 0) > 0
            oom = _keyed(_read(os.path.join(self.path, "memory.oom_control")))
            if "oom_kill" in oom:  # Linux 4.13 and later
                return oom["oom_kill"] > 0
            # Older kernels count only hitting the limit, which reclaim can also settle without a kill.
            counts = [_read_int(os.path.join(self.path, f)) or 0 for f in ("memory.failcnt", "memory.memsw.failcnt")]
            return max(counts) > 0
        except OSError:
            return False

    def killed_from_outside(self) -> str | None:
        """Why a process of the group was killed by something outside the submission, as the machine recorded it,
        or None. Outside: an OOM kill while the group never hit its own limit (its counters), or a kernel log line
        of an OOM kill of the group's process chosen for the machine's memory or for another group's limit."""
        if self._final is not None:
            return self._final[2]
        own_limit = False  # the kernel log names a kill for the group's own limit: the submission's doing
        for fields in kernel_oom_kills(self._started_us):
            if not self._names_mine(fields):
                continue
            if "global_oom" in fields or fields.get("oom_memcg", "") != fields.get("task_memcg", ""):
                why = "the machine's memory" if "global_oom" in fields else f"the group {fields.get('oom_memcg')}"
                return f"the kernel log: the OOM killer killed process {fields.get('pid', '?')} for {why}"
            own_limit = True
        counts = self._oom_counts()
        if not own_limit and counts is not None and counts[0] and not counts[1]:
            return (f"the machine's OOM killer killed {counts[0]} of its processes while they stayed within their "
                    f"{self.limit_mb} MB (the group's counters)")
        return None

    def _names_mine(self, fields: dict[str, str]) -> bool:
        """Whether a kernel log OOM kill is of this group's processes (by the group's path, or a watched pid)."""
        task_memcg = fields.get("task_memcg", "")
        if self.path is not None:
            return task_memcg.startswith("/") and task_memcg != "/" and self.path.endswith(task_memcg)
        pid = fields.get("pid", "")
        return pid.isdigit() and int(pid) in self._ever

    def _oom_counts(self) -> tuple[int, int] | None:
        """(OOM kills of the group's processes, times the group hit its own limit) from its counters, or None
        (the watchdog, a kernel without the counts, a group gone)."""
        if self.path is None:
            return None
        try:
            if self._version == 2:
                events = _keyed(_read(os.path.join(self.path, "memory.events")))
                return events.get("oom_kill", 0) + events.get("oom_group_kill", 0), events.get("oom", 0)
            kills = _keyed(_read(os.path.join(self.path, "memory.oom_control"))).get("oom_kill")
            if kills is None:  # before Linux 4.13
                return None
            hits = [_read_int(os.path.join(self.path, f)) or 0 for f in ("memory.failcnt", "memory.memsw.failcnt")]
            # Some kernels (6.x with v1) leave failcnt at 0 when the group hits its limit: its peak tells then.
            peak = _read_int(os.path.join(self.path, "memory.max_usage_in_bytes")) or 0
            return kills, max(hits) + (peak >= self._limit)
        except OSError:
            return None

    def usage_mb(self) -> float | None:
        """The group's peak memory in MB where the mechanism records one (v2 memory.peak, Linux 5.19 and later;
        v1 memory.max_usage_in_bytes), else the watchdog's largest observed sum; None where neither exists."""
        if self._final is not None:
            return self._final[1]
        if self.path is None:
            return None if self._peak is None else self._peak / _MB
        name = "memory.peak" if self._version == 2 else "memory.max_usage_in_bytes"
        peak = _read_int(os.path.join(self.path, name))
        return None if peak is None else peak / _MB

    def close(self) -> None:
        """SIGKILL every process still in the group (or tree), wait briefly until it is empty, remove the group.
        Idempotent; never raises (it runs in cleanup paths where an error would hide the real one)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._final = (self.exceeded(), self.usage_mb(), self.killed_from_outside())
            if self.path is not None:
                _remove_group(self.path)
                return
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=CLOSE_WAIT_S)
            deadline = time.monotonic() + CLOSE_WAIT_S
            with self._lock:
                while self._kill_tree() and time.monotonic() < deadline:
                    time.sleep(0.01)
        except Exception:  # noqa: BLE001 - close() must not raise
            pass

    # -- watchdog internals

    def _run(self) -> None:
        while True:
            try:
                with self._lock:
                    self._check()
            except Exception:  # noqa: BLE001 - a /proc race must not end the watch; the next look retries
                pass
            if self._stop.wait(WATCH_INTERVAL_S):
                return

    def _check(self) -> None:
        """One look: the tree's resident memory summed; over the limit, the whole tree killed."""
        self._seen = tree(process_table(), self._seen)
        self._ever.update(self._seen)
        counted: set[tuple[int, int]] = set()  # memfds: each counted once, whoever holds it
        total = sum(rss_bytes(pid) + memfd_bytes(pid, counted) for pid in self._seen)
        self._peak = total if self._peak is None else max(self._peak, total)
        if total > self._limit:
            self._killed = True
            self._kill_tree()

    def _kill_tree(self) -> bool:
        """SIGSTOP the tree until no new process appears (a stopped process cannot fork, and a child of a stopped
        parent is not re-parented out of sight), then SIGKILL all of it. True if anything was still alive."""
        stopped: dict[int, int] = {}
        for _ in range(50):
            self._seen = tree(process_table(), {**self._seen, **stopped})
            new = {pid: start for pid, start in self._seen.items() if pid not in stopped}
            if not new:
                break
            for pid, start in new.items():
                signal_if_same(pid, start, signal.SIGSTOP)
            stopped.update(new)
        for pid, start in stopped.items():
            signal_if_same(pid, start, signal.SIGKILL)
        return bool(stopped)
