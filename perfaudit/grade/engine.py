"""Where grading tasks run: Dask distributed, on a cluster started here or on one that already runs.

Without a scheduler address, `cluster()` starts an embedded `distributed.LocalCluster`: one single-threaded worker
process per core (or --workers), scheduler and workers (and their HTTP endpoints) bound to loopback, speaking TLS with
credentials made for this run and held in its processes' memory alone (`security=True`: mutual TLS, no file on
disk). Loopback is shared by every account of the machine, a hub's students included, and a Dask scheduler runs what
any client submits: without the credentials a connection is refused. With `--scheduler
tcp://host:8786` (or a scheduler file written by `dask scheduler --scheduler-file`) it connects to that cluster;
an address that does not answer is refused at once with what to do. docs/grading-at-scale.md shows how to start a
cluster (`dask scheduler`, `dask worker`, dask-jobqueue, Kubernetes) and how to secure one with TLS.

A worker that dies mid-grading (killed, out of memory) loses its task to another worker; a task that has been on
`distributed.scheduler.allowed-failures` + 1 dying workers is failed with KilledWorker and not tried again. That is
the only retry beside TrustedExecute's own (a kernel killed from outside, or one that never started, runs once more:
perfaudit/autograde/isolation/kernel_fate.py). Here the number is ALLOWED_FAILURES, 2 (Dask's own default is 3), and a
worker takes one task at a time (`worker-saturation` 1.0), so a worker's death counts against the submission it was
grading only. These are set where the cluster is made (cluster_settings), not on import, and only where the instructor's
Dask configuration (a file, a DASK_DISTRIBUTED__... variable) leaves Dask's default.
"""

import json
import logging
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import dask
from distributed import Client, KilledWorker, LocalCluster, WorkerPlugin

from perfaudit.grade.errors import SchedulerUnreachable
from perfaudit.grade.worker import output_to_log

if TYPE_CHECKING:
    from distributed import Worker

ALLOWED_FAILURES = 2  # dead workers a task may cost before it is failed with KilledWorker: tried 3 times
CLUSTER_SETTINGS: dict[str, object] = {
    "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
    "distributed.scheduler.worker-saturation": 1.0,  # a worker takes one task at a time
    # Nobody watches the embedded cluster's dashboard, whose figures these gather: the workers' statistical profiler
    # (stacks sampled every 10 ms), the event loops' 20 ms health tick and the 0.5 s system monitor. Measured on an
    # idle local cluster of two workers, they cost its three processes 5.2 s of CPU per 40 s of waiting, 0.6 s without.
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "10s",
}
CONNECT_TIMEOUT_S = 5

__all__ = ["KilledWorker", "SchedulerUnreachable", "cluster", "cluster_settings", "describe", "probe",
           "scheduler_address"]


def cluster_settings() -> dict[str, object]:
    """CLUSTER_SETTINGS, less each the instructor's Dask configuration sets to something other than Dask's default."""
    dask_defaults = dask.config.merge(*dask.config.defaults)
    return {key: value for key, value in CLUSTER_SETTINGS.items()
            if dask.config.get(key) == dask.config.get(key, config=dask_defaults)}


def scheduler_address(scheduler: str) -> str:
    """The address from `tcp://host:port`, `host:port` or a scheduler file's path."""
    if "://" in scheduler:
        return scheduler
    path = Path(scheduler)
    if path.is_file():
        try:
            return json.loads(path.read_text())["address"]
        except (ValueError, KeyError) as error:
            raise SchedulerUnreachable(f"{scheduler} is not a Dask scheduler file ({error})") from None
    if ":" in scheduler and not path.suffix:
        return f"tcp://{scheduler}"
    raise SchedulerUnreachable(f"no scheduler file at {scheduler} (and it is not an address like tcp://host:8786)")


def probe(address: str) -> None:
    """Fail at once, with the reason, when nothing listens at the address (Dask's client would retry for a while)."""
    parts = urlsplit(address)
    if parts.scheme not in ("tcp", "tls"):
        return  # other transports (inproc, ucx) are Dask's to check
    try:
        with socket.create_connection((parts.hostname, parts.port or 8786), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as error:
        raise SchedulerUnreachable(
            f"cannot reach the Dask scheduler at {address}: {error.strerror or error}. Nothing was graded. Start it "
            "(`dask scheduler`, docs/grading-at-scale.md) or correct --scheduler; without --scheduler, grading "
            "runs on this machine."
        ) from None


class OutputToLog(WorkerPlugin):
    """On each worker process of the embedded cluster, restarted ones too: kernels' stderr into the run's log."""

    name = "perfaudit-output-to-log"

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)

    def setup(self, worker: "Worker") -> None:
        output_to_log(self.path)


NO_HTTP_ROUTES: dict[str, list[str]] = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}


@contextmanager
def cluster(scheduler: str | None = None, workers: int = 1, log: str | Path | None = None) -> Iterator[Client]:
    """A connected distributed.Client: to `scheduler`, or to an embedded local cluster of `workers` processes."""
    with dask.config.set(cluster_settings()):  # for the cluster made here and this process's client alike
        yield from _cluster(scheduler, workers, log)


def _cluster(scheduler: str | None, workers: int, log: str | Path | None) -> Iterator[Client]:
    if scheduler:
        address = scheduler_address(scheduler)
        probe(address)
        try:
            client = Client(address, timeout=f"{4 * CONNECT_TIMEOUT_S}s", set_as_default=False)
        except OSError as error:
            raise SchedulerUnreachable(f"cannot connect to the Dask scheduler at {address}: {error}") from None
        with client:
            yield client
        return
    loopback_any_port = "127.0.0.1:0"  # Dask's HTTP endpoints (health, metrics) too: never on another interface
    # security=True: temporary TLS credentials, client and workers must present them (see the docstring above).
    # No HTTP routes: the HTTP servers Dask always starts answer 404 to anyone, so no page names a task (a student).
    # Workers' scratch folders (each student's graded copies pass through them) in a folder made here, the grader's
    # alone: Dask's default, <tmp>/dask-scratch-space, is taken as found, and an account that made it first could
    # swap a worker's folder in it for a link to one of its own. The scheduler's too (temporary-directory: its lock
    # files): a student's FIFO at <tmp>/dask-scratch-space/global.lock held the cluster's start until it timed out.
    with tempfile.TemporaryDirectory(prefix="perfaudit-dask-") as scratch, \
            dask.config.set({**NO_HTTP_ROUTES, "temporary-directory": scratch}), \
            LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=loopback_any_port, worker_dashboard_address=loopback_any_port,
                         memory_limit=0, silence_logs=logging.ERROR, security=True, local_directory=scratch) as local:
        with Client(local, set_as_default=False) as client:
            if log:
                client.register_plugin(OutputToLog(log))
            yield client


def allowed_failures(client: Client) -> int:
    return client.run_on_scheduler(_allowed_failures)


def _allowed_failures(dask_scheduler):
    return dask_scheduler.allowed_failures


def describe(client: Client) -> str:
    """One line: where grading runs, and how often a submission whose grading kills its worker is tried."""
    info = client.scheduler_info(n_workers=-1)
    workers = info["workers"].values()
    hosts = {w["host"] for w in workers}
    threads = sum(w["nthreads"] for w in workers)
    tries = allowed_failures(client) + 1
    return (f"Dask scheduler {info['address']}: {len(workers)} worker process(es), {threads} thread(s), on "
            f"{len(hosts)} host(s); a submission whose grading kills its worker is tried {tries} times at most "
            f"(distributed.scheduler.allowed-failures = {tries - 1})")
