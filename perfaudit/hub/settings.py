"""Where the hub's parts are: one place, read by jupyterhub_config.py, the accounts and the exchange.

Everything has a default for a class on this machine; the environment changes it (the tests put a hub on free
ports with a state folder, exchange and course of their own):

    PERFAUDIT_HUB_COURSE     the course directory (default: this repository)
    PERFAUDIT_HUB_STATE      the hub's own files: its database, cookie secret, first passwords (default: .hub/)
    PERFAUDIT_EXCHANGE       nbgrader's exchange every account shares (default: /srv/nbgrader/exchange)
    PERFAUDIT_HUB_URL        where the hub listens (default: http://:8000, every interface)
    PERFAUDIT_HUB_DOMAIN     the hub's public address, https://hub.example.edu[:port]: each person's server and
                             Formgrader on a domain of its own under it (JupyterHub's subdomain_host); required
                             unless PERFAUDIT_HUB_SHARED_ORIGIN=1 (a group that trusts each other: not a class)
    PERFAUDIT_HUB_TLS        the certificate and key the hub serves HTTPS with, "cert.pem,key.pem" (JupyterHub's
                             ssl_cert, ssl_key; default none: HTTP, or HTTPS from a reverse proxy in front)
    PERFAUDIT_HUB_PORTS      the loopback ports of the hub, the proxy's API and Formgrader (default: 8081,8001,9999)
    PERFAUDIT_SERVE_ARGS     extra arguments of the grading service (python -m perfaudit.serve), e.g. --workers 2
    PERFAUDIT_HUB_GRADING    "off": the hub starts no grading service (while Formgrader's manual grades are written)
    PERFAUDIT_HUB_MEMORY     memory of each process of a person's server and kernels (default: 2G; server_limits.py)
    PERFAUDIT_HUB_PROCESSES  processes and threads of each person's account (default: 512; server_limits.py)
    PERFAUDIT_HUB_CPUS       a cap on each person's CPU, in CPUs, where cgroups are (default: none; person_groups.py)
    PERFAUDIT_HUB_EXCHANGE_SHARE  what each student may keep in the exchange (default: 1G; exchange_share.py)
"""

import os
import pwd
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from perfaudit import paths
from perfaudit.hub.server_limits import Limits, parse_bytes, parse_cpus

DEFAULT_EXCHANGE = "/srv/nbgrader/exchange"
STUDENTS_CONFIG = Path(__file__).with_name("students")  # the Jupyter config every student's server reads
# The proxy as make hub-proxy installs it (npm ci, perfaudit/hub/proxy/package-lock.json): nothing fetched at start.
PROXY = paths.ROOT / ".hub" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
# Kernels speak to their server over unix sockets in the account's private runtime folder (0700), not loopback TCP:
# every account sees every listening port (/proc/net/tcp), and a kernel's output channel needs no key to read.
# jupyter_client's setting, given to each person's server, Formgrader, and nbgrader's Validate in students' servers.
KERNEL_TRANSPORT = "ipc"
PRIVATE_KERNELS = f"--KernelManager.transport={KERNEL_TRANSPORT}"
# A person's server reads a request's whole body before it checks who sent it (tornado, up to 512 MiB by default): a
# classmate's unauthenticated 500 MiB uploads took a server from 135 MB to 1.5 GB, memory its owner is charged with.
# JupyterLab uploads a large file in chunks of 1 MiB and saves a notebook in one request: 64 MiB is plenty.
REQUEST_BODY_LIMIT = 64 * 2**20
BOUNDED_REQUESTS = [f"--ServerApp.max_body_size={REQUEST_BODY_LIMIT}",
                    f"--ServerApp.max_buffer_size={REQUEST_BODY_LIMIT}"]
# Each server closes, unread, every connection but the hub's proxy's (root's) and its own account's
# (perfaudit/hub/peer_guard.py): a classmate's bodies and idle connections cost it nothing.
GUARDED_PEERS = "--ServerApp.jpserver_extensions=perfaudit.hub.peer_guard=True"
# ... and a request's body is read only with the server's login (perfaudit/hub/body_guard.py): the proxy hands it
# anyone's requests, and a body is read before the token is checked.
GUARDED_BODIES = "--ServerApp.jpserver_extensions=perfaudit.hub.body_guard=True"
# ipykernel also binds a pipe for forked children's output on a loopback port, whatever the transport: the hub's python3
# kernelspec (JUPYTER_DATA/kernels/python3) runs perfaudit/hub/private_pipe.py, whose pipe is a unix socket in a 0700
# folder of the kernel's own. On JUPYTER_PATH in each person's server (its kernels, Validate's, its terminal's);
# Formgrader's server names it by its kernelspec manager (perfaudit/hub/kernelspecs.py says why).
JUPYTER_DATA = Path(__file__).with_name("jupyter_data")
HUB_KERNELSPECS = "--ServerApp.kernel_spec_manager_class=perfaudit.hub.kernelspecs.HubKernelSpecs"
# Where the hub makes a Python every account runs, when the course venv's is root's alone (perfaudit/hub/userenv.py).
ACCOUNTS_PYTHON = paths.ROOT / ".hub" / "accounts-python"


@dataclass(frozen=True)
class HubSettings:
    course: Path
    state: Path
    exchange: Path
    url: str
    domain: str  # "" where every page is served from the hub's one origin
    tls: tuple[str, str] | None  # (certificate, key) the hub serves HTTPS with, or None
    shared_origin: bool  # ... which the instructor chose, knowing what it lets students do to each other
    hub_port: int
    proxy_api_port: int
    formgrader_port: int
    serve_args: tuple
    grading: bool
    venv_bin: Path
    limits: Limits

    @property
    def course_id(self):
        # nbgrader and the grader (seconds) only when asked: jupyterhub_config.py imports these settings
        from perfaudit.bookkeeping.coursedir import course_directory

        return course_directory(self.course).course_id

    @property
    def owner(self):
        """The course directory's owner: Formgrader and the grading service run as this account, and it owns the
        course's folder in the exchange (as an instructor who ran release_assignment would)."""
        return pwd.getpwuid(self.course.stat().st_uid)

    def groups(self):
        """(students' group, instructors' group): unix groups and hub groups of the same names, as nbgrader's
        JupyterHub chapter names them (formgrade-<course> reaches Formgrader)."""
        return f"nbgrader-{self.course_id}", f"formgrade-{self.course_id}"


def parse_tls(value):
    """PERFAUDIT_HUB_TLS's "certificate,key" as (certificate, key), None when empty."""
    if not value:
        return None
    parts = [part.strip() for part in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise SystemExit(f"PERFAUDIT_HUB_TLS={value!r}: expected the certificate's and the key's paths, "
                         "\"cert.pem,key.pem\"")
    return parts[0], parts[1]


def from_environment(env=os.environ):
    hub, proxy_api, formgrader = (int(p) for p in env.get("PERFAUDIT_HUB_PORTS", "8081,8001,9999").split(","))
    return HubSettings(
        course=Path(env.get("PERFAUDIT_HUB_COURSE") or paths.ROOT).resolve(),
        state=Path(env.get("PERFAUDIT_HUB_STATE") or paths.ROOT / ".hub").resolve(),
        exchange=Path(env.get("PERFAUDIT_EXCHANGE") or DEFAULT_EXCHANGE),
        url=env.get("PERFAUDIT_HUB_URL") or "http://:8000",
        domain=env.get("PERFAUDIT_HUB_DOMAIN", "").rstrip("/"),
        tls=parse_tls(env.get("PERFAUDIT_HUB_TLS", "")),
        shared_origin=env.get("PERFAUDIT_HUB_SHARED_ORIGIN") == "1",
        hub_port=hub, proxy_api_port=proxy_api, formgrader_port=formgrader,
        serve_args=tuple(shlex.split(env.get("PERFAUDIT_SERVE_ARGS", ""))),
        grading=env.get("PERFAUDIT_HUB_GRADING", "on") != "off",
        venv_bin=Path(sys.executable).parent,
        limits=Limits(parse_bytes(env.get("PERFAUDIT_HUB_MEMORY") or "2G"),
                      int(env.get("PERFAUDIT_HUB_PROCESSES") or 512),
                      parse_bytes(env.get("PERFAUDIT_HUB_EXCHANGE_SHARE") or "1G"),
                      parse_cpus(env.get("PERFAUDIT_HUB_CPUS") or "")),
    )
