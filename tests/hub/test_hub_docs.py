"""docs/hub.md's "From a fresh machine to forty accounts", run as an instructor types it, on a fresh clone.

The commands come from the doc itself: the ```bash blocks of that section from its steps 1 to 3 (after the system
packages' apt-get, up to `sudo ... make hub`), in order, each run by bash as root in the folder the doc's `cd`
names, and the roster written from the doc's example roster into that folder before the first command that reads it.
The last command, `sudo ... make hub`, runs in the background in a session of its own. What must differ on a shared
test machine is substituted, each in one place (SUBSTITUTIONS, ROSTER_NAMES): the owner account's name, /srv/course,
the clone's URL (a git bundle of this checkout's committed HEAD: git refuses to clone a repository another account
owns, "dubious ownership"), the roster's names, and the hub's settings (docs/hub.md, **Settings**), given on sudo's
command line as the doc says (sudo drops the caller's environment), with this machine's certificate authority for
npm where it has one of its own (NETWORK). So `make hub-users` makes the course venv as the owner with pip from the
package registry (requirements-cpu.txt; no wheel cache of the test's), and `make hub` installs the proxy with npm,
makes the exchange and starts the hub.

Then the roster's first student does what the Assignment List does, as their account, in their home, with the
environment the hub gives their server (perfaudit/hub/jupyterhub_config.py): `nbgrader fetch_assignment`, notebook 1
replaced by the correct sample (perfaudit.fixtures.samples, as tests/hub/test_hub.py does), `nbgrader submit`. The
hub's grading service grades it: notebook 1's exact score from the gradebook, and `nbgrader fetch_feedback` brings
the student the page with it. Afterwards the hub's process tree, the accounts, the groups and the folders are gone.
"""

import grp
import os
import pwd
import re
import shlex
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from chromium import free_port
from hub_started import left_listening, wait_for_hub
from serve_course import wait_for

from perfaudit import ASSIGNMENT, paths
from perfaudit.fixtures import samples
from perfaudit.hub import accounts, settings
from perfaudit.instructor import course

pytestmark = pytest.mark.slow  # a venv from the registry, the proxy from npm, a hub, a grading: minutes

DOC = paths.ROOT / "docs" / "hub.md"
MAKE_HUB = "sudo PERFAUDIT_HUB_DOMAIN=https://hub.example.edu make hub"  # step 3, as the doc writes it
SECTION = "## From a fresh machine to forty accounts"
NOTEBOOK = paths.STAGES[1]
STEM = NOTEBOOK.removesuffix(".ipynb")
SCORE = (5, 5)  # the correct sample's notebook 1
SETUP_S = 540  # the doc's steps before the hub: a venv from the registry on two busy cores
HUB_START_S = 240  # the hub waits for Formgrader's JupyterLab before it answers
NETWORK = ("NODE_EXTRA_CA_CERTS",)  # passed through sudo where set: see the test
GRADED_S = 600  # the whole assignment (five notebooks, four of them as released) in the grading sandbox


def section_commands(text):
    """The command lines of the section's ```bash blocks, in order, continuation lines joined, comments dropped."""
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                lines.append(" ".join(line.split()))
    return lines


def example_roster(text):
    """The section's example roster: the first plain ``` block after "Write a roster"."""
    after = text.split(SECTION, 1)[1].split("Write a roster", 1)[1]
    found = re.search(r"```\n(.*?)```", after, re.S)
    assert found, "docs/hub.md's step 2 shows no example roster"
    return textwrap.dedent(found[1])  # as the instructor writes it: without the list item's indent


def substituted(line, substitutions):
    for pattern, replacement in substitutions:
        line = re.sub(pattern, lambda _: replacement, line)
    return line


def test_the_doc_s_commands_as_written_grade_a_first_submission(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("the doc's commands make Linux accounts and run the hub as root: run it as root (CI does)")
    if shutil.which("sudo") is None:
        pytest.fail("docs/hub.md's commands run sudo: apt-get install sudo (the doc's apt-get line has it)")
    text = DOC.read_text()
    commands = section_commands(text)
    assert commands[0].startswith("apt-get install "), commands  # system packages: installed before the suite
    assert MAKE_HUB in commands, commands  # step 3: the hub, run in the background below
    commands = commands[1:commands.index(MAKE_HUB) + 1]  # steps 1 to 3 (the section goes on: the exchange)
    roster_text = example_roster(text)
    people = accounts.read_roster(_written(tmp_path / "example-roster.txt", roster_text))
    students = [name for name, role, _ in people if role == "student"]
    assert students and any(role == "instructor" for _, role, _ in people), people

    tag = os.urandom(3).hex()
    # Every account reaches the course and the exchange by path: not under pytest's root-only folder.
    shared = Path(tempfile.gettempdir()) / f"perfaudit-hubdocs-{tag}"  # made in the try below, removed after it
    owner = f"pa{tag}own"
    course_dir = shared / "course"
    bundle = shared / "course.bundle"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    hub_settings = {"PERFAUDIT_HUB_URL": url, "PERFAUDIT_HUB_DOMAIN": f"http://hub{tag}.test:{port}",
                    "PERFAUDIT_EXCHANGE": str(shared / "exchange"),
                    "PERFAUDIT_HUB_PORTS": ",".join(str(free_port()) for _ in range(3)),
                    "PERFAUDIT_SERVE_ARGS": "--workers 1 --skip-canary"}
    # This machine's own trust for the network (a TLS proxy's certificate authority, where it has one), which sudo
    # drops too: without it npm ci of `make hub` retries the registry for minutes. pip reads the system's.
    network = {k: os.environ[k] for k in NETWORK if k in os.environ}
    # What differs from the doc on a shared test machine, and nothing else:
    SUBSTITUTIONS = [
        (r"\bgrader\b", owner),  # the course's owner account: a name of this run's own
        (r"/srv/course\b", str(course_dir)),  # a folder whose parents every account can search
        (r"(?<=git clone )\.\.\.", str(bundle)),  # this checkout's committed HEAD, as a git bundle
        # the hub's settings on sudo's command line, as docs/hub.md's **Settings** says: free loopback ports, an
        # exchange of this run's own, one grading worker and no canary (two busy cores)
        # (and the machine's trust for the network, as above)
        # (the doc's domain among them: this run's, a name nothing resolves, as the student here uses no browser)
        (r"^sudo (PERFAUDIT_HUB_DOMAIN=\S+ )?make\b", "sudo " + " ".join(
            f"{k}={shlex.quote(v)}" for k, v in {**network, **hub_settings}.items()) + " make"),
    ]
    ROSTER_NAMES = {name: f"pa{tag}{n}" for n, (name, _, _) in enumerate(people)}  # the roster's accounts
    roster = "\n".join(substituted(line, [(rf"^{re.escape(a)}\b", b) for a, b in ROSTER_NAMES.items()])
                       for line in roster_text.splitlines()) + "\n"
    assert [name for name, _, _ in accounts.read_roster(_written(tmp_path / "roster.txt", roster))] == list(
        ROSTER_NAMES.values()), roster  # only this run's accounts are made
    student = ROSTER_NAMES[students[0]]
    # This checkout's course (its course id and groups are the clone's): the teardown reads it, clone or none.
    this_course = settings.from_environment({})
    course_groups = this_course.groups()
    hub = None
    uids = set()
    timings = {}
    try:
        shared.mkdir()
        shared.chmod(0o755)
        subprocess.run(["git", "bundle", "create", "-q", str(bundle), "HEAD"], cwd=paths.ROOT, check=True)
        bundle.chmod(0o644)
        cwd = Path("/")
        started = time.monotonic()
        for written in commands[:-1]:
            line = substituted(written, SUBSTITUTIONS)
            if line.startswith("cd "):
                cwd = Path(shlex.split(line)[1])
                continue
            if "ROSTER=roster.txt" in line and not (cwd / "roster.txt").exists():
                # as the instructor writes it, where they run the command, as the course's owner (step 2)
                os.chown(_written(cwd / "roster.txt", roster), pwd.getpwnam(owner).pw_uid, pwd.getpwnam(owner).pw_gid)
            _run(line, cwd, SETUP_S)
            timings[written] = time.monotonic() - started
        uids = {pwd.getpwnam(name).pw_uid for name in [owner, *ROSTER_NAMES.values()]}
        assert cwd == course_dir, cwd
        log = shared / "hub.log"
        with open(log, "w") as out:
            hub = subprocess.Popen(["bash", "-c", substituted(commands[-1], SUBSTITUTIONS)], cwd=cwd, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_hub(url, hub, log, HUB_START_S, MAKE_HUB)
        timings["hub answering"] = time.monotonic() - started
        print("seconds since the first command:", {k: round(v) for k, v in timings.items()})

        # The student's Assignment List: fetch, work, submit, as their account, as their server runs nbgrader.
        home = Path(pwd.getpwnam(student).pw_dir)
        fetched = _as_student(student, course_dir, shared / "exchange", "fetch_assignment", ASSIGNMENT)
        assert fetched.returncode == 0, fetched.stdout[-2000:] + fetched.stderr[-3000:]
        work = home / ASSIGNMENT / NOTEBOOK
        assert work.is_file(), f"fetch_assignment did not put {NOTEBOOK} in {student}'s home"
        nbformat.write(samples.submission(samples.SAMPLES["correct"], 1), work)
        account = pwd.getpwnam(student)
        os.chown(work, account.pw_uid, account.pw_gid)
        submitted = _as_student(student, course_dir, shared / "exchange", "submit", ASSIGNMENT)
        assert submitted.returncode == 0, submitted.stdout[-2000:] + submitted.stderr[-3000:]

        found = wait_for(course_dir, lambda f: [r["status"] for r in f.values() if r["student"] == student]
                         == ["graded"], f"the grading service's grading of {student}", timeout_s=GRADED_S)
        timings["graded"] = time.monotonic() - started
        assert course.scores(course_dir)[student][STEM] == SCORE, found
        feedback = _as_student(student, course_dir, shared / "exchange", "fetch_feedback", ASSIGNMENT)
        assert feedback.returncode == 0, feedback.stdout[-2000:] + feedback.stderr[-3000:]
        [page] = (home / ASSIGNMENT / "feedback").glob(f"*/{STEM}.html")
        assert f"{STEM} (Score: {SCORE[0]:.1f} / {SCORE[1]:.1f})" in page.read_text()
        print("seconds since the first command:", {k: round(v) for k, v in timings.items()})
    except BaseException:
        if (shared / "hub.log").exists():
            print((shared / "hub.log").read_text()[-6000:])
        raise
    finally:
        try:
            left_processes = _stop(hub, uids)
        finally:  # the accounts and folders, even where stopping the hub failed
            left = accounts.remove([*((n, None) for n in ROSTER_NAMES.values()), (owner, None)],
                                   hub=this_course)
            shutil.rmtree(shared, ignore_errors=True)
    assert not left_processes, f"processes that outlived the hub: {left_processes}"
    assert not left, f"accounts that outlived the test: {left}"
    groups = [g for g in course_groups if accounts.exists(g, grp.getgrnam)]
    assert not groups, f"groups that make hub-users made and remove left: {groups}"
    assert not shared.exists()
    for port in [int(url.rsplit(":", 1)[1]), *map(int, hub_settings["PERFAUDIT_HUB_PORTS"].split(","))]:
        assert not left_listening(port, lambda p: p.uids().real in uids
                                  or str(course_dir) in " ".join(p.cmdline()) + p.cwd()), \
            f"port {port} is still in use after the hub stopped"


def _written(path, text):
    path.write_text(text)
    return path


def _run(line, cwd, timeout_s):
    """The doc's command line in bash, as root, in cwd; a failure fails the test with the command's own output."""
    done = subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        pytest.fail(f"{line} failed ({done.returncode}) in {cwd}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def _as_student(name, course_dir, exchange, *argv):
    """nbgrader as the student's server runs it: their account, their home, the environment the hub gives their
    server (perfaudit/hub/jupyterhub_config.py's Spawner.environment, with the course's own config folders)."""
    from perfaudit.hub import preflight
    from perfaudit.lab import STUDENT_CONFIG

    home = pwd.getpwnam(name).pw_dir
    venv_bin = course_dir / ".venv" / "bin"
    config = [course_dir / settings.STUDENTS_CONFIG.relative_to(paths.ROOT),
              course_dir / Path(STUDENT_CONFIG).relative_to(paths.ROOT)]
    environment = {"HOME": home, "USER": name, "PATH": preflight.services_path(venv_bin / "python", venv_bin),
                   "JUPYTER_CONFIG_PATH": os.pathsep.join(map(str, config)),
                   "PERFAUDIT_COURSE_ID": settings.from_environment(
                       {"PERFAUDIT_HUB_COURSE": str(course_dir)}).course_id,
                   "PERFAUDIT_EXCHANGE": str(exchange)}
    return subprocess.run(["runuser", "-u", name, "--", "env", "-i", *(f"{k}={v}" for k, v in environment.items()),
                           "nbgrader", *argv], cwd=home, capture_output=True, text=True, timeout=300)


def _stop(process, uids):
    """SIGTERM to jupyterhub (it stops the servers and its services), then SIGKILL to whatever is left of the tree
    sudo started (sudo, make, the hub and its children) and of the test's accounts, each by its pid. What was still
    alive after that, by pid and command."""
    if process is None:
        return []
    tree = _tree(process.pid)
    hubs = [p for p in tree if Path(_cmdline(p)[1:2][0] if len(_cmdline(p)) > 1 else "").name == "jupyterhub"]
    for p in hubs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(hubs, timeout=60)
    tree += [p for p in _tree(process.pid) if p not in tree]
    theirs = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in uids]
    doomed = [p for p in dict.fromkeys([*tree, *theirs]) if p.pid != os.getpid()]
    for p in doomed:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    if isinstance(process, subprocess.Popen):
        process.wait()
    _, alive = psutil.wait_procs(doomed, timeout=10)
    return [(p.pid, _cmdline(p)) for p in alive]


def _tree(pid):
    """The process pid and its descendants, as psutil processes ([] once it is gone)."""
    try:
        top = psutil.Process(pid)
        return [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _cmdline(process):
    try:
        return process.cmdline() or [""]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return [""]
