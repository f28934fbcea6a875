"""The trust boundary of a grading sandbox, in one place: what student code may touch, and the only code of the
grader that acts on anything student code reached. A reviewer checks this file.

What the sandbox may write, all of it in memory and capped, none of it on the grader's disk:
- its scratch folder (sandbox.SCRATCH) and its /tmp, each capped at SandboxLimits.scratch_mb;
- its socket folder (sandbox.KERNEL_DIR), capped at SOCKETS_BYTES: writable until the kernel has bound its
  sockets, then sealed (nothing can be added, removed or renamed there any more).
What it may read: the system, the Python installation and venv, the perfaudit package with its answers masked, and
two things the grader wrote into a folder of its own that the sandbox never sees (HostFolder): the staged copy of
the submission and the connection file, each bound read-only.
Who it runs as: never the grader's account (sandbox.py): as root, an unprivileged uid of its own; as any other
account, a subordinate uid (/etc/subuid) in a user namespace of its own. It owns nothing of the grader's.

The grader reaches into the sandbox once per kernel, here (KernelSockets): it opens the socket folder through the
sandbox's root (/proc/<pid>/root) with no link followed, seals it through that descriptor, checks that it holds
the kernel's sockets and nothing else, and connects through the same descriptor (/proc/<grader>/fd/<n>/...): every
name it then follows was checked after the sandbox lost the right to change it. Nothing the grader opens, changes
or removes by name lies where the sandbox could write.
"""

import asyncio
import os
import select
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from perfaudit.autograde.errors import BoundaryCrossed
from perfaudit.autograde.isolation.proctree import process_table, stat as process_stat
from perfaudit.autograde.text import printable

SOCKETS_BYTES = 64 * 1024  # the socket folder's cap: sockets hold no data, so nothing of use fits there
SEALED_MODE = 0o755  # the socket folder once sealed: its owner (root, or the grader's account) alone may change it
BOUND_MODE = 0o777  # the kernel's sockets as it binds them (its umask is 000: sandbox.py)
POLL_S = 0.02
SHOWN = 5  # odd entries named in a refusal; the rest counted


class HostFolder:
    """The grader's own folder for one kernel (mode 0700, in the grader's TMPDIR): its connection file, the copy of
    it the kernel reads, the masks over the answers, the staged submission. The sandbox never sees the folder; what
    it reads of it is bound read-only, file by file."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="perfaudit-kernel-"))
        self.staged = self.path / "submission"
        self.staged.mkdir()
        self.write("empty", "")  # a regular file: a device bound over a file cannot be opened there
        (self.path / "empty-folder").mkdir()
        os.chmod(self.path / "empty-folder", 0o755)  # whatever the grader's umask: it reads as an empty folder

    @property
    def empty(self) -> Path:
        return self.path / "empty"

    @property
    def empty_folder(self) -> Path:
        return self.path / "empty-folder"

    def readable_by_sandbox(self) -> None:
        """The staged submission is world-readable (the sandbox runs as a uid of its own); the folder itself stays
        0700, and so does the grader's connection file: bind mounts reach what the sandbox reads without a search
        through the folder."""
        for root, dirs, files in os.walk(self.staged):
            os.chmod(root, 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)

    def write(self, name: str, content: str | bytes) -> Path:
        """A file of the grader's, for the sandbox (or bubblewrap) to read."""
        path = self.path / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        os.fchmod(fd, 0o644)  # whatever the grader's umask: the sandbox's uid reads it
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode() if isinstance(content, str) else content)
        return path

    def remove(self) -> None:
        # shutil.rmtree walks by file descriptor and never follows a link; nothing here was the sandbox's anyway
        shutil.rmtree(self.path, ignore_errors=True)


def _sandbox_root(launched: int, own_mount_ns: str) -> tuple[int, int] | None:
    """(pid, pidfd) of a process started under `launched` that lives in another mount namespace (the sandbox's),
    its parent checked after its pidfd was taken, so the pid still names that process; None if there is none yet."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in process_table().items():
        children.setdefault(ppid, []).append(pid)
    tree, queue = {launched}, list(children.get(launched, []))
    while queue:
        pid = queue.pop(0)
        tree.add(pid)
        queue += children.get(pid, [])
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        info = process_stat(pid)
        try:
            in_sandbox = os.readlink(f"/proc/{pid}/ns/mnt") != own_mount_ns
        except OSError:
            in_sandbox = False
        if in_sandbox and info is not None and info[0] in tree:
            return pid, pidfd
        os.close(pidfd)
    return None


def _alive(pidfd: int) -> bool:
    """A pidfd turns readable when its process has exited."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return not poller.poll(0)


class KernelSockets:
    """The kernel's socket folder in its sandbox, held by a file descriptor of the grader's once found."""

    def __init__(self, inside_dir: str) -> None:
        self.inside_dir = inside_dir.lstrip("/")  # relative to the sandbox's root
        self.fd: int | None = None
        self.names: Sequence[str] = ()
        self._started = 0.0

    async def seal(self, launched: int, names: Sequence[str], gone: Callable[[], bool], timeout_s: float) -> str:
        """Wait until the kernel started as `launched` has made every socket in `names`, seal the folder, check it,
        and return the folder as the grader connects to it (through its descriptor). Raises BoundaryCrossed when
        the folder holds anything but those sockets (student code ran before the kernel answered and left it),
        RuntimeError when the kernel is gone first, TimeoutError when it is too slow."""
        self._started = time.monotonic()
        self.names = names
        deadline = self._started + timeout_s
        own_ns = os.readlink("/proc/self/ns/mnt")
        while self.fd is None:
            self._give_up_if(gone, deadline, "its sandbox came up")
            found = _sandbox_root(launched, own_ns)
            if found is None:
                await asyncio.sleep(POLL_S)
                continue
            pid, pidfd = found
            try:
                fd = os.open(f"/proc/{pid}/root/{self.inside_dir}",
                             os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:  # not made yet, or the process just left
                await asyncio.sleep(POLL_S)
                continue
            finally:
                alive = _alive(pidfd)
                os.close(pidfd)
            if alive:
                self.fd = fd
            else:
                os.close(fd)
        while not self.check(names):  # what is there so far: an odd entry is refused at once
            self._give_up_if(gone, deadline, "it bound its sockets")
            await asyncio.sleep(POLL_S)
        os.fchmod(self.fd, SEALED_MODE)  # from now on the sandbox's uid adds, removes and renames nothing here
        if not self.check(names):  # sealed: what is there now stays
            raise BoundaryCrossed("the kernel's sockets were removed before the grader connected")
        return f"/proc/{os.getpid()}/fd/{self.fd}"

    def check(self, names: Sequence[str]) -> bool:
        """Whether every socket in `names` is there. Raises BoundaryCrossed when the folder holds anything else (no
        kernel makes it: code of the submission ran before the kernel answered)."""
        assert self.fd is not None
        odd, found = [], 0
        for name in os.listdir(self.fd):
            mode = self._entry(name)
            if mode is None:  # gone since the listing
                continue
            if name not in names:
                odd.append(f"'{name}' ({_kind(mode)})")
            elif not stat.S_ISSOCK(mode):
                odd.append(f"'{name}' ({_kind(mode)} where the kernel's socket belongs)")
            else:
                found += 1
        if odd:
            odd.sort()
            more = f" and {len(odd) - SHOWN} more" if len(odd) > SHOWN else ""
            raise BoundaryCrossed(
                f"the kernel's socket folder holds {', '.join(printable(o) for o in odd[:SHOWN])}{more}: no kernel "
                "makes that; code of the submission ran before the kernel answered and left it there, so the grader "
                "does not use this kernel")
        return found == len(names)

    def tampered(self) -> str | None:
        """Why the sealed sockets show the submission's hand, or None: a mode changed since the kernel bound them
        (it binds them 0777, sandbox.py's umask; the sandbox's uid owns them and may still chmod them, which without
        root keeps the grader from connecting)."""
        if self.fd is None or not self.names:
            return None
        changed = [f"'{name}' ({stat.S_IMODE(mode):03o})" for name in self.names
                   if (mode := self._entry(name)) is not None and stat.S_IMODE(mode) != BOUND_MODE]
        if not changed:
            return None
        return (f"the kernel's sockets had their modes changed after it bound them ({', '.join(changed[:SHOWN])}): "
                "no kernel does that; code of the submission did, so the grader could not connect")

    def _entry(self, name: str) -> int | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode
        except OSError:
            return None

    def _give_up_if(self, gone: Callable[[], bool], deadline: float, before: str) -> None:
        if gone():
            self.close()
            raise RuntimeError(f"the kernel died before {before}")
        if time.monotonic() > deadline:
            self.close()
            raise TimeoutError(f"the kernel took over {deadline - self._started:.0f} s before {before}")

    def close(self) -> None:
        """The descriptor goes; the folder, in the sandbox's memory, goes with the sandbox. Nothing there is removed
        by name."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _kind(mode: int | None) -> str:
    if mode is None:
        return "gone"
    for test, name in ((stat.S_ISLNK, "a link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISREG, "a file"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a device"
