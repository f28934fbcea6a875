"""The trust boundary (perfaudit/autograde/isolation/boundary.py), for real: bubblewrap, real kernels, no mocks.

- The boundary probe, run in a graded kernel, finds nothing writable and no socket outside a capped folder in memory,
  as root and as an account of its own with subordinate uids (how the hub's grading service grades).
- Code of a submission that runs before the kernel answers (a submitted ipykernel_launcher.py, found first on the
  kernel's path) plants a link to a host file, a folder or a FIFO in the kernel's socket folder, or tries to replace
  the connection file: the grader refuses that kernel as the submission's doing, and no host file changes.
"""

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from accounts_made import grading_account
from boundary_probe import PROBE, outside_the_cap
from nbformat.v4 import new_code_cell, new_notebook

from perfaudit import paths
from perfaudit.autograde.isolation import boundary, kernel_fate, sandbox
from perfaudit.autograde.isolation.limits import SandboxLimits
from perfaudit.autograde.plugins.execute import NOT_RUN, TrustedExecute
from perfaudit.hub import userenv

needs_bubblewrap = pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}")


def _caps():
    """The folders the kernel may write, each with the most bytes it may hold."""
    scratch = SandboxLimits().scratch_mb * 2**20
    return {sandbox.SCRATCH: scratch, "/tmp": scratch, sandbox.KERNEL_DIR: boundary.SOCKETS_BYTES}


def _execute(cells, folder):
    nb = new_notebook(cells=[new_code_cell(source) for source in cells])
    execute = TrustedExecute(timeout=120)
    nb, _ = execute.preprocess(nb, {"metadata": {"path": str(folder)}})
    return nb, execute


def _printed(cell):
    errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
    return errors[0] if errors else "".join(o.get("text", "") for o in cell.outputs)


@needs_bubblewrap
def test_the_probe_finds_nothing_writable_outside_the_capped_folders_in_memory(tmp_path):
    nb, _ = _execute([PROBE], tmp_path)
    found = json.loads(_printed(nb.cells[0]))
    assert outside_the_cap(found, _caps()) == []
    # what it may write, it can: the probe sees the folders it is held to
    assert {sandbox.SCRATCH, "/tmp"} <= set(found["writable"])
    assert sorted(found["sockets"]) == [f"{sandbox.KERNEL_DIR}/kernel-{n}" for n in range(1, 6)]


def test_the_probe_reports_a_writable_folder_on_disk_and_a_socket_there():
    """The probe's rule can fail: a bind of the grader's disk, a socket on it, a descriptor writing to it."""
    found = {"mounts": {"/": ["tmpfs", "rw", "rw"], "/run/kernel": ["ext4", "rw", "rw"],
                        "/tmp": ["tmpfs", "rw", "rw,size=1024k"]},
             "writable": ["/run/kernel", "/tmp", "/dev/null"], "sockets": ["/run/kernel/kernel-1"],
             "descriptors": {"3": ["/run/kernel/x", True], "4": ["/usr/lib/y", False], "5": ["pipe:[1]", True]}}
    assert outside_the_cap(found, {"/tmp": 2**20}) == [
        "writable: /run/kernel (on /run/kernel: ext4 rw rw)",
        "socket: /run/kernel/kernel-1 (on /run/kernel: ext4 rw rw)",
        "descriptor 3 open for writing: /run/kernel/x"]
    assert outside_the_cap(found, {"/tmp": 2**19})[1:2] == ["writable: /tmp (on /tmp: tmpfs rw rw,size=1024k)"]


# Code of a submission that runs before the kernel answers: a submitted ipykernel_launcher.py is found first on the
# kernel's path (it starts in the scratch folder). It plants what PLANT says, then starts the real kernel.
LAUNCHER = '''
import json, os, runpy, sys, time

info = json.load(open("{connection}"))
sockets = "{sockets}"
target = {target!r}
for port in [info[key] for key in info if key.endswith("_port")]:
    {plant_at_each}
{plant}
for attempt in (lambda: os.replace("/tmp/x", "{connection}"), lambda: os.unlink("{connection}")):
    open("/tmp/x", "w").write("{{}}")
    try:
        attempt()
    except OSError:
        pass
time.sleep(2)  # a kernel that cannot bind (a folder at a socket's name) dies at once: the grader looks first
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
sys.modules.pop("ipykernel_launcher", None)  # run as __main__: absent, unless imported
runpy.run_module("ipykernel_launcher", run_name="__main__")
'''

PLANTS = {
    # the first fresh attack's: the grader acted on <its folder>/kernel-inside.json, here a link to a host file
    "a link to a host file": ("pass", 'os.symlink(target, sockets + "/kernel-inside.json")'),
    "a folder filled past the cap": ("pass", 'os.mkdir(sockets + "/stash")\n'
                                     'try:\n    open(sockets + "/stash/fill", "wb").write(b"x" * 2**20)\n'
                                     'except OSError as error:\n    print("fill:", error, file=sys.stderr)'),
    "a FIFO": ("pass", 'os.mkfifo(sockets + "/kernel-inside.json")'),
    # names that would flood the refusal, or colour a terminal
    "300 files with escapes in their names": ("pass", 'for i in range(300):\n'
                                              '    open(sockets + f"/odd\\x1b[31m{i}", "w").close()'),
    # at every socket's own name: zmq's bind replaces a link, so these keep the kernel from binding at all
    "a folder at each socket's name": ('os.mkdir(f"{sockets}/kernel-{port}")', "pass"),
}


def _host_file(tmp_path):
    host = tmp_path / "host-file"
    host.write_text("the grader's")
    host.chmod(0o600)
    return host


def _stat(path):
    info = os.lstat(path)
    return info.st_uid, info.st_gid, info.st_mode, info.st_size, info.st_mtime_ns, Path(path).read_text()


@needs_bubblewrap
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_what_code_of_the_submission_plants_before_the_kernel_answers_is_refused_and_changes_no_host_file(
        tmp_path, plant):
    host = _host_file(tmp_path)
    if os.geteuid() == 0:
        os.chown(host, 12345, 12345)  # not root's: a chown to root would show
    before = _stat(host)
    python = Path(sys.executable)
    before_python = python.resolve().stat().st_mode
    at_each, once = PLANTS[plant]
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "ipykernel_launcher.py").write_text(LAUNCHER.format(
        connection=sandbox.CONNECTION_FILE, sockets=sandbox.KERNEL_DIR, target=str(host), plant_at_each=at_each,
        plant=once))
    nb, execute = _execute(["print('ran')"], submission)
    assert _stat(host) == before
    assert python.resolve().stat().st_mode == before_python
    [error] = nb.cells[0].outputs
    assert error.ename == NOT_RUN and "the kernel was not used: the kernel's socket folder holds" in error.evalue
    assert "code of the submission ran before the kernel answered" in error.evalue
    assert "\x1b" not in error.evalue and len(error.evalue) < 1000
    if plant.startswith("300 files"):
        # named as found: the grader may look while the files are still being made
        assert "'odd\\x1b[31m0' (a file)" in error.evalue and re.search(r" and \d+ more: ", error.evalue)
    assert execute.run.ending.fate is kernel_fate.Fate.STUDENTS_DOING  # once, and no environment check


@needs_bubblewrap
def test_a_submission_that_fills_its_own_folders_fills_nothing_of_the_grader_s(tmp_path, monkeypatch):
    """Its writes stop at its own caps (ENOSPC there is its own failure, and later cells run); the grader's own folder
    for the kernel, in its TMPDIR, is gone afterwards."""
    grader_tmp = tmp_path / "grader-tmp"
    grader_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(grader_tmp))
    (tmp_path / "submission").mkdir()
    cap = SandboxLimits().scratch_mb

    def fill(folder):
        return (f"import os\ntotal = 0\ntry:\n    for i in range(10_000):\n"
                f"        with open(f'{folder}/fill-{{i}}', 'wb') as f:\n            f.write(b'x' * 2**20)\n"
                f"        total += 1\nexcept OSError as error:\n    print(type(error).__name__, error.errno, "
                f"total <= {cap})")

    nb, _ = _execute([fill("."), fill("/tmp"), fill(sandbox.KERNEL_DIR), "print('still running')"],
                     tmp_path / "submission")
    assert [_printed(cell) for cell in nb.cells] == ["OSError 28 True\n", "OSError 28 True\n",
                                                      "PermissionError 13 True\n", "still running\n"]
    assert [p.name for p in grader_tmp.iterdir() if p.name.startswith("perfaudit-kernel-")] == []


# As the hub's grading service grades: an account of its own, not root, with subordinate uids (useradd gives them).
RUN_AS_ACCOUNT = '''
import json, sys
from nbformat.v4 import new_code_cell, new_notebook
from perfaudit.autograde.plugins.execute import TrustedExecute

ids = "import os; print(os.getuid(), *open('/proc/self/uid_map').read().split())"
nb = new_notebook(cells=[new_code_cell(sys.stdin.read()), new_code_cell(ids)])
execute = TrustedExecute(timeout=120, startup_timeout=int(sys.argv[2]))
nb, _ = execute.preprocess(nb, {"metadata": {"path": sys.argv[1]}})
print(json.dumps([[o.get("text") or o.get("evalue") for o in cell.outputs] for cell in nb.cells]))
print(json.dumps(execute.run.ending and execute.run.ending.fate.name))
'''


@pytest.fixture(scope="module")
def account(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("this test makes a Linux account: run it as root (CI does)")
    thin = Path(tempfile.mkdtemp(prefix="perfaudit-thin-python-"))
    thin.chmod(0o755)
    try:
        with grading_account("pabound") as name:
            yield name, userenv.accounts_python(Path(sys.executable).parent, thin / "venv")
    finally:
        shutil.rmtree(thin, ignore_errors=True)


def _grade_as(account, first_cell, files=None, startup_timeout=60, ending=None):
    """Run a notebook (first_cell, then a cell printing the kernel's ids) through TrustedExecute as `account`, from a
    submission holding `files`: each cell's outputs (text, or an error's value)."""
    name, python = account
    folder = Path(tempfile.mkdtemp(prefix="perfaudit-submission-"))
    try:
        folder.chmod(0o755)
        for filename, text in (files or {}).items():
            (folder / filename).write_text(text)
            (folder / filename).chmod(0o644)
        env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "HOME": pwd.getpwnam(name).pw_dir, "LANG": "C.UTF-8",
               "PYTHONPATH": str(paths.ROOT)}
        runuser = shutil.which("runuser") or "/usr/sbin/runuser"
        done = subprocess.run([runuser, "-u", name, "--", str(python), "-c", RUN_AS_ACCOUNT, str(folder),
                               str(startup_timeout)],
                              input=first_cell, capture_output=True, text=True, env=env, cwd="/", timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        if ending is not None:
            ending.append(json.loads(done.stdout.splitlines()[-1]))
        return json.loads(done.stdout.splitlines()[-2])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@needs_bubblewrap
@pytest.mark.slow
def test_without_root_the_sandbox_runs_as_a_subordinate_uid_within_the_same_boundary(account):
    [probe], [ids] = _grade_as(account, PROBE)
    found = json.loads(probe)
    assert outside_the_cap(found, _caps()) == []
    inner, *uid_map = [int(n) for n in ids.split()]
    outside = {inside + i: first + i for inside, first, count in zip(*[iter(uid_map)] * 3) for i in range(count)}
    uid = pwd.getpwnam(account[0]).pw_uid
    assert outside[0] == uid and outside[inner] != uid  # the account is only its namespace's root, never the kernel
    assert outside[inner] > 65535  # one of the account's subordinate uids


@needs_bubblewrap
@pytest.mark.slow
@pytest.mark.parametrize("plant", ["a link to a host file", "a FIFO"])
def test_without_root_what_the_submission_plants_is_refused_and_changes_none_of_the_account_s_files(account, plant):
    name = account[0]
    own = Path(pwd.getpwnam(name).pw_dir) / "course-file"  # the account's own, as the course is the owner's
    own.write_text("the owner's")
    os.chown(own, pwd.getpwnam(name).pw_uid, pwd.getpwnam(name).pw_gid)
    own.chmod(0o600)
    before = _stat(own)
    at_each, once = PLANTS[plant]
    launcher = LAUNCHER.format(connection=sandbox.CONNECTION_FILE, sockets=sandbox.KERNEL_DIR, target=str(own),
                               plant_at_each=at_each, plant=once)
    [refused], [not_run] = _grade_as(account, "print('ran')", {"ipykernel_launcher.py": launcher})
    assert _stat(own) == before
    assert "the kernel was not used: the kernel's socket folder holds" in refused
    assert not_run == refused


# Left by a submitted ipykernel_launcher.py: once the kernel has bound its sockets (and the grader sealed their
# folder), a process takes every permission off them. The sandbox's uid owns them: without root, the grader can then
# not connect.
CHMOD_SOCKETS = """
import glob, os, runpy, sys, time
if os.fork() == 0:
    os.setsid()
    deadline = time.time() + 30
    while time.time() < deadline:
        sockets = glob.glob("/run/kernel/kernel-*")
        if len(sockets) >= 5:
            for path in sockets:
                os.chmod(path, 0)
        time.sleep(0.001)
    os._exit(0)
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
sys.modules.pop("ipykernel_launcher", None)
runpy.run_module("ipykernel_launcher", run_name="__main__")
"""


@needs_bubblewrap
@pytest.mark.slow
def test_without_root_sockets_closed_to_the_grader_are_the_submission_s_doing(account):
    """Graded once, as the student's doing: not twice and then the environment check, as a kernel that never
    started (found by a fresh attack)."""
    ending: list = []
    [not_run], _ = _grade_as(account, "print('ran')", {"ipykernel_launcher.py": CHMOD_SOCKETS}, startup_timeout=15,
                             ending=ending)
    assert not_run.startswith("not run: the kernel did not answer: the kernel's sockets had their modes changed")
    assert "'kernel-1' (000)" in not_run
    assert ending == ["STUDENTS_DOING"]


@needs_bubblewrap
@pytest.mark.slow
def test_without_root_the_sandbox_makes_no_user_namespace_that_would_count_against_the_account(account):
    """Each user namespace made in the sandbox would count against the grading account's own limit: a submission
    that made them by the thousand would leave the class's later sandboxes unable to start."""
    tries = ("import subprocess\ndone = subprocess.run(['unshare', '--user', 'true'], capture_output=True, text=True)\n"
             "print(done.returncode, done.stderr.strip())")
    [said], _ = _grade_as(account, tries)
    assert said == "1 unshare: unshare failed: No space left on device\n"


def test_an_account_without_subordinate_ids_is_told_how_to_get_them():
    """Without root the sandbox runs as one of the account's subordinate uids: lacking them, grading refuses, saying
    what to run (root's own are looked up here: root has none)."""
    if os.geteuid() != 0 or sandbox._subordinate_range("/etc/subuid") or not shutil.which("newuidmap"):
        pytest.skip("needs root without subordinate ids of its own, and newuidmap")
    why = sandbox._own_ids_missing()
    assert why == ("/etc/subuid gives the account root fewer than 65536 subordinate ids: without root, the sandbox "
                   "runs as one of them, never as you (as root: `usermod --add-subuids 100000-165535 root`, a range "
                   "no other account uses)")
