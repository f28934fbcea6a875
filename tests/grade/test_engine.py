"""Where grading tasks run (perfaudit/grade/engine.py): the scheduler named, reached or refused at once."""

import json
import socket
import types

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
