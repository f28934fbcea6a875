"""A course with nbgrader's exchange, a student beside it, and the grading service as a subprocess: for the tests
of perfaudit.serve (tests/serve/) and benchmarks/serve_latency.py."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import nbformat

from perfaudit import ASSIGNMENT, paths
from perfaudit.fixtures import samples
from perfaudit.instructor import course

COURSE_ID = "jax-performance-audit"  # the course's nbgrader_config.py


def course_with_exchange(root, stages=(1,), settings=""):
    """An instructor's course of the given notebooks, released to its exchange (root/exchange), with extra lines of
    nbgrader_config.py (the service's settings)."""
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    for stage in stages:
        shutil.copy(paths.SOURCE / paths.STAGES[stage], root / "source" / ASSIGNMENT)
    config = (paths.ROOT / "nbgrader_config.py").read_text()
    (root / "nbgrader_config.py").write_text(config + "\n" + settings + "\n")
    course.nbgrader("generate_assignment", ASSIGNMENT, course_dir=root)
    course.nbgrader("release_assignment", ASSIGNMENT, course_dir=root)
    return root


def student_home(root, exchange):
    """A student's folder whose nbgrader_config.py names the course's exchange, their own cache and this folder."""
    root.mkdir(parents=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\nc.Exchange.cache = {str(root / 'cache')!r}\n"
        f"c.Exchange.assignment_dir = {str(root)!r}\n")
    return root


def submit(student, sample, stages=(1,)):
    """Write the sample's notebooks into the student's working copy and run `nbgrader submit` as the student."""
    work = student / ASSIGNMENT
    work.mkdir(exist_ok=True)
    for stage in stages:
        nbformat.write(samples.submission(samples.SAMPLES[sample], stage), work / paths.STAGES[stage])
    return course.nbgrader("submit", ASSIGNMENT, course_dir=student)


def fetch_feedback(student):
    """`nbgrader fetch_feedback` as the student: {submission timestamp: {notebook: page text}}."""
    course.nbgrader("fetch_feedback", ASSIGNMENT, course_dir=student)
    found = {}
    for page in sorted((student / ASSIGNMENT / "feedback").glob("*/*.html")):
        found.setdefault(page.parent.name, {})[page.stem] = page.read_text()
    return found


def ledger(course_dir):
    path = Path(course_dir) / "gradebook.db.serve.json"
    return json.loads(path.read_text())["submissions"] if path.exists() else {}


def wait_for(course_dir, done, what, timeout_s=600, service=None):
    """Poll the ledger until done(submissions) holds; fail with the service's log when it does not in time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = ledger(course_dir)
        if done(found):
            return found
        if service is not None and service.process.poll() is not None:
            raise AssertionError(f"the service stopped while waiting for {what}:\n{service.log()}")
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}: {json.dumps(ledger(course_dir), indent=1)}\n"
                         f"{service.log() if service else ''}")


class Service:
    """python -m perfaudit.serve in its own process group, its output in a file."""

    def __init__(self, course_dir, *args):
        self.log_path = Path(course_dir) / f"serve-{time.monotonic_ns()}.log"
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        with open(self.log_path, "w") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "perfaudit.serve", *args], cwd=course_dir,
                                            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def log(self):
        return self.log_path.read_text()

    def kill(self):
        """SIGKILL to the service and every process it started (its Dask workers, their kernels)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self):
        """SIGTERM: the service stops after the step it is in."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


@contextmanager
def service(course_dir, *args):
    running = Service(course_dir, *args)
    try:
        yield running
    finally:
        running.stop()
