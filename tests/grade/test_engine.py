"""Where grading tasks run (perfaudit/grade/engine.py): the scheduler named, reached or refused at once."""

import json
import os
import socket
import subprocess
import sys
import types
from pathlib import Path

import dask
import pytest

from perfaudit.grade import engine


def test_scheduler_addresses_and_files(tmp_path):
    assert engine.scheduler_address("tcp://10.0.0.1:8786") == "tcp://10.0.0.1:8786"
    assert engine.scheduler_address("head:8786") == "tcp://head:8786"
    (tmp_path / "scheduler.json").write_text(json.dumps({"address": "tls://head:8786"}))
    assert engine.scheduler_address(str(tmp_path / "scheduler.json")) == "tls://head:8786"
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(engine.SchedulerUnreachable, match="not a Dask scheduler file"):
        engine.scheduler_address(str(tmp_path / "bad.json"))
    with pytest.raises(engine.SchedulerUnreachable, match="no scheduler file at scheduler.json"):
        engine.scheduler_address("scheduler.json")


def _closed_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_scheduler_that_does_not_answer_is_refused_at_once_with_what_to_do():
    address = f"tcp://127.0.0.1:{_closed_port()}"
    with pytest.raises(engine.SchedulerUnreachable, match=f"cannot reach the Dask scheduler at {address}: "
                                                          "Connection refused. Nothing was graded."):
        engine.probe(address)
    with pytest.raises(engine.SchedulerUnreachable, match="cannot reach"):
        with engine.cluster(address):
            pytest.fail("a client to nothing")
    engine.probe("inproc://somewhere")  # another transport: Dask's to check


def test_a_listening_scheduler_passes_the_probe():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        engine.probe(f"tcp://127.0.0.1:{listening.getsockname()[1]}")


def test_the_description_says_where_grading_runs_and_how_often_a_killing_submission_is_tried():
    client = types.SimpleNamespace(
        scheduler_info=lambda n_workers: {"address": "tcp://10.0.0.1:8786", "workers": {
            "a": {"host": "10.0.0.2", "nthreads": 1}, "b": {"host": "10.0.0.2", "nthreads": 2},
            "c": {"host": "10.0.0.3", "nthreads": 1}}},
        run_on_scheduler=lambda function: function(types.SimpleNamespace(allowed_failures=2)))
    assert engine.describe(client) == (
        "Dask scheduler tcp://10.0.0.1:8786: 3 worker process(es), 4 thread(s), on 2 host(s); a submission whose "
        "grading kills its worker is tried 3 times at most (distributed.scheduler.allowed-failures = 2)")


def test_dask_s_retries_are_set_where_the_cluster_is_made_not_on_import():
    """engine.py names Dask's retry (the only one beside TrustedExecute's: kernel_fate.py); importing it changes
    nothing of Dask's configuration, and the instructor's own setting wins."""
    key = "distributed.scheduler.allowed-failures"
    assert dask.config.get(key) == dask.config.get(key, config=dask.config.merge(*dask.config.defaults))
    assert engine.cluster_settings()[key] == engine.ALLOWED_FAILURES == 2
    with dask.config.set({key: 5}):
        assert key not in engine.cluster_settings()


# Another account of the machine (a hub's student) tries the embedded cluster: loopback is shared by every account,
# and a Dask scheduler runs whatever a client submits.
ATTACK = r"""
import json, os, sys, urllib.request
from distributed import Client
from distributed.security import Security

address, http_ports = sys.argv[1], json.loads(sys.argv[2])
tried = {"uid": os.getuid()}
for name, target, kwargs in (("plain tcp", address.replace("tls://", "tcp://"), {}),
                             ("tls with credentials of its own", address, {"security": Security.temporary()})):
    try:
        client = Client(target, timeout="4s", set_as_default=False, **kwargs)
        tried[name] = f"ran code as uid {client.submit(os.getuid).result()}"
    except Exception as error:
        tried[name] = f"refused ({type(error).__name__})"
for port in http_ports:
    for path in ("/health", "/info/main/workers.html", "/json/counts.json", "/metrics"):
        try:
            tried[f"{port}{path}"] = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=4).status
        except urllib.error.HTTPError as error:
            tried[f"{port}{path}"] = error.code
print(json.dumps(tried))
"""


def test_the_embedded_cluster_refuses_a_client_without_its_credentials(tmp_path):
    with engine.cluster(workers=1) as client:
        assert client.submit(sum, [41, 1]).result() == 42, "the grader's own client, with the credentials"
        assert engine.allowed_failures(client) == engine.ALLOWED_FAILURES  # set where the cluster was made
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        # the workers' scratch, where graded copies pass: in a folder of the grader's alone, never a shared one found
        [scratch] = {Path(d).parent for d in client.run(lambda dask_worker: dask_worker.local_directory).values()}
        assert scratch.parent.name.startswith("perfaudit-dask-") and scratch.parent.stat().st_mode & 0o077 == 0
        info = client.scheduler_info(n_workers=-1)
        http_ports = [info["services"]["dashboard"], *(w["services"]["dashboard"] for w in info["workers"].values())]
        # As root (CI), the attacker is another account; otherwise this account without the credentials.
        as_other = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if os.geteuid() == 0 else []
        home = tmp_path / "home"
        home.mkdir(mode=0o777)
        home.chmod(0o777)
        done = subprocess.run([*as_other, sys.executable, "-c", ATTACK, address, json.dumps(http_ports)],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "HOME": str(home), "DASK_CONFIG": str(home)})
    assert done.returncode == 0, done.stderr[-2000:]
    tried = json.loads(done.stdout.splitlines()[-1])
    assert (tried.pop("uid") != os.getuid()) == bool(as_other)
    assert tried.pop("plain tcp").startswith("refused")
    assert tried.pop("tls with credentials of its own").startswith("refused")
    assert tried and set(tried.values()) == {404}, tried


def test_the_embedded_cluster_starts_past_a_fifo_in_the_shared_scratch_folder(tmp_path):
    """A held-out attacker's FIFO at <tmp>/dask-scratch-space/global.lock, made before the grading service started
    (a machine's /tmp is every account's): the scheduler took that folder as found and its start hung until it timed
    out. Every part of the cluster now keeps its lock files in the grader's own folder."""
    shared = tmp_path / "dask-scratch-space"
    shared.mkdir()
    os.mkfifo(shared / "global.lock")
    started = subprocess.run(
        [sys.executable, "-c", "from perfaudit.grade import engine\n"
         "with engine.cluster(workers=1) as client:\n    print(client.submit(sum, [41, 1]).result())"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert started.returncode == 0 and started.stdout.split() == ["42"], started.stderr[-2000:]
