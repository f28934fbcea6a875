"""The gradebook on a real PostgreSQL server, started here, written by the grading client alone.

Debian's postgresql package provides the server (.ci/run installs it). The server runs from a temporary
data directory on a free port, as the `postgres` user when the tests run as root (initdb refuses root).
"""

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
from conftest import make_course

from perfaudit import course
from perfaudit.fixtures import samples

pytestmark = pytest.mark.slow  # minutes: the fast tier (make test-fast) leaves it out

NB1, NB2, NB3, NB4 = "01-first-call-vs-steady", "02-retracing", "03-evidence", "04-integrated-audit"
NONE = {NB1: 0, NB2: 0, NB3: 0, NB4: 0}
EXPECTED = {
    "correct": {NB1: 5, NB2: 6, NB3: 4, NB4: 5},
    "deleted-test-cell-in-02": {**NONE, NB2: 5},
    "split-solution-cell-in-02": {**NONE, NB2: 6},
    "misnamed-02": NONE,
    "empty-submission": NONE,
}


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_server_user(args):
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture(scope="module")
def postgres_url():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    assert found, "PostgreSQL server binaries not found: install Debian's postgresql package (see .ci/run)"
    bin_dir = os.path.dirname(found[-1])
    data = tempfile.mkdtemp(prefix="perfaudit-pg-")
    if os.geteuid() == 0:
        shutil.chown(data, "postgres")
    port = _free_port()
    subprocess.run(
        _as_server_user([f"{bin_dir}/initdb", "-D", data, "-A", "trust", "-U", "postgres"]),
        check=True, capture_output=True,
    )
    subprocess.run(_as_server_user([
        f"{bin_dir}/pg_ctl", "-D", data, "-l", f"{data}/server.log", "-w", "start",
        "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1",
    ]), check=True, capture_output=True)
    try:
        subprocess.run(
            [f"{bin_dir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "gradebook"],
            check=True, capture_output=True,
        )
        yield f"postgresql://postgres@127.0.0.1:{port}/gradebook"
    finally:
        stop = [f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]
        subprocess.run(_as_server_user(stop), capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def test_a_postgresql_gradebook_written_by_the_client_alone(postgres_url, tmp_path):
    """Two worker processes grade; the one client writes PostgreSQL; a second run finds everyone graded."""
    root = make_course(tmp_path / "course", db_url=postgres_url)
    samples.write_submission("correct", root / "submitted")
    for name in set(EXPECTED) - {"correct"}:
        samples.write_broken(name, root / "submitted")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "perfaudit.grade", f"--db={postgres_url}", "--workers=2", "--no-progress"]
    runs = [subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=900) for _ in range(2)]
    outputs = [done.stdout + done.stderr for done in runs]
    assert [done.returncode for done in runs] == [0, 0], "\n".join(outputs)

    from nbgrader.api import Gradebook

    with Gradebook(postgres_url, "jax-performance-audit") as gradebook:
        got = {
            sub.student.id: {nb.name: nb.score for nb in sub.notebooks}
            for sub in gradebook.find_assignment("performance-audit").submissions
        }
    assert got == EXPECTED, "\n".join(outputs)
    assert f"Scores ({len(EXPECTED)} graded now, 0 unchanged" in outputs[0]
    assert f"Scores (0 graded now, {len(EXPECTED)} unchanged" in outputs[1]
    assert not (root / "gradebook.db").exists(), "nothing may fall back to the sqlite default"
    course.nbgrader("export", f"--db={postgres_url}", course_dir=root)
    assert (root / "grades.csv").read_text().count("\n") == len(EXPECTED) + 1
