"""Student code during grading runs in bubblewrap (Debian's `bubblewrap` package), never with the grader's rights.

Inside the sandbox a process has:
- no network (a network namespace of its own: not even TCP loopback, so kernels talk ZMQ over ipc sockets);
- its own process, IPC and hostname namespaces, a fresh /dev and /proc (no other process is visible), a private
  /tmp, and a new session (it cannot push keystrokes into the grader's terminal);
- read access to the system only (/usr, /lib*, /bin, /sbin, /etc), the Python installation and virtual
  environment, and the perfaudit package folder; the repository root (gradebook.db, source/, submitted/,
  autograded/), other students' folders and the instructor's home are not there at all;
- read-write access only to a scratch folder, /tmp and the kernel's socket folder, size-capped file systems in
  memory that vanish with the sandbox; nothing of the grader's disk (perfaudit/autograde/isolation/boundary.py says
  what it may touch, and holds the one place the grader reaches in). The scratch folder starts as a copy of the
  grader's staged copy of the submission (regular files only);
- rlimits on CPU seconds, address space, processes (threads count too), open files and the size of a written file,
  and a memory limit on all its processes together (perfaudit/autograde/isolation/memory.py, applied by the kernel
  manager).

The student's process never runs as the grader's account. As root, it drops to an unprivileged uid of its own (one
per kernel, no groups), so RLIMIT_NPROC counts only that sandbox's processes (root is exempt from it). As any other
account (the hub's grading service), bubblewrap runs in a user namespace of its own that maps the account's
subordinate uids (/etc/subuid, through uidmap's newuidmap), and the student's process drops to one of them: it can
write nothing the account owns, and the account alone can change what the sandbox's root owns (its socket folder).

Where bubblewrap is missing or does not work (no user namespaces, macOS), command() raises SandboxUnavailable,
unless PERFAUDIT_UNSANDBOXED=1: then student code runs with the grader's rights (rlimits still apply), and
status() says so, for the grading output and the summary.
"""

import contextlib
import functools
import os
import pwd
import resource
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import perfaudit
from perfaudit import paths
from perfaudit.autograde.errors import SandboxUnavailable
from perfaudit.autograde.isolation import memory, syscalls
from perfaudit.autograde.isolation.boundary import SOCKETS_BYTES, HostFolder

if TYPE_CHECKING:
    from perfaudit.autograde.isolation.limits import SandboxLimits

UNSANDBOXED = "PERFAUDIT_UNSANDBOXED"  # "1": grade without a sandbox, knowingly
BWRAP = "PERFAUDIT_BWRAP"  # the bwrap program to use (default: bwrap on PATH)
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SANDBOX_UID_BASE = 2_000_000_000  # + the grading process's pid: a uid no account uses, distinct per grader
SUBORDINATE_IDS = 65536  # without root: the subordinate ids the account needs, as useradd gives by default


def _unavailable_message(why):
    # One line: what is missing and the two ways on, nothing else (make prints its own line after it).
    return (
        f"Grading refuses to run student code without a sandbox: {why}. Install bubblewrap and uidmap "
        "(Debian/Ubuntu: `sudo apt-get install bubblewrap uidmap`; Fedora: `sudo dnf install bubblewrap`) on Linux "
        f"with user namespaces enabled, or set {UNSANDBOXED}=1 knowing that student code then runs with your rights "
        "(it can read the gradebook and other students' work, and use the network)."
    )


def _bwrap_path():
    return os.environ.get(BWRAP) or shutil.which("bwrap") or ""


def _subordinate_range(path: str) -> int:
    """How many subordinate ids /etc/subuid (or subgid) gives this account, 0 where none."""
    names = {str(os.getuid()), _account_name()}
    with contextlib.suppress(OSError):
        for line in Path(path).read_text().splitlines():
            fields = line.strip().split(":")
            if len(fields) == 3 and fields[0] in names and fields[2].isdigit():
                return int(fields[2])
    return 0


def _own_ids_missing() -> str | None:
    """Why this account (not root) cannot give the sandbox ids of its own, or None when it can."""
    if not shutil.which("newuidmap") or not shutil.which("newgidmap"):
        return ("uidmap's newuidmap is not installed (Debian/Ubuntu: `sudo apt-get install uidmap`): without root, "
                "the sandbox needs it to run as a uid other than yours")
    user = _account_name()
    for path, flag in (("/etc/subuid", "--add-subuids"), ("/etc/subgid", "--add-subgids")):
        if _subordinate_range(path) < SUBORDINATE_IDS:
            return (f"{path} gives the account {user} fewer than {SUBORDINATE_IDS} subordinate ids: without root, the "
                    f"sandbox runs as one of them, never as you (as root: `usermod {flag} 100000-165535 {user}`, a "
                    "range no other account uses)")
    return None


def _account_name() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


# In the sandbox's own user namespace, before bubblewrap: no user namespace may be made inside it. Each one made
# there would count against this account's own limit (user.max_user_namespaces counts up the chain of owners), so
# a submission could exhaust it and no later sandbox of the class would start.
_NO_NESTED_NAMESPACES = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'


def _own_namespace() -> list[str]:
    """Without root: the prefix that runs bubblewrap as root of a user namespace of its own, where uid 0 is this
    account and 1..65535 its subordinate uids, and where no further user namespace can be made. [] as root."""
    if _as_root():
        return []
    return [shutil.which("unshare") or "unshare", "--map-root-user", "--map-auto", "--",
            "/bin/sh", "-c", _NO_NESTED_NAMESPACES, "sh"]


def _as_root():
    return os.geteuid() == 0


@functools.lru_cache(maxsize=None)
def _probe(bwrap, as_root):
    """(version, None) when bwrap makes a working sandbox here, else (None, why). Cached per program."""
    if sys.platform != "linux":
        return None, f"bubblewrap needs Linux (this is {sys.platform})"
    if not bwrap or not Path(bwrap).is_file():
        return None, f"bubblewrap is not installed (no `{bwrap or 'bwrap'}`)"
    if not as_root and (why := _own_ids_missing()):
        return None, why
    trial = [*_own_namespace(), bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
             "--unshare-pid"]
    try:
        run = subprocess.run([*trial, "--", "true"], capture_output=True, text=True, timeout=30)
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"`{bwrap}` does not run ({error})"
    if run.returncode != 0:
        return None, f"`{bwrap}` cannot make a sandbox here ({run.stderr.strip() or run.returncode})"
    return (version[-1] if version else "?"), None


def available() -> tuple[bool, str]:
    """(True, version) or (False, why)."""
    version, why = _probe(_bwrap_path(), _as_root())
    return (True, version) if version else (False, why)


def unsandboxed_allowed() -> bool:
    return os.environ.get(UNSANDBOXED) == "1"


def require() -> None:
    """Raise SandboxUnavailable unless a sandbox works here or running without one was asked for."""
    ok, why = available()
    if not ok and not unsandboxed_allowed():
        raise SandboxUnavailable(_unavailable_message(why))


def status(limits: "SandboxLimits") -> str:
    """One line for grading output and the grade summary: how student code ran."""
    ok, detail = available()
    if ok:
        return (
            f"sandbox: bubblewrap {detail} (no network; reads only the system, Python and perfaudit; writes only "
            f"a private scratch folder and /tmp in memory; limits: {limits.describe()}; memory counted by "
            f"{memory.mechanism()})"
        )
    if unsandboxed_allowed():
        return f"UNSANDBOXED: {UNSANDBOXED}=1, student code ran with the grader's rights ({detail})"
    return f"NO SANDBOX: {detail}; grading refuses to run student code"


def sandbox_uid(kernel: int = 0) -> int:
    """The unprivileged uid student code runs as: one per kernel a grading process starts (`kernel`, counted by the
    kernel manager), so processes a submission leaves behind never share RLIMIT_NPROC with the next kernel, the
    instructor's solution checked after it included. As root, a uid no account uses; otherwise a uid of the
    sandbox's user namespace (1..65535: one of this account's subordinate uids outside it)."""
    if _as_root():
        return SANDBOX_UID_BASE + (os.getpid() % 2**22) * 256 + kernel % 256
    return 1 + ((os.getpid() % 255) * 256 + kernel % 256)


def _readable_paths():
    """The Python installation, the virtual environment, their site-packages, and the perfaudit package folder.

    Never sys.path: `python -m nbgrader` puts the course folder on it. perfaudit is installed editable (a finder
    in site-packages maps it to <repo>/perfaudit), so binding that folder alone keeps it importable.
    """
    paths = {sys.base_prefix, sys.prefix, str(Path(perfaudit.__file__).resolve().parent)}  # the perfaudit package
    for scheme_path in ("purelib", "platlib", "stdlib", "platstdlib"):
        paths.add(sysconfig.get_paths()[scheme_path])
    existing = sorted({str(Path(p).resolve()) for p in paths if Path(p).exists()})
    system = tuple(d + "/" for d in SYSTEM_DIRS)
    kept: list[str] = []
    for path in existing:  # sorted: a folder comes before anything inside it
        if path.startswith(system) or any(path == k or path.startswith(k + "/") for k in kept):
            continue
        kept.append(path)
    return kept


def _parents_world_searchable(paths, made):
    """bwrap makes the missing parents of a mount point with the source's modes (/root stays 0700): 0755 them."""
    args = []
    for path in paths:
        for parent in reversed(Path(path).parents):
            if str(parent) != "/" and str(parent) not in made:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
    return args


PASSED_THROUGH = ("PERFAUDIT_", "JAX_", "XLA_")  # an instructor may pin JAX's platform or XLA flags for a class


def student_env(grader_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The grader's settings a student's process may see: PERFAUDIT_*, JAX_*, XLA_*, nothing else.

    NBGRADER_EXECUTION in particular stays outside: student code cannot tell that it is being graded.
    """
    grader_env = os.environ if grader_env is None else grader_env
    return {k: v for k, v in grader_env.items() if k.startswith(PASSED_THROUGH) and k != BWRAP}


def package_seen_installed(grader_env: Mapping[str, str] | None = None) -> str | None:
    """Where the kernel also sees the grader's perfaudit folder: the folder the installed (editable) distribution
    points to, where the grader found its perfaudit through PYTHONPATH instead (a second checkout of the course, a
    git worktree); else None. The kernel then imports the grader's code, found where and when the installed one would
    be (after the working folder), and nothing else of the grader's PYTHONPATH."""
    grader_env = os.environ if grader_env is None else grader_env
    package = Path(perfaudit.__file__).resolve().parent
    entries = [Path(entry).resolve() for entry in grader_env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    if package.parent not in entries:
        return None
    finders = [m for name, m in list(sys.modules.items()) if name.startswith("__editable___perfaudit_")]
    installed = next((m.MAPPING.get("perfaudit") for m in finders if isinstance(getattr(m, "MAPPING", None), dict)),
                     None)
    return installed if installed and Path(installed).resolve() != package else None


def unsandboxed_env(env: dict[str, str]) -> dict[str, str]:
    """env for a process started without a sandbox (PERFAUDIT_UNSANDBOXED=1): the same clean environment, with
    this machine's PATH and HOME, and the default places for temporary files and settings."""
    base = {**base_env(), **{k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}}
    for key in ("TMPDIR", "IPYTHONDIR", "MPLCONFIGDIR"):
        base.pop(key)
    return {**base, **env}


def base_env() -> dict[str, str]:
    """What a Python process in the sandbox needs: PATH with this Python's bin first, a writable HOME, a locale."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp/home",
        "TMPDIR": "/tmp",
        "IPYTHONDIR": "/tmp/ipython",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "LANG": "C.UTF-8",
        "USER": "student",
        "LOGNAME": "student",
    }


def prlimit(limits: "SandboxLimits") -> list[str]:
    """The prlimit command prefix that applies the limits (soft = hard) to the command after it."""
    names = {resource.RLIMIT_CPU: "--cpu", resource.RLIMIT_AS: "--as", resource.RLIMIT_NPROC: "--nproc",
             resource.RLIMIT_FSIZE: "--fsize", resource.RLIMIT_NOFILE: "--nofile"}
    return [shutil.which("prlimit") or "prlimit", *(f"{names[r]}={value}" for r, value in limits.rlimits()), "--"]


# Inside the sandbox: where the kernel works, where the grader's staged copy of the submission is seen, and where
# the kernel's connection file and sockets live. None of the grader's own paths is visible there.
HOME = "/home/student"
SCRATCH = HOME + "/work"
SUBMISSION = HOME + "/submission"
KERNEL_DIR = "/run/kernel"  # the kernel's sockets: a capped folder in memory, sealed once they are bound
CONNECTION_FILE = "/run/connection.json"  # the grader's copy for the kernel, read-only
SECCOMP_FD = 9  # the descriptor bubblewrap reads the seccomp filter from (syscalls.py)
# Copies the submission into the fresh scratch folder, then becomes the kernel (argv after the script).
def _answer_folders():
    """What of the course package holds answers (paths.ANSWER_FOLDERS): perfaudit/answer_key/, which hidden tests use
    in the grader only, and perfaudit/fixtures/, whose samples and catalog hold solutions as text. In the sandbox both
    read as empty folders."""
    package = Path(perfaudit.__file__).resolve().parent
    found = [package / name for name in paths.ANSWER_FOLDERS]
    return [str(path) for path in found if path.exists()]


# umask 000: the kernel's sockets take a connection from the grader's account, which without root is not the
# sandbox's uid (only the grader reaches the socket folder: through the sandbox's root, boundary.py).
_ENTER_SCRATCH = f'umask 000; cp -R {SUBMISSION}/. {SCRATCH}/ 2>/dev/null; cd {SCRATCH} && exec "$@"'


def command(argv: Sequence[str], *, submission: str | Path, host: HostFolder, limits: "SandboxLimits",
            connection: str | Path | None = None, env: dict[str, str] | None = None,
            uid: int | None = None) -> list[str]:
    """The argv that runs argv in the sandbox, with env and nothing else from here.

    submission: the grader's staged copy of the student's regular files, seen read-only and copied into the
    scratch folder (a size-capped memory file system) where argv starts. host: the grader's own folder for this
    kernel (boundary.HostFolder), which the sandbox never sees; connection: a file of it the kernel reads at
    CONNECTION_FILE. Without a working sandbox: SandboxUnavailable, or with PERFAUDIT_UNSANDBOXED=1 argv under the
    rlimits only (the kernel manager then runs it in a copy of submission).
    """
    ok, why = available()
    if not ok:
        if not unsandboxed_allowed():
            raise SandboxUnavailable(_unavailable_message(why))
        return [*prlimit(limits), *argv] if shutil.which("prlimit") else list(argv)
    seccomp = syscalls.program()
    opened = []  # what bubblewrap reads from a descriptor: the seccomp filter, on SECCOMP_FD
    if seccomp is not None:
        written = host.path / "seccomp.bpf"  # once per kernel: a restart launches again with the same folder
        written = written if written.exists() else host.write(written.name, seccomp)
        opened = ["/bin/sh", "-c", f'exec "$@" {SECCOMP_FD}<"$0"', str(written)]
    args = [
        *opened, *_own_namespace(), _bwrap_path(),
        *(["--seccomp", str(SECCOMP_FD)] if seccomp is not None else []),
        "--die-with-parent", "--new-session",
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--hostname", "sandbox",
    ]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    size = str(limits.scratch_mb * 2**20)
    # /tmp, the scratch folder and the socket folder: writable by the sandbox's uid, in memory, size-capped, gone
    # after. Nothing else it sees is writable by it: / and the folders bwrap makes belong to the sandbox's root.
    args += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--size", size, "--tmpfs", "/tmp"]
    args += ["--perms", "0755", "--dir", "/home", "--perms", "0755", "--dir", HOME,
             "--perms", "1777", "--size", size, "--tmpfs", SCRATCH, "--perms", "0755", "--dir", "/run",
             "--perms", "0777", "--size", str(SOCKETS_BYTES), "--tmpfs", KERNEL_DIR]
    readable = _readable_paths()
    args += _parents_world_searchable(readable, made=set())
    for path in readable:
        args += ["--ro-bind", path, path]
    package = str(Path(perfaudit.__file__).resolve().parent)
    masked = {path: path for path in _answer_folders()}  # {where the kernel sees it: the grader's path}
    installed = package_seen_installed()
    if installed is not None:  # the grader's perfaudit, where the kernel's installed finder looks for it
        args += _parents_world_searchable([installed], made=set(readable))
        args += ["--ro-bind", package, installed]
        masked.update({installed + path[len(package):]: path for path in list(masked)})
    for seen, path in masked.items():  # in the package folder, but never the student's to read
        args += ["--ro-bind", str(host.empty_folder if os.path.isdir(path) else host.empty), seen]
    args += ["--ro-bind", str(submission), SUBMISSION]
    if connection is not None:
        args += ["--ro-bind", str(connection), CONNECTION_FILE]
    args += ["--chdir", HOME, "--clearenv"]
    for key, value in {**base_env(), **(env or {})}.items():
        args += ["--setenv", key, value]
    args += ["--", *prlimit(limits)]
    uid = str(sandbox_uid() if uid is None else uid)  # type: ignore[assignment]  # as setpriv's argument
    args += [shutil.which("setpriv") or "setpriv", "--reuid", uid, "--regid", uid, "--clear-groups",
             "--no-new-privs", "--"]
    return [*args, "/bin/sh", "-c", _ENTER_SCRATCH, "sh", *argv]
