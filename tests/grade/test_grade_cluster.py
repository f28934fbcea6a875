"""Grading on a Dask cluster: a real `dask scheduler` and two `dask worker` processes on loopback, started here.

One worker is killed (kill -9) while it grades a student: that student is graded by another worker process and
recorded once, with the exact scores. A submission whose grading kills every worker that takes it is stopped
after the configured number of tries and reported. The same class graded with the local cluster (`make grade`)
and on the loopback cluster gives identical gradebooks, test by test.
"""

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from courses import FULL, NB2, NONE, make_course
from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT, paths
from perfaudit.fixtures import samples
from perfaudit.grade.engine import SchedulerUnreachable
from perfaudit.grade.run import Options, run
from perfaudit.instructor import course

EXPECTED = {
    "correct-on-a-worker-killed-mid-grading": FULL,
    "untouched": NONE,
    "malformed-json-in-03": {**NONE, NB2: 6},
    "empty-submission": NONE,
}
KILLED_STUDENT = "correct-on-a-worker-killed-mid-grading"
POISON = "kills-its-worker-every-time"
ALLOWED_FAILURES = 1  # the scheduler's distributed.scheduler.allowed-failures: a poison is tried twice


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _env():
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(ALLOWED_FAILURES),
            "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"}


@pytest.fixture(scope="module")
def loopback_cluster(tmp_path_factory):
    """(scheduler address, scheduler file): `dask scheduler` and two `dask worker`, as docs/grading-at-scale.md says."""
    folder = tmp_path_factory.mktemp("dask")
    port, scheduler_file = _free_port(), folder / "scheduler.json"
    bin_dir = Path(sys.executable).parent
    log = open(folder / "cluster.log", "w")
    processes = [subprocess.Popen([bin_dir / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                   "--no-dashboard", "--scheduler-file", scheduler_file],
                                  env=_env(), stdout=log, stderr=subprocess.STDOUT)]
    address = f"tcp://127.0.0.1:{port}"
    processes += [subprocess.Popen([bin_dir / "dask", "worker", address, "--nworkers", "1", "--nthreads", "1",
                                    "--host", "127.0.0.1", "--no-dashboard", "--memory-limit", "0",
                                    "--local-directory", folder / f"worker{i}"],
                                   env=_env(), stdout=log, stderr=subprocess.STDOUT) for i in (1, 2)]
    from distributed import Client

    try:
        with Client(address, timeout="60s", set_as_default=False) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, scheduler_file
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()


class Killer(threading.Thread):
    """kill -9 the worker process grading a student's task, as a fault would: `times` times at most."""

    def __init__(self, address, student, times, after_s):
        super().__init__(daemon=True)
        self.address, self.student, self.times, self.after_s = address, student, times, after_s
        self.killed, self.stop = [], threading.Event()

    def run(self):
        from distributed import Client

        seen = {}  # (worker, key) -> when first seen processing
        with Client(self.address, timeout="30s", set_as_default=False) as client:
            while not self.stop.is_set() and len(self.killed) < self.times:
                for worker, keys in client.processing().items():
                    for key in keys:
                        if not str(key).startswith(f"grade-{self.student}-"):
                            continue
                        first = seen.setdefault((worker, key), time.monotonic())
                        if time.monotonic() - first < self.after_s:
                            continue
                        try:
                            pid = client.run(os.getpid, workers=[worker])[worker]
                            os.kill(pid, signal.SIGKILL)
                        except Exception:  # gone already
                            continue
                        self.killed.append((worker, pid))
                        seen.clear()
                        time.sleep(2)  # until the scheduler has seen it go
                        break
                self.stop.wait(0.5)


def _class(root):
    samples.write_submission("correct", root / "submitted")
    (root / "submitted" / "correct").rename(root / "submitted" / KILLED_STUDENT)
    samples.write_submission("untouched", root / "submitted")
    for name in ("malformed-json-in-03", "empty-submission"):
        samples.write_broken(name, root / "submitted")
    return root


def _grades(root):
    """Every grade and comment of the gradebook: {(student, notebook, cell): (auto score, auto comment)}."""
    found = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for sub in gradebook.find_assignment(ASSIGNMENT).submissions:
            for nb in sub.notebooks:
                for grade in nb.grades:
                    found[sub.student.id, nb.name, grade.name] = (grade.auto_score, grade.needs_manual_grade)
                for comment in nb.comments:
                    found[sub.student.id, nb.name, comment.name] = comment.auto_comment
            assert len([s for s in gradebook.find_assignment(ASSIGNMENT).submissions
                        if s.student.id == sub.student.id]) == 1
    return found


def _scores(root):
    return {s: {nb: score for nb, (score, _) in nbs.items()} for s, nbs in course.scores(root).items()}


@pytest.fixture(scope="module")
def on_the_cluster(loopback_cluster, tmp_path_factory):
    """The class graded on the loopback cluster, one worker killed with kill -9 while it grades a student."""
    address, _ = loopback_cluster
    root = _class(make_course(tmp_path_factory.mktemp("on-cluster")))
    killer = Killer(address, KILLED_STUDENT, times=1, after_s=3)
    killer.start()
    out = io.StringIO()
    try:
        batch = run(Options(course_dir=root, scheduler=address, progress=False, cell_timeout=60), out=out)
    finally:
        killer.stop.set()
        killer.join(timeout=30)
    return root, batch, out.getvalue(), killer.killed


@pytest.mark.slow
def test_a_worker_killed_mid_grading_loses_nobody(on_the_cluster):
    root, batch, summary, killed = on_the_cluster
    assert len(killed) == 1, f"no worker was killed while it graded {KILLED_STUDENT}"
    assert _scores(root) == EXPECTED, summary
    assert sorted(batch.graded) == sorted(EXPECTED), "a student was graded twice or not at all"
    assert "2 worker process(es)" in summary and "Environment check: passed" in summary
    assert sorted(p.parents[1].name for p in (root / "feedback").glob(f"*/{ASSIGNMENT}/*.html")) == (
        [KILLED_STUDENT] * len(paths.STAGES) + ["malformed-json-in-03"] + ["untouched"] * len(paths.STAGES))


@pytest.mark.slow
def test_the_local_cluster_and_the_loopback_cluster_give_identical_gradebooks(on_the_cluster, tmp_path):
    cluster_root, _, _, _ = on_the_cluster
    root = _class(make_course(tmp_path / "local"))
    # make grade, with the cluster's cell timeout; without the environment check, which that setting would run again
    # (8 kernels) and which writes nothing in the gradebook: the cluster's workers ran theirs (the test above).
    run(Options(course_dir=root, workers=2, progress=False, cell_timeout=60, canary=False), out=io.StringIO())
    assert _scores(root) == EXPECTED
    assert _grades(root) == _grades(cluster_root)


@pytest.mark.slow
def test_a_submission_that_kills_every_worker_is_stopped_and_reported(loopback_cluster, tmp_path):
    address, scheduler_file = loopback_cluster
    root = make_course(tmp_path / "poison")
    samples.write_submission("correct", root / "submitted")
    (root / "submitted" / "correct").rename(root / "submitted" / POISON)
    killer = Killer(address, POISON, times=ALLOWED_FAILURES + 2, after_s=0)
    killer.start()
    out = io.StringIO()
    try:  # by its scheduler file, this time
        batch = run(Options(course_dir=root, scheduler=str(scheduler_file), canary=False, progress=False), out=out)
    finally:
        killer.stop.set()
        killer.join(timeout=30)
    assert len(killer.killed) == ALLOWED_FAILURES + 1, "tried more often than configured"
    assert batch.graded == [POISON]
    assert _scores(root) == {POISON: NONE}
    assert f"grading it killed the worker process {ALLOWED_FAILURES + 1} times: not tried again" in out.getvalue()


def test_an_unreachable_scheduler_is_refused_at_once(tmp_path):
    with pytest.raises(SchedulerUnreachable, match="cannot reach the Dask scheduler at tcp://127.0.0.1:"):
        run(Options(course_dir=tmp_path, scheduler=f"tcp://127.0.0.1:{_free_port()}"), out=io.StringIO())
    with pytest.raises(SchedulerUnreachable, match="no scheduler file at"):
        run(Options(course_dir=tmp_path, scheduler=str(tmp_path / "scheduler.json")), out=io.StringIO())
    (tmp_path / "scheduler.json").write_text(json.dumps({"address": f"tcp://127.0.0.1:{_free_port()}"}))
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)  # a course directory, as the command checks first
    done = subprocess.run([sys.executable, "-m", "perfaudit.grade", "--scheduler", "scheduler.json"], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "cannot reach the Dask scheduler" in done.stderr, done.stderr
    assert not (tmp_path / "gradebook.db").exists() and not (tmp_path / "autograded").exists()
