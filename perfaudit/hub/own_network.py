"""The grading service in a network namespace of its own, started by the hub as root and then run as the course's
owner (c.JupyterHub.services' "grading": command()).

The service's Dask cluster listens on loopback TCP ports (the scheduler in the service's process, one per worker),
and every account reads /proc/net/tcp. Its mutual TLS keeps a student from running code there, but not from opening
connections: a held-out attacker held 2,400 connections to each port from four processes, the service ran out of
descriptors ("Too many open files") reading the exchange and died, the hub restarted it, the attacker found its new
ports within 2 s, and nobody's feedback came while it lasted. No limit on descriptors closes that (an account may
open as many as the service may hold). In a network namespace of its own the service has a loopback of its own, which
no process outside it can reach: its ports are not on the machine's loopback at all.

Making a network namespace needs root (CAP_SYS_ADMIN), and the hub starts a service as its account. So the hub
starts LAUNCHER as root; it makes the namespace, brings its loopback up, becomes the account (its groups, HOME, USER,
LOGNAME, SHELL, as the hub gives a service it starts as that account) and execs the service. The hub starts it again
at each restart of the service, whenever it stops: so what root runs then is the Python interpreter's own files and
this program, in isolated mode (-I -S: no folder of the course's, no environment variable, no site-packages), never
the course's code, which its owner, or an instructor in Formgrader's terminal, may change. The program itself is read
when the hub starts, as jupyterhub_config.py is.

Unix sockets and files are the machine's as before: the exchange, the gradebook, the sandbox's bubblewrap. What needs
the machine's network cannot be reached from there: a Dask cluster elsewhere (--scheduler: the hub then runs the
service on the machine's network) or a gradebook on PostgreSQL over TCP (use its unix socket). Where no namespace can
be made (a container without CAP_SYS_ADMIN), the service runs on the machine's network, and says so in the hub's log.
"""

import os
import sys
from pathlib import Path

# Run as root by an interpreter in isolated mode: argv is <account> -- <command...>. Standard library only.
LAUNCHER = r"""
import ctypes, fcntl, os, pwd, socket, struct, sys

CLONE_NEWNET, SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x40000000, 0x8913, 0x8914, 0x1
IFREQ = "16sH14x"  # struct ifreq: the interface's name, then ifr_flags in its union
account, separator, command = sys.argv[1], sys.argv[2], sys.argv[3:]
assert separator == "--" and command, "usage: <account> -- <command...>"
try:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        _, flags = struct.unpack(IFREQ, fcntl.ioctl(probe, SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0)))
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))
except OSError as error:
    print(f"the grading service runs on the machine's network, its ports reachable by every account: no network "
          f"namespace of its own could be made ({error})", file=sys.stderr, flush=True)
user = pwd.getpwnam(account)
os.setgroups(os.getgrouplist(account, user.pw_gid))
os.setgid(user.pw_gid)
os.setuid(user.pw_uid)
os.environ.update(HOME=user.pw_dir, USER=account, LOGNAME=account, SHELL=user.pw_shell)
os.execvp(command[0], command)
"""


def interpreter() -> str | None:
    """The Python interpreter behind this one, as a file root owns that no other account may change (a venv's
    python is a link in the course, which its owner may replace); None where there is none."""
    found = Path(os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable))
    for path in (found, *found.parents):
        info = path.stat()
        if info.st_uid != 0 or info.st_mode & 0o022:
            return None
    return str(found)


def command(hub, argv: list[str], python: str | None = None) -> list[str] | None:
    """argv (the grading service, or make hub's check of it) run as the course's owner in a network namespace of its
    own, as root starts it; None where the service runs as the account on the machine's network: the hub is not root
    or the course is root's, the service uses a Dask cluster elsewhere (--scheduler), or no interpreter is fit to be
    run by root at each restart."""
    if os.geteuid() != 0 or hub.owner.pw_uid == 0 or "--scheduler" in hub.serve_args:
        return None
    python = python or interpreter()
    return None if python is None else [python, "-I", "-S", "-c", LAUNCHER, hub.owner.pw_name, "--", *argv]
