"""Every command the docs show in a ```bash block is run by a test, or listed here as not runnable with the reason.

Commands are read from the docs themselves (README.md and docs/*.md). Each is in exactly one of three tables:
RUN_BY (the test file that runs it, and what that file holds where it runs it: a test that stops running the
command, or a doc command no test runs, fails here), NOT_RUN (why no test can), RUN_HERE (run by this file, as the
docs write it). A make command whose test runs its recipe is checked to run that recipe (`make -n`, RECIPES).
Every command also names what exists: a make target, a perfaudit module and its options, an nbgrader subcommand,
so a renamed target or option fails here before an instructor types it."""

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderApp

from perfaudit import ASSIGNMENT, paths
from perfaudit.grade.__main__ import command_line

DOCS = [paths.ROOT / "README.md", *sorted((paths.ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```bash\n(.*?)```", re.S)


def commands():
    """(doc, command) for each command line of each bash block, continuation lines joined, comments dropped."""
    found = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text()):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"(^|\s)#.*$", "", line).strip()
                if line:
                    found.append((doc.name, " ".join(line.split())))
    return found


COMMANDS = commands()
TARGETS = set(re.findall(r"^([a-zA-Z][\w.-]*):", (paths.ROOT / "Makefile").read_text(), re.M))


def test_the_docs_show_commands():
    assert len(COMMANDS) > 30


@pytest.mark.parametrize("doc, line", [c for c in COMMANDS if c[1].startswith("make ")])
def test_each_make_target_exists(doc, line):
    words = [w for w in shlex.split(line)[1:] if "=" not in w]
    assert words and set(words) <= TARGETS, (doc, line)


def _perfaudit_modules(line):
    return re.findall(r"python3? -m (perfaudit(?:\.\w+)*)", line)


@pytest.mark.parametrize("doc, line", [c for c in COMMANDS if _perfaudit_modules(c[1])])
def test_each_perfaudit_module_exists(doc, line):
    for module in _perfaudit_modules(line):
        assert importlib.util.find_spec(module) is not None, (doc, line)



def _grade_options():
    return set(command_line()._option_string_actions)


@pytest.mark.parametrize("doc, line", [c for c in COMMANDS if "perfaudit.grade" in c[1]])
def test_each_option_of_the_grade_command_exists(doc, line):
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line.split("perfaudit.grade", 1)[1]))
    assert options <= _grade_options(), (doc, line)


@pytest.mark.parametrize("doc, line", [c for c in COMMANDS if re.match(r"^(\S+/)?nbgrader ", c[1])])
def test_each_nbgrader_subcommand_exists(doc, line):
    assert shlex.split(line)[1] in NbGraderApp.subcommands, (doc, line)


# --- each command run by a test ---------------------------------------------------------------------------------

# {command as the docs write it: [(test file in tests/, what that file holds where it runs the command), ...]}
RUN_BY = {
    # what `python -m perfaudit.instructor.demo` calls, on a temporary course
    "make demo": [("instructor/test_demo.py", 'demo.main(["--course", str(root)])')],
    "make release": [("test_whole_term.py", '"generate_assignment", ASSIGNMENT, "--force", "--no-db"')],
    # what `python -m perfaudit.instructor.student_copy` calls
    "make student-copy": [("instructor/test_student_copy.py", 'student_copy.write(folder / "student.zip")')],
    "make check STAGE=4 IMPLEMENTATION=solution": [
        ("test_check.py", 'run_check("--implementation", "solution", "--stage", str(stage)')],  # every stage
    "make check STAGE=5 IMPLEMENTATION=solution": [
        ("test_check.py", 'run_check("--implementation", "solution", "--stage", str(stage)')],  # every stage
    "make check STAGE=2 IMPLEMENTATION=starter": [
        ("test_check.py", 'run_check("--implementation", "starter", "--stage", str(stage)')],
    "make check STAGE=1": [("test_check.py", 'run_check("--implementation", "solution", "--stage", str(stage)')],
    "python -m perfaudit.check --implementation solution --stage 1 --in-process": [
        ("test_check.py", 'run_check("--implementation", implementation, "--stage", "2"')],
    "nbgrader generate_assignment performance-audit --force": [
        ("grade/test_report_graded.py",
         'course.nbgrader("generate_assignment", ASSIGNMENT, "--force", course_dir=root)')],
    "nbgrader validate source/performance-audit/*.ipynb": [
        ("test_release.py", 'course.nbgrader("validate", *source, course_dir=course_dir)')],
    "nbgrader validate --invert notebooks/performance-audit/*.ipynb": [
        ("test_release.py", 'course.nbgrader("validate", "--invert", *release, course_dir=course_dir)')],
    "nbgrader autograde performance-audit": [
        ("autograde/test_autograde.py", 'course.nbgrader("autograde", ASSIGNMENT, course_dir=course_dir)')],
    "nbgrader export": [("autograde/test_autograde.py", 'course.nbgrader("export", course_dir=course_dir)')],
    "nbgrader generate_feedback performance-audit": [
        ("fixtures/test_catalog.py", 'course.nbgrader("generate_feedback", ASSIGNMENT, course_dir=root)')],
    "nbgrader collect performance-audit": [
        ("test_browser_exchange.py", 'course.nbgrader("collect", ASSIGNMENT, course_dir=instructor)')],
    "nbgrader release_feedback performance-audit": [
        ("test_browser_exchange.py", 'course.nbgrader("release_feedback", ASSIGNMENT, course_dir=instructor)')],
    "make grade": [("grade/test_grade_command.py", 'sys.executable, "-m", "perfaudit.grade", "--no-progress"]')],
    "make grade FROM=canvas-download.zip": [
        ("test_browser_formgrader.py", '_grade_cli(root, "--from", str(download)')],
    # serve/test_serve.py and serve/test_browser_serve.py start it through serve_course.service()
    "make serve": [("helpers/serve_course.py", '[sys.executable, "-m", "perfaudit.serve", *args]')],
    ".venv/bin/jupyter lab --ServerApp.root_dir=$PWD": [
        ("helpers/formgrader.py", '"jupyter"), "lab", f"--ServerApp.root_dir={root}"]')],  # both Formgrader tests
    "make feedback": [("test_browser_formgrader.py", '_grade_cli(root, "--feedback-only")'),
                      ("test_whole_term.py", '_cli(root, "--feedback-only")')],
    'python -m perfaudit.grade --export canvas --roster canvas-gradebook.csv '
    '[--lms-column "Performance audit (98765)"]': [
        ("grade/test_lms_round_trip.py", '"-m", "perfaudit.grade", "--export", lms, "--roster"'),
        # what --lms-column sets
        ("grade/test_export.py", 'export.export("canvas", course, roster, column="Audit (1)"')],
    "python -m perfaudit.grade --export moodle --roster moodle-grading-worksheet.csv": [
        # lms: canvas, moodle
        ("grade/test_lms_round_trip.py", '"-m", "perfaudit.grade", "--export", lms, "--roster"')],
    # what the option sets, run(Options(regrade=True))
    "python -m perfaudit.grade --regrade": [("grade/test_run.py", "run(Options(course_dir=root, regrade=True")],
    "python -m perfaudit.grade --report": [("grade/test_report_graded.py", '"--report"')],
    # a dask scheduler and two workers started on loopback, the command's run(Options(scheduler=...))
    "python -m perfaudit.grade --scheduler tcp://grading-head:8786": [
        ("grade/test_grade_cluster.py", "run(Options(course_dir=root, scheduler=address")],
    "python -m perfaudit.grade --scheduler /shared/scheduler.json": [
        ("grade/test_grade_cluster.py", "run(Options(course_dir=root, scheduler=str(scheduler_file)")],
    "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=2 DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION=1.0 "
    "dask scheduler --host 10.0.0.1 --port 8786 --no-dashboard": [
        ("grade/test_grade_cluster.py", '"dask", "scheduler", "--host", "127.0.0.1", "--port", str(port)')],
    "dask worker tcp://10.0.0.1:8786 --nworkers auto --nthreads 1 --memory-limit 0": [
        ("grade/test_grade_cluster.py", '"dask", "worker", address, "--nworkers", "1", "--nthreads", "1"')],
    # make lab's command and working copy (perfaudit.lab.main's), then JupyterLab in Chromium; --allow-root as root
    "make lab": [("test_browser.py", "lab.lab_command(course_dir)")],
    "make lab ALLOW_ROOT=1": [("helpers/chromium.py", 'argv.append("--allow-root")')],
    'make lab LAB_ARGS="--no-browser --port=8890"': [
        ("helpers/chromium.py", '"--no-browser", "--ServerApp.ip=127.0.0.1"')],
    # the student's own working copy, from the unzipped student copy (stage 2, the default evidence folder)
    ".venv/bin/python -m perfaudit.check --stage 3 --evidence-dir runs/performance-audit": [
        ("instructor/test_student_copy.py", '_check(unzipped, "--stage", "2")')],
    # the accounts and the hub as make hub-users and make hub make them (perfaudit.hub.accounts, .exchange, jupyterhub)
    "sudo make hub-users ROSTER=roster.txt": [
        ("hub/test_hub.py", "accounts.add(people, hub=settings.from_environment(env))"),
        ("hub/test_hub_docs.py", "_run(line, cwd, SETUP_S)")],  # docs/hub.md's section, as written
    "sudo PERFAUDIT_HUB_DOMAIN=https://hub.example.edu make hub": [
        ("hub/test_hub.py", '_run([sys.executable, "-m", "perfaudit.hub.exchange"], env=env)'),
        ("hub/test_hub_docs.py", 'hub = subprocess.Popen(["bash", "-c", substituted(commands[-1]')],
    # docs/hub.md's first step, as written (an account and a folder of the test's own)
    "useradd --create-home grader": [("hub/test_hub_docs.py", "_run(line, cwd, SETUP_S)")],
    "chmod 0700 /home/grader": [("hub/test_hub_docs.py", "_run(line, cwd, SETUP_S)")],
    "install -d -o grader -g grader -m 0700 /srv/course": [("hub/test_hub_docs.py", "_run(line, cwd, SETUP_S)")],
    "sudo -u grader sh -c 'umask 077 && git clone ... /srv/course'": [
        ("hub/test_hub_docs.py", "_run(line, cwd, SETUP_S)")],
    "cd /srv/course": [("hub/test_hub_docs.py", "cwd = Path(shlex.split(line)[1])")],
    "make variants": [("grade/test_variant_list.py", 'main(["--variants", "--course-dir", str(tmp_path)])')],
    # the whole source notebook, hidden tests included, as a student of each variant (run_cells)
    "PERFAUDIT_STUDENT=jdoe make check STAGE=5 IMPLEMENTATION=solution": [
        ("helpers/audit_misconceptions.py", "os.environ[variants.STUDENT_ENV] = student_with(variant)")],
    "make id ID=jdoe": [("test_variants.py", 'check.state_id(" jdoe ", copy)')],
    "make reset-course": [("test_whole_term.py", '"make", "--no-print-directory", "reset-course"'),
                          ("test_makefile.py", 'make("reset-course", cwd=tmp_path)')],
}

# {make command: the recipe its RUN_BY test runs}, as `make -n` prints it.
RECIPES = {
    "make demo": "python -m perfaudit.instructor.demo",
    "make release": "nbgrader generate_assignment performance-audit --force --no-db",
    "make student-copy": "python -m perfaudit.instructor.student_copy",
    "make check STAGE=4 IMPLEMENTATION=solution": "python -m perfaudit.check --implementation solution --stage 4",
    "make check STAGE=5 IMPLEMENTATION=solution": "python -m perfaudit.check --implementation solution --stage 5",
    "make check STAGE=2 IMPLEMENTATION=starter": "python -m perfaudit.check --implementation starter --stage 2",
    "make check STAGE=1": "python -m perfaudit.check --implementation solution --stage 1",
    "make grade": "python -m perfaudit.grade",
    "make grade FROM=canvas-download.zip": "python -m perfaudit.grade --from canvas-download.zip",
    "make serve": "python -m perfaudit.serve",
    "make feedback": "python -m perfaudit.grade --feedback-only",
    "make variants": "python -m perfaudit.grade --variants",
    "make id ID=jdoe": 'python -m perfaudit.check --id "jdoe"',
    "make lab": "python -m perfaudit.lab --",
    "make lab ALLOW_ROOT=1": "python -m perfaudit.lab --allow-root --",
    'make lab LAB_ARGS="--no-browser --port=8890"': "python -m perfaudit.lab -- --no-browser --port=8890",
}

# {command: why no test runs it}
NOT_RUN = {
    "apt-get install python3.11 python3.11-venv make bubblewrap uidmap": "installs system packages, as root, from "
    "the network (.ci/run installs bubblewrap and uidmap so on CI)",
    "apt-get install chromium postgresql nodejs npm": "installs system packages, as root, from the network (.ci/run "
    "does)",
    "apt-get install python3.11 python3.11-venv make bubblewrap uidmap nodejs sudo git": "installs system "
    "packages, as root, from the network (.ci/run installs uidmap, sudo, nodejs and npm so on CI)",
    "make test": "the whole suite, this file included: CI runs it (.ci/run)",
    "dask scheduler --protocol tls --host 10.0.0.1 --port 8786 --tls-ca-file ca.pem --tls-cert head.pem "
    "--tls-key head-key.pem": "needs a certificate authority's files; the tls:// address of a scheduler file is "
    "read in tests/grade/test_task.py",
    "dask worker tls://10.0.0.1:8786 --nthreads 1 --memory-limit 0 --tls-ca-file ca.pem --tls-cert worker.pem "
    "--tls-key worker-key.pem": "needs a certificate authority's files, as the scheduler above",
    "python -m perfaudit.serve --scheduler tcp://grading-head:8786": "needs a running Dask cluster; the service "
    "grades with the batch command's task and engine, which tests/grade/test_grade_cluster.py runs on one",
    # docs/hub.md: the exchange on a file system of its own, made on the machine's disk. The exchange of
    # tests/hub/test_exchange_share.py has a file system of its own too (a tmpfs of fixed size, which needs no loop
    # device), and a full one refuses everyone.
    "mkfs.ext4 -q -m 2 -i 4096 /srv/nbgrader/exchange.img": "formats the image above: see the test above",
    "tune2fs -u grader /srv/nbgrader/exchange.img": "the image above's blocks kept for the course's owner: checked by "
    "hand, as docs/hub.md says (a loop device and a mount, as root)",
    "mkdir -p /srv/nbgrader/exchange": "the machine's own /srv, as root: see the test above",
    "truncate -s 45G /srv/nbgrader/exchange.img": "45G of the machine's disk, as root: see the test above",
    "echo '/srv/nbgrader/exchange.img /srv/nbgrader/exchange ext4 loop 0 2' >> /etc/fstab": "writes the machine's "
    "/etc/fstab",
    "mount /srv/nbgrader/exchange": "mounts by the machine's /etc/fstab line above",
}

# Commands this file runs as the docs write them: {command: where (the repository, or a temporary course)}.
RUN_HERE = {
    "source .venv/bin/activate": "repository",
    "python -m perfaudit.grade --help": "repository",
    "nbgrader db assignment add performance-audit --duedate=\"2025-03-10 12:00:00 UTC\"": "course",
    "mkdir -p exchange": "course",
    "python -m perfaudit.serve --status": "course",
}


def test_every_command_in_the_docs_is_run_by_a_test_or_says_why_not():
    shown = {line for _, line in COMMANDS}
    tables = {"RUN_BY": set(RUN_BY), "NOT_RUN": set(NOT_RUN), "RUN_HERE": set(RUN_HERE)}
    unplaced = sorted(shown - set().union(*tables.values()))
    assert not unplaced, f"commands in the docs that no test runs: add each to RUN_BY, RUN_HERE or NOT_RUN: {unplaced}"
    stale = {name: sorted(table - shown) for name, table in tables.items() if table - shown}
    assert not stale, f"commands the docs no longer show: {stale}"
    twice = {(a, b): sorted(tables[a] & tables[b]) for a, b in [("RUN_BY", "NOT_RUN"), ("RUN_BY", "RUN_HERE"),
                                                                ("NOT_RUN", "RUN_HERE")] if tables[a] & tables[b]}
    assert not twice, f"commands in two tables: {twice}"
    assert set(RECIPES) <= set(RUN_BY)


@pytest.mark.parametrize("line", sorted(RUN_BY))
def test_the_test_named_for_a_command_runs_it(line):
    for name, holds in RUN_BY[line]:
        assert holds in (paths.ROOT / "tests" / name).read_text(), f"tests/{name} no longer runs {line!r}: {holds!r}"


def _make_env():
    """This environment without the Makefile's own variables or a calling make's flags (make test runs pytest)."""
    variables = set(re.findall(r"^(\w+) \?=", (paths.ROOT / "Makefile").read_text(), re.M))
    return {k: v for k, v in os.environ.items() if k not in variables | {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}


@pytest.mark.parametrize("line", sorted(RECIPES))
def test_a_make_command_runs_the_recipe_its_test_runs(line):
    done = subprocess.run(["make", "-n", "--no-print-directory", "-o", ".venv/installed", *shlex.split(line)[1:]],
                          cwd=paths.ROOT, env=_make_env(), capture_output=True, text=True, check=True)
    assert " ".join(done.stdout.split()) == RECIPES[line]


def _run(line, cwd, then=""):
    """The command as the docs write it, in bash, the venv's bin first on PATH (as the Makefile puts it)."""
    venv_bin = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", line + then], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _here(where):
    return [line for line, place in RUN_HERE.items() if place == where]


def test_the_repository_commands_run_as_written():
    source, grade_help = _here("repository")
    assert _run(source, paths.ROOT, " && command -v python").strip() == str(paths.ROOT / ".venv" / "bin" / "python")
    out = _run(grade_help, paths.ROOT)
    assert out.startswith("usage: python -m perfaudit.grade")
    # the options docs/instructors.md names beside the command
    assert {"--workers", "--scheduler", "--cell-timeout", "--notebook-timeout", "--memory-mb", "--db"} <= set(
        re.findall(r"--[a-z-]+", out))


def test_the_course_commands_run_as_written(tmp_path):
    due_date, exchange, status = _here("course")
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)
    _run(due_date, tmp_path)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "jax-performance-audit") as gradebook:
        assert str(gradebook.find_assignment(ASSIGNMENT).duedate) == "2025-03-10 12:00:00"
    _run(exchange, tmp_path)
    assert (tmp_path / "exchange").is_dir()
    assert _run(status, tmp_path).splitlines()[:3] == [
        f"ledger: {tmp_path / 'gradebook.db.serve.json'}",
        f"log: {tmp_path / 'autograded' / '.batch-grading' / 'serve.log'}",
        "submissions: queued 0, grading 0, graded 0, limited 0, failed 0, refused 0, skipped 0"]
