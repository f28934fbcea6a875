"""Student code during grading runs in bubblewrap (Debian's `bubblewrap` package), never with the grader's rights.

Inside the sandbox a process has:
- no network (a network namespace of its own: not even TCP loopback, so kernels talk ZMQ over ipc sockets);
- its own process, IPC and hostname namespaces, a fresh /dev and /proc (no other process is visible), a private
  /tmp, and a new session (it cannot push keystrokes into the grader's terminal);
- read access to the system only (/usr, /lib*, /bin, /sbin, /etc), the Python installation and virtual
  environment, and the perfaudit package folder; the repository root (gradebook.db, source/, submitted/,
  autograded/), other students' folders and the instructor's home are not there at all;
- read-write access to its working folder (the student's autograded/<student>/<assignment>/) only;
- rlimits on CPU seconds, address space, processes (threads count too) and the size of a written file.

As root, the student's process drops to an unprivileged uid of its own (one per grading process, no groups), so
RLIMIT_NPROC counts only that sandbox's processes (root is exempt from it); the working folder belongs to that uid
while the kernel runs (workdir_for) and goes back to its owner afterwards. As any other user, bubblewrap makes a
user namespace, in which RLIMIT_NPROC also counts only the sandbox's processes.

Where bubblewrap is missing or does not work (no user namespaces, macOS), command() raises SandboxUnavailable,
unless PERFAUDIT_UNSANDBOXED=1: then student code runs with the grader's rights (rlimits still apply), and
status() says so, for the grading output and the summary.
"""

import contextlib
import functools
import os
import resource
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

UNSANDBOXED = "PERFAUDIT_UNSANDBOXED"  # "1": grade without a sandbox, knowingly
BWRAP = "PERFAUDIT_BWRAP"  # the bwrap program to use (default: bwrap on PATH)
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SANDBOX_UID_BASE = 2_000_000_000  # + the grading process's pid: a uid no account uses, distinct per grader


class SandboxUnavailable(RuntimeError):
    pass


def _unavailable_message(why):
    return (
        f"Grading refuses to run student code without a sandbox: {why}.\n"
        "Install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install "
        "bubblewrap`) on a Linux machine with user namespaces enabled, or, knowing that student code then runs "
        f"with your rights (it can read the gradebook and other students' work, and use the network), set "
        f"{UNSANDBOXED}=1."
    )


def _hard_limit(which):
    return resource.getrlimit(which)[1]


def _capped(value, which, unit):
    """value (in unit) lowered to this process's hard limit, so a sandbox never raises a hard limit."""
    hard = _hard_limit(which)
    return value if hard == resource.RLIM_INFINITY else min(value, hard // unit)


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 1800  # CPU seconds per process (all threads); a backstop: the notebook's own time limit is 600 s
    memory_mb: int = 4096  # address space per process
    processes: int = 512  # processes and threads of the sandbox user (JAX starts a thread pool per core)
    file_mb: int = 256  # largest file a process may write, and the size of the private /tmp

    def __post_init__(self):
        for name, which, unit in (
            ("cpu_s", resource.RLIMIT_CPU, 1),
            ("memory_mb", resource.RLIMIT_AS, 2**20),
            ("processes", resource.RLIMIT_NPROC, 1),
            ("file_mb", resource.RLIMIT_FSIZE, 2**20),
        ):
            object.__setattr__(self, name, _capped(getattr(self, name), which, unit))

    def prlimit(self, processes=True):
        """The prlimit command prefix that applies these limits (soft = hard) to the command after it.

        processes=False outside a sandbox: RLIMIT_NPROC would count every process of the grader's user.
        """
        return [
            shutil.which("prlimit") or "prlimit",
            f"--cpu={self.cpu_s}",
            f"--as={self.memory_mb * 2**20}",
            *([f"--nproc={self.processes}"] if processes else []),
            f"--fsize={self.file_mb * 2**20}",
            "--",
        ]

    def describe(self):
        return f"{self.cpu_s} s CPU, {self.memory_mb} MB memory, {self.processes} processes, {self.file_mb} MB files"


def _bwrap_path():
    return os.environ.get(BWRAP) or shutil.which("bwrap") or ""


def _as_root():
    return os.geteuid() == 0


@functools.lru_cache(maxsize=None)
def _probe(bwrap, as_root):
    """(version, None) when bwrap makes a working sandbox here, else (None, why). Cached per program."""
    if sys.platform != "linux":
        return None, f"bubblewrap needs Linux (this is {sys.platform})"
    if not bwrap or not Path(bwrap).is_file():
        return None, f"bubblewrap is not installed (no `{bwrap or 'bwrap'}`)"
    trial = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--unshare-pid"]
    trial += [] if as_root else ["--unshare-user"]
    try:
        run = subprocess.run([*trial, "--", "true"], capture_output=True, text=True, timeout=30)
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"`{bwrap}` does not run ({error})"
    if run.returncode != 0:
        return None, f"`{bwrap}` cannot make a sandbox here ({run.stderr.strip() or run.returncode})"
    return (version[-1] if version else "?"), None


def available():
    """(True, version) or (False, why)."""
    version, why = _probe(_bwrap_path(), _as_root())
    return (True, version) if version else (False, why)


def unsandboxed_allowed():
    return os.environ.get(UNSANDBOXED) == "1"


def require():
    """Raise SandboxUnavailable unless a sandbox works here or running without one was asked for."""
    ok, why = available()
    if not ok and not unsandboxed_allowed():
        raise SandboxUnavailable(_unavailable_message(why))


def status(limits=None):
    """One line for grading output and the grade summary: how student code ran."""
    limits = limits or Limits()
    ok, detail = available()
    if ok:
        return (
            f"sandbox: bubblewrap {detail} (no network; reads only the system, Python and perfaudit; writes only "
            f"its working folder and a private /tmp; limits: {limits.describe()})"
        )
    if unsandboxed_allowed():
        return f"UNSANDBOXED: {UNSANDBOXED}=1, student code ran with the grader's rights ({detail})"
    return f"NO SANDBOX: {detail}; grading refuses to run student code"


def sandbox_uid():
    """The unprivileged uid student code runs as when the grader is root (one per grading process)."""
    return SANDBOX_UID_BASE + os.getpid()


def _readable_paths():
    """The Python installation, the virtual environment, their site-packages, and the perfaudit package folder.

    Never sys.path: `python -m nbgrader` puts the course folder on it. perfaudit is installed editable (a finder
    in site-packages maps it to <repo>/perfaudit), so binding that folder alone keeps it importable.
    """
    paths = {sys.base_prefix, sys.prefix, str(Path(__file__).resolve().parent)}
    for scheme_path in ("purelib", "platlib", "stdlib", "platstdlib"):
        paths.add(sysconfig.get_paths()[scheme_path])
    existing = sorted({str(Path(p).resolve()) for p in paths if Path(p).exists()})
    system = tuple(d + "/" for d in SYSTEM_DIRS)
    kept = []
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


def student_env(grader_env=None):
    """The grader's settings a student's process may see: PERFAUDIT_*, JAX_*, XLA_*, nothing else.

    NBGRADER_EXECUTION in particular stays outside: student code cannot tell that it is being graded.
    """
    grader_env = os.environ if grader_env is None else grader_env
    return {k: v for k, v in grader_env.items() if k.startswith(PASSED_THROUGH) and k != BWRAP}


def unsandboxed_env(env):
    """env for a process started without a sandbox (PERFAUDIT_UNSANDBOXED=1): the same clean environment, with
    this machine's PATH and HOME, and the default places for temporary files and settings."""
    base = {**base_env(), **{k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}}
    for key in ("TMPDIR", "IPYTHONDIR", "MPLCONFIGDIR"):
        base.pop(key)
    return {**base, **env}


def base_env():
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


def command(argv, *, workdir, env=None, limits=None, writable=()):
    """The argv that runs argv in the sandbox, in workdir (bound read-write), with env and nothing else from here.

    writable: more folders bound read-write at the same path (a kernel's connection file and sockets).
    Without a working sandbox: SandboxUnavailable, or with PERFAUDIT_UNSANDBOXED=1 argv under the limits only.
    """
    limits = limits or Limits()
    ok, why = available()
    if not ok:
        if not unsandboxed_allowed():
            raise SandboxUnavailable(_unavailable_message(why))
        return [*limits.prlimit(processes=False), *argv] if shutil.which("prlimit") else list(argv)
    workdir = str(Path(workdir).resolve())
    as_root = _as_root()
    args = [
        _bwrap_path(),
        "--die-with-parent", "--new-session",
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        *([] if as_root else ["--unshare-user"]),
        "--hostname", "sandbox",
    ]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    # /tmp: writable by anyone (the sandbox uid too), held in memory, so its size is limited as well.
    args += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--size", str(limits.file_mb * 2**20), "--tmpfs", "/tmp"]
    readable = _readable_paths()
    rw = [workdir, *(str(Path(w).resolve()) for w in writable)]
    args += _parents_world_searchable([*readable, *rw], made=set())
    for path in readable:
        args += ["--ro-bind", path, path]
    for path in rw:
        args += ["--bind", path, path]
    args += ["--chdir", workdir, "--clearenv"]
    for key, value in {**base_env(), **(env or {})}.items():
        args += ["--setenv", key, value]
    args += ["--", *limits.prlimit()]
    if as_root:
        uid = str(sandbox_uid())
        args += [shutil.which("setpriv") or "setpriv", "--reuid", uid, "--regid", uid, "--clear-groups",
                 "--no-new-privs", "--"]
    return [*args, *argv]


def _tree(path):
    yield path
    for root, dirs, files in os.walk(path):  # does not follow symlinks
        for name in dirs + files:
            yield os.path.join(root, name)


@contextlib.contextmanager
def workdir_for(path):
    """While in use, path and everything in it is the sandbox's to write; afterwards owners and modes are back.

    As root the tree belongs to the sandbox uid meanwhile (files it makes go to the folder's owner afterwards).
    Either way files are made owner-writable meanwhile: nbgrader leaves each graded notebook's folder read-only,
    and the next notebook of the same student rewrites its evidence there. Symlinks are never followed.
    """
    if not available()[0]:
        yield path
        return
    path = str(Path(path).resolve())
    before = {p: os.lstat(p) for p in _tree(path)}
    uid = sandbox_uid() if _as_root() else None
    for p, st in before.items():
        if uid is not None:
            os.lchown(p, uid, uid)
        if not stat.S_ISLNK(st.st_mode):
            os.chmod(p, stat.S_IMODE(st.st_mode) | (0o700 if stat.S_ISDIR(st.st_mode) else 0o600))
    try:
        yield path
    finally:
        top = before[path]
        for p in _tree(path):
            st = before.get(p)
            with contextlib.suppress(FileNotFoundError):
                if uid is not None:
                    os.lchown(p, (st or top).st_uid, (st or top).st_gid)
                if st is not None and not stat.S_ISLNK(st.st_mode) and not os.path.islink(p):
                    os.chmod(p, stat.S_IMODE(st.st_mode))
