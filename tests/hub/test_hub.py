"""The course on JupyterHub as a class uses it: a real hub (make hub's config and proxy), PAM logins, headless Chromium.

The test makes a course of notebook 1, owned by an account of its own (make hub refuses it while root owns it), and
four Linux accounts (two students, an attacker student, one instructor) with perfaudit.hub.accounts, installs the
proxy with `make hub-proxy`, prepares the exchange as make hub does (the course's owner checked able to grade, the
roster's names put in the gradebook) and starts jupyterhub on free loopback ports. In Chromium both students log in
with their passwords, open the Assignments view in their own JupyterLab and Fetch; each one's notebook is replaced
by a sample submission (correct, and one that hard-codes the identity's answer) as if typed, and each Submits from
the page. The hub's grading service, running as the course's owner, grades both: exact scores from the gradebook,
then each student's Fetch Feedback brings their own score. The second student can neither reach the first's server
through the hub nor read the first's home or submission by path or through the exchange. The attacker tries each
route to the course, the others' work and the owner's rights (the course's secrets by path, a submission by its
name, the hub's database, the grading service's Dask cluster, Formgrader's and the hub's APIs) and is refused; each
path's refusal is shown to come from its modes. An instructor logs in, opens Formgrader (a hub service) and sees
both scores under the roster's names; Formgrader's terminal is the course owner's with the course's environment, and
what make feedback runs works there, leaving nothing root owns. Accounts, groups, processes and the exchange are
gone afterwards.
"""

import json
import grp
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from contextlib import contextmanager
from pathlib import Path

import nbformat
import psutil
import pytest
from chromium import CHROMIUM, CHROMIUM_ARGS, UI_MS, free_port
from playwright import sync_api
from hub_started import left_listening, wait_for_hub
from listening_sockets import held_by
from serve_course import course_with_exchange, wait_for

from perfaudit import ASSIGNMENT, paths
from perfaudit.fixtures import samples
from perfaudit.hub import accounts, exchange, person_groups, preflight, settings, userenv
from perfaudit.instructor import course

pytestmark = pytest.mark.slow  # a hub, three JupyterLabs, the grading service and a browser: minutes

NOTEBOOK = paths.STAGES[1]
STEM = NOTEBOOK.removesuffix(".ipynb")
SUBMISSIONS = {"correct": 5, "stage1-hardcoded-identity": 4}  # sample: notebook 1's score (of 5)
HUB_START_S = 180  # the hub waits for Formgrader's JupyterLab before it answers: two busy cores
EXCHANGE_MS = 120_000
CONFIG = paths.ROOT / "perfaudit" / "hub" / "jupyterhub_config.py"  # what make hub starts jupyterhub with
FULL_NAMES = ("Ada Lovelace", "Grace Hopper", "Mallory Q")  # the roster's: Formgrader lists "Lovelace, Ada"


@pytest.fixture(scope="module")
def hub():
    """A running hub for a course of its own, owned by an account of its own as docs/hub.md asks: {url, course,
    exchange, course_id, students, attacker, instructor, owner, passwords, state, log, python}."""
    if os.geteuid() != 0:
        pytest.fail("the hub test makes Linux accounts and runs the hub as root: run it as root (CI does)")
    tag = secrets.token_hex(3)
    course_id = f"hubtest{tag}"
    # The exchange must be reachable by every account: not under pytest's root-only folder. The course directory
    # and the hub's state folder too, as /srv/course and its .hub are: what keeps students out of them is their own
    # modes, not a folder above them.
    shared = Path(tempfile.mkdtemp(prefix="perfaudit-hub-"))
    shared.chmod(0o755)
    try:
        course_dir = _course_in_git(shared / "course", course_id)
    except BaseException:  # stopped before the teardown below is armed (Ctrl-C too): nothing left in /tmp
        shutil.rmtree(shared, ignore_errors=True)
        raise
    state = shared / "hub-state"
    state.mkdir(mode=0o755)  # as make hub-users leaves .hub: open, the hub's own files in it private
    students, attacker, instructor = [f"pa{tag}s1", f"pa{tag}s2"], f"pa{tag}s3", f"pa{tag}prof"
    owner = f"pa{tag}own"  # the course's `grader` account
    people = [(s, "student", full) for s, full in zip([*students, attacker], FULL_NAMES)] + [
        (instructor, "instructor", "")]
    port = free_port()
    listening = f"http://127.0.0.1:{port}"
    # As docs/hub.md asks of a class: each server on a domain of its own under the hub's, here names /etc/hosts gives
    # this machine's loopback (the browser and the test's requests resolve them as a class's DNS would).
    domain = f"hub{tag}.test"
    url = f"http://{domain}:{port}"
    hosts = [domain, *(f"{name}.{domain}" for name, *_ in people), f"{course_id}--service.{domain}",
             f"grading--service.{domain}"]
    env = {**os.environ, "PERFAUDIT_HUB_COURSE": str(course_dir), "PERFAUDIT_HUB_STATE": str(state),
           "PERFAUDIT_EXCHANGE": str(shared / "exchange"), "PERFAUDIT_HUB_URL": listening,
           "PERFAUDIT_HUB_DOMAIN": url,
           "PERFAUDIT_HUB_PORTS": ",".join(str(free_port()) for _ in range(3)),
           "PERFAUDIT_SERVE_ARGS": "--workers 1 --skip-canary",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    hub_process = None
    hub_uids: set[int] = set()  # the test's accounts, by uid: gone by name once they are removed
    course_groups = settings.from_environment(env).groups()  # read from the course's config, removed with it
    try:
        names_of_this_machine(hosts)
        # make hub refuses a course root owns, in one line, before anything starts
        refused = subprocess.run([sys.executable, "-m", "perfaudit.hub.exchange"], env=env, capture_output=True,
                                 text=True)
        assert refused.returncode != 0 and refused.stderr.strip() == preflight.root_owned(
            settings.from_environment(env)), refused.stderr
        _run(["useradd", "--create-home", "--user-group", owner])
        _run(["chown", "-R", f"{owner}:{owner}", str(course_dir)])
        passwords = accounts.add(people, hub=settings.from_environment(env))
        hub_uids.update(pwd.getpwnam(name).pw_uid for name in [owner, *(name for name, _, _ in people)])
        _run(["make", "--no-print-directory", "hub-proxy"], cwd=paths.ROOT)
        squatter = _squatting(attacker, listening)
        # make hub's recipe: the exchange (and the check that the course's owner can grade, and the end of what the
        # course's people left running), then the hub
        _run([sys.executable, "-m", "perfaudit.hub.exchange"], env=env)
        log = state / "hub.log"
        with open(log, "w") as out:
            hub_process = subprocess.Popen(
                [str(Path(sys.executable).parent / "jupyterhub"), "-f", str(CONFIG)],
                cwd=state, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_hub(listening, hub_process, log, HUB_START_S)
        squatter.wait(timeout=10)
        attacker_uid = pwd.getpwnam(attacker).pw_uid
        running = [p for p in psutil.process_iter(["uids", "status"])
                   if p.info["uids"] and p.info["uids"].real == attacker_uid and p.info["status"] != "zombie"]
        assert not running, f"the squatter outlived make hub's start: {running}"
        python = userenv.accounts_python(settings.from_environment(env).venv_bin, settings.ACCOUNTS_PYTHON)
        yield {"url": url, "domain": domain, "course": course_dir, "exchange": shared / "exchange" / course_id,
               "course_id": course_id,
               "students": students, "attacker": attacker, "instructor": instructor, "owner": owner,
               "passwords": passwords, "log": log, "state": state, "python": python}
    finally:
        _stop(hub_process)
        left = accounts.remove([*people, (owner, None)], hub=settings.from_environment(env))
        shutil.rmtree(shared, ignore_errors=True)
        names_of_this_machine(hosts, remove=True)
    assert not left, f"accounts that outlived the test: {left}"
    kept = [hierarchy.folder / person_groups.HUB_GROUP / name for hierarchy in person_groups.hierarchies()
            for name, *_ in people if (hierarchy.folder / person_groups.HUB_GROUP / name).exists()]
    assert not kept, f"cgroups that outlived their accounts: {kept}"
    groups = [g for g in course_groups if accounts.exists(g, grp.getgrnam)]
    assert not groups, f"groups that make hub-users made and remove left: {groups}"
    for port in [int(url.rsplit(":", 1)[1]), *map(int, env["PERFAUDIT_HUB_PORTS"].split(","))]:
        assert not left_listening(port, lambda p: p.uids().real in hub_uids
                                  or p.environ().get("PERFAUDIT_HUB_STATE") == str(state)), \
            f"port {port} is still in use after the hub stopped"


# What a held-out attacker's page did, opened by a classmate on the hub's one origin: it opened her JupyterLab in a
# window and read it (the cookie gave her XSRF token), and asked her server's API with her login. [page, API].
PROBE = """async ([page, api]) => {
    const opened = window.open(page);
    await new Promise(done => setTimeout(done, 5000));
    let seen, asked;
    try { seen = "read: " + opened.document.title + opened.document.cookie; } catch (e) { seen = "refused: " + e.name; }
    opened.close();
    try {
        const answer = await fetch(api, {credentials: "include"});
        asked = "read: " + answer.status + " " + (await answer.text()).slice(0, 100);
    } catch (e) { asked = "refused: " + e.name; }
    return [seen, asked];
}"""
HOSTS = Path("/etc/hosts")


def names_of_this_machine(names, remove=False):
    """Add to /etc/hosts (or remove) one line giving `names` this machine's loopback address."""
    line = f"127.0.0.1 {' '.join(names)}  # perfaudit hub test\n"
    text = HOSTS.read_text()
    ending = "" if text.endswith("\n") or not text else "\n"  # a last line without its newline is kept whole
    HOSTS.write_text(text.replace(line, "") if remove else text + ending + line)


def at(hub, path):
    """The URL of path on the origin that serves it (PERFAUDIT_HUB_DOMAIN): a person's server on <name>.<domain>, a
    service on <service>--service.<domain>, the hub's own pages on <domain>."""
    parts = path.split("/")
    kind = {"user": "{}.", "services": "{}--service."}.get(parts[1]) if len(parts) > 2 else None
    host = (kind.format(parts[2]) if kind else "") + hub["domain"]
    return f"http://{host}:{hub['url'].rsplit(':', 1)[1]}{path}"


SQUAT = """
import socket, sys, time
server = socket.socket()
server.bind((sys.argv[1], int(sys.argv[2])))
server.listen()
print("listening", flush=True)
while True:  # answers the logins a hub would have had
    server.accept()[0].close()
"""


def _squatting(account, url):
    """A held-out attacker's squatter: a process a student left running (setsid, from a terminal) that holds the
    hub's public port before the hub starts again, and would answer its logins. Returns its runuser; make hub's
    first step must end the squatter, or the hub's proxy could not listen."""
    host, port = url.rsplit("/", 1)[1].rsplit(":", 1)
    squatter = subprocess.Popen(["runuser", "-u", account, "--", "setsid", "/usr/bin/python3", "-c", SQUAT, host,
                                 port], stdout=subprocess.PIPE, text=True)
    assert squatter.stdout.readline() == "listening\n"
    return squatter


def _course_in_git(folder, course_id):
    """Notebook 1's course, released, kept in git as this repository is: .git holds every version of source/."""
    course_dir = course_with_exchange(folder, settings="\n".join([
        "c.GradingService.poll_seconds = 0.5", f"c.CourseDirectory.course_id = {course_id!r}"]))
    course_dir.chmod(0o755)
    _run(["git", "init", "-q"], cwd=course_dir)
    _run(["git", "-c", "user.name=instructor", "-c", "user.email=instructor@course", "commit", "-qm", "course",
          "--allow-empty"], cwd=course_dir)
    _run(["git", "add", "source"], cwd=course_dir)
    _run(["git", "-c", "user.name=instructor", "-c", "user.email=instructor@course", "commit", "-qm", "source"],
         cwd=course_dir)
    return course_dir


def _run(argv, **kwargs):
    """argv to its end; a failure fails the test with the command's own output."""
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def _stop(process):
    """SIGTERM to the hub (it stops the users' servers and its services), then SIGKILL to whatever is left of its
    session and of the processes it started: its proxy runs in a session of its own, and outlived a hub killed after
    a slow stop (JupyterHub keeps a proxy for its next start), listening on the test's port."""
    if process is None:
        return
    try:
        started = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        started = []
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for child in started:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    process.wait()
    psutil.wait_procs(started, timeout=10)


@pytest.fixture(scope="module")
def chromium():
    """Chromium, each person in a browser context of their own (their own cookies, as on their own laptop)."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def logged_in(chromium, hub, name, artifacts, then="/hub/spawn"):
    """A page after `name` logged in with their password at the hub's login form, then went to `then`."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(UI_MS)
    try:
        page.goto(f"{hub['url']}/hub/login?next={urllib.parse.quote(then, safe='/')}")
        page.fill("#username_input", name)
        page.fill("#password_input", hub["passwords"][name])
        page.click("#login_submit")
        yield page
    except Exception:
        page.screenshot(path=str(artifacts / f"failed-hub-{name}.png"))
        raise
    finally:
        context.close()


def assignments_view(page):
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Nbgrader", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Assignment List", exact=True).click()


def fetch(page, hub, name):
    page.wait_for_url(f"**/user/{name}/lab**", timeout=EXCHANGE_MS)  # the hub spawned their JupyterLab
    assignments_view(page)
    page.locator("#released_assignments_list button").get_by_text("Fetch", exact=True).click()
    page.locator("#fetched_assignments_list").get_by_text(ASSIGNMENT, exact=True).wait_for(timeout=EXCHANGE_MS)


def write_work(name, sample):
    """The sample's notebook 1 in the student's fetched assignment, owned by the student, as if they typed it."""
    path = home(name) / ASSIGNMENT / NOTEBOOK
    assert path.is_file(), f"Fetch did not put {NOTEBOOK} in {name}'s home"
    nbformat.write(samples.submission(samples.SAMPLES[sample], 1), path)
    account = pwd.getpwnam(name)
    os.chown(path, account.pw_uid, account.pw_gid)


def submit(page):
    assignments_view(page)
    page.locator("#fetched_assignments_list button").get_by_text("Submit", exact=True).click()
    page.locator("#submitted_assignments_list button").get_by_text("Fetch Feedback", exact=True).wait_for(
        timeout=EXCHANGE_MS)


def fetch_feedback(page, hub, name):
    """Fetch Feedback in the Assignments view; the page it brought, as the student's server serves it."""
    page.locator("#refresh_assignments_list").click()
    page.locator("#submitted_assignments_list").get_by_text("(feedback available to fetch)").wait_for(
        timeout=EXCHANGE_MS)
    page.locator("#submitted_assignments_list button").get_by_text("Fetch Feedback", exact=True).click()
    page.locator("#submitted_assignments_list").get_by_text("(view feedback)").wait_for(timeout=EXCHANGE_MS)
    [fetched] = (home(name) / ASSIGNMENT / "feedback").glob(f"*/{STEM}.html")
    served = page.request.get(at(hub, f"/user/{name}/files/{fetched.relative_to(home(name))}"))
    assert served.ok, served.status
    return served.text()


def home(name):
    return Path(pwd.getpwnam(name).pw_dir)


def as_account(name, *argv):
    """argv run as the account `name` (what code in that person's JupyterLab or terminal can do)."""
    return subprocess.run(["runuser", "-u", name, "--", *argv], capture_output=True, text=True)


def cannot_read_by_path(reader, owner_home, submitted):
    """`reader` can neither list nor read another student's home, their notebook in it, nor their submission."""
    assert submitted.is_file()  # it is there: refused, not missing
    for argv in (["ls", str(owner_home)], ["cat", str(submitted)]):
        done = as_account(reader, *argv)
        assert done.returncode != 0 and "Permission denied" in done.stderr, (
            f"{reader} ran {' '.join(argv)}: {done.returncode}\n{done.stdout[:300]}")


def cannot_list_the_exchange(reader, course_exchange):
    """`reader` cannot list the exchange's inbound (submissions) nor its feedback (pages): nobody learns the names,
    which hold a random part (submissions) or a hash of the submission's secret (feedback pages)."""
    for folder in ("inbound", "feedback"):
        done = as_account(reader, "ls", str(course_exchange / folder))
        assert done.returncode != 0 and "Permission denied" in done.stderr, (
            f"{reader} listed {course_exchange / folder}:\n{done.stdout[:300]}")


# What a curious student reaches by path in the course directory: the answer key (source/, every version of it in
# .git), classmates' work (submitted/, autograded/, feedback/), every grade and hidden test (the gradebook), the names
# of everyone's inbound folders (the service's ledger).
COURSE_SECRETS = (".git/HEAD", f"source/{ASSIGNMENT}/{NOTEBOOK}", "gradebook.db", "gradebook.db.serve.json",
                  "submitted", "autograded", "feedback")


def cannot_read_the_course(reader, course_dir):
    """`reader` reads none of COURSE_SECRETS; each refusal is shown to be the path's own modes: with other
    accounts' permissions given back to that path (and the folders on its way), the same command reads it."""
    for secret in COURSE_SECRETS:
        path = course_dir / secret
        argv = ["ls", str(path)] if path.is_dir() else ["head", "-c", "16", str(path)]
        done = as_account(reader, *argv)
        assert done.returncode != 0 and "Permission denied" in done.stderr, (
            f"{reader} ran {' '.join(argv)}: {done.returncode}\n{done.stdout[:300]}")
        closed = [p for p in [*reversed(path.relative_to(course_dir).parents), Path(secret)]
                  if (course_dir / p).stat().st_mode & 0o005 != (0o005 if (course_dir / p).is_dir() else 0o004)]
        modes = {p: (course_dir / p).stat().st_mode for p in closed}
        try:
            for p in closed:
                (course_dir / p).chmod(modes[p] | (0o005 if (course_dir / p).is_dir() else 0o004))
            assert as_account(reader, *argv).returncode == 0, f"{secret}: refused for another reason than its modes"
        finally:
            for p in closed:
                (course_dir / p).chmod(modes[p])


# Run as a student: each port the grading service's processes listen on (its Dask scheduler, workers and nannies;
# /proc/net/tcp shows every listening port to every account) tried as a Dask scheduler, without credentials and with
# TLS credentials of its own. Prints where code ran.
DASK_ATTACK = r"""
import json, os, sys, threading
from distributed import Client
from distributed.security import Security

ran = []


def attempt(address, kwargs):
    try:
        with Client(address, timeout="3s", set_as_default=False, **kwargs) as client:
            ran.append(f"{address} ran code as uid {client.submit(os.getuid).result(timeout=10)}")
    except Exception:
        pass


for port in json.loads(sys.argv[1]):
    for scheme, kwargs in (("tcp", {}), ("tls", {"security": Security.temporary()})):
        # A port that accepts and never answers would hold a Client past its timeout: 10 s each at most.
        thread = threading.Thread(target=attempt, args=(f"{scheme}://127.0.0.1:{port}", kwargs), daemon=True)
        thread.start()
        thread.join(10)
print(json.dumps(ran), flush=True)
os._exit(0)
"""


def service_ports(served):
    """The ports the grading service (the process served) and the processes it started listen on, in its network
    namespace (theirs alone: /proc/<pid>/net/ shows the namespace of that process)."""
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{served.pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def cannot_reach_the_graders_cluster(reader, python, course_dir):
    """The grading service listens in a network namespace of its own (perfaudit/hub/own_network.py): not one of its
    ports is on the machine's loopback, where an attacker held thousands of connections to each until the service
    ran out of descriptors. Each is tried all the same, as a Dask cluster's, plain and with TLS."""
    [served] = [p for p in psutil.process_iter(["cmdline"])
                if {"perfaudit.serve", str(course_dir)} <= set(p.info["cmdline"] or [])]
    assert os.readlink(f"/proc/{served.pid}/ns/net") != os.readlink("/proc/self/ns/net"), served.cmdline()
    assert served.username() == pwd.getpwuid(course_dir.stat().st_uid).pw_name  # started by root, run as the owner
    ports = service_ports(served)
    assert ports, "the grading service listens nowhere: nothing was tried"
    done = as_account(reader, "env", "HOME=/tmp", str(python), "-c", DASK_ATTACK, json.dumps(ports))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [], f"{reader} ran code on the grader's cluster: {ports}"


# Run as a student: every listening TCP socket of the machine (/proc/net/tcp and tcp6: every account reads them) and
# every unix stream socket it may connect to (/proc/net/unix) tried as a Jupyter kernel's channels: subscribed to as
# its output (IOPub needs no key) and pinged as its heartbeat. Prints what answered, how many were tried, and each
# listening TCP socket seen, by its inode (which root then tells the process of: any of them a kernel's pipe for
# forked children takes a flood of a message with no key).
KERNEL_ATTACK = r"""
import json, os, socket, struct, sys, time
import zmq

listening = {}  # {endpoint: inode} of every listening TCP socket


def tcp_endpoints():
    found = set()
    for table, family in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6)):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":  # LISTEN
                continue
            address, port = fields[1].split(":")
            if family == 4:
                host = socket.inet_ntoa(struct.pack("<I", int(address, 16)))
                host = "127.0.0.1" if host == "0.0.0.0" else host
            else:
                raw = bytes.fromhex(address)
                host = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
                host = "[::1]" if host == "::" else f"[{host}]"
            found.add((f"tcp://{host}:{int(port, 16)}", int(port, 16)))
            listening[f"tcp://{host}:{int(port, 16)}"] = int(fields[9])
    return sorted(found)


def unix_endpoints():
    found = set()
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8 or not fields[7].startswith("/") or fields[4] != "0001":  # stream sockets with a path
            continue
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1)
        try:
            probe.connect(fields[7])
        except OSError:
            continue  # out of reach (its folder's modes): not tried
        finally:
            probe.close()
        found.add((f"ipc://{fields[7]}", fields[7]))
    return sorted(found)


context = zmq.Context()
sockets = {}
for endpoint, where in tcp_endpoints() + unix_endpoints():
    for kind in (zmq.SUB, zmq.DEALER):
        sock = context.socket(kind)
        sock.linger = 0
        sock.ipv6 = endpoint.startswith("tcp://[")
        if kind == zmq.SUB:
            sock.setsockopt(zmq.SUBSCRIBE, b"")
        sock.connect(endpoint)
        sockets[sock] = (endpoint, where, "SUB" if kind == zmq.SUB else "DEALER")
time.sleep(1)
for sock, (_, _, kind) in sockets.items():
    if kind == "DEALER":
        try:
            sock.send_multipart([b"", b"ping"], zmq.NOBLOCK)  # a heartbeat's echo
        except zmq.ZMQError:
            pass
poller = zmq.Poller()
for sock in sockets:
    poller.register(sock, zmq.POLLIN)
reached = {}
deadline = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 5)
while time.monotonic() < deadline:
    for sock, _ in poller.poll(200):
        frames = sock.recv_multipart()
        endpoint, where, kind = sockets[sock]
        reached.setdefault(endpoint, [where, kind, b" ".join(frames)[-300:].decode("utf-8", "replace")])
print(json.dumps({"tried": len(sockets) // 2, "reached": reached, "listening": listening}), flush=True)
os._exit(0)
"""


def kernel_channels_reached(reader, python, seconds=6):
    """({endpoint: [port or path, socket kind, what came back]} of what the reader reached, {endpoint: inode} of
    every listening TCP socket it saw)."""
    done = as_account(reader, "env", "HOME=/tmp", str(python), "-c", KERNEL_ATTACK, str(seconds))
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["tried"], "no listening socket was tried"
    return said["reached"], said["listening"]


def owner_of(where):
    """The account whose process listens at a port, or owns a unix socket's file."""
    if isinstance(where, str):
        return pwd.getpwuid(os.stat(where).st_uid).pw_name
    pids = {c.pid for c in psutil.net_connections("inet") if c.laddr and c.laddr.port == where and c.pid}
    return " ".join(sorted({psutil.Process(pid).username() for pid in pids})) or "unknown"


# A kernel whose output a classmate must not read: it prints its owner's work every half second.
PRINTING = ("import getpass, time\nfor i in range(1200):\n    print('WORK-OF-' + getpass.getuser(), i, flush=True)\n"
            "    time.sleep(0.5)\n")
START_PRINTING_KERNEL = """async ([base, code]) => {
    const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || "";
    const made = await fetch(base + "/api/kernels", {method: "POST", body: "{}",
        headers: {"X-XSRFToken": xsrf, "Content-Type": "application/json"}});
    const kernel = await made.json();
    const channels = new WebSocket(base.replace(/^http/, "ws") + "/api/kernels/" + kernel.id + "/channels");
    await new Promise((opened, failed) => { channels.onopen = opened; channels.onerror = failed; });
    channels.send(JSON.stringify({channel: "shell", buffers: [], metadata: {}, parent_header: {},
        header: {msg_id: "work", username: "", session: "work", msg_type: "execute_request", version: "5.3",
                 date: new Date().toISOString()},
        content: {code, silent: false, store_history: false, user_expressions: {}, allow_stdin: false,
                  stop_on_error: true}}));
    return kernel.id;
}"""


def start_printing_kernel(page, base):
    """A kernel in the server at base (a student's /user/<name>, Formgrader's /services/<course>), started by the
    page's person through its REST API and made to print: its process, once it prints."""
    kernel_id = page.evaluate(START_PRINTING_KERNEL, [base, PRINTING])
    deadline = time.monotonic() + 60
    while not (found := [p for p in psutil.process_iter(["cmdline"])
                         if any(kernel_id in part for part in p.info["cmdline"] or [])]):
        assert time.monotonic() < deadline, f"no kernel process for {kernel_id}"
        time.sleep(0.5)
    return found[0]


def kernels_are_private(kernel):
    """A kernel of the hub speaks over unix sockets in its owner's private runtime folder: its connection file says
    ipc, and the folder is its owner's alone."""
    connection = Path(kernel.cmdline()[kernel.cmdline().index("-f") + 1])
    assert json.loads(connection.read_text())["transport"] == "ipc", connection
    assert connection.parent.stat().st_mode & 0o777 == 0o700, connection.parent  # (jupyter makes it 1700)


def runs_under_the_limits(kernel):
    """A student's kernel and the server that started it run under the hub's limits
    (perfaudit/hub/server_limits.py): the memory of each process capped, their processes counted, their priority
    lowered; under the filter that refuses a user namespace (perfaudit/hub/namespace_guard.py), with no
    no_new_privs (a student's passwd works); and, where root may make cgroups, in the person's own
    (perfaudit/hub/person_groups.py): memory limited, and, with no cap asked, a CPU weight and no quota."""
    limits = settings.from_environment().limits
    hierarchies = person_groups.hierarchies()
    for process in (kernel, kernel.parent()):
        for hierarchy in hierarchies:
            own = {h.controllers: h.folder for h in person_groups.hierarchies(Path(f"/proc/{process.pid}"))}
            group = hierarchy.folder / person_groups.HUB_GROUP / process.username()
            assert own.get(hierarchy.controllers) == group, (process.cmdline(), own)
            for name, value in person_groups.limit_files(hierarchy, person_groups.GroupLimits(limits.memory_bytes),
                                                         group):
                assert (group / name).read_text().strip() == value, (group, name)
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{process.pid}/status").read_text().splitlines())
        assert (status["Seccomp"].strip(), status["NoNewPrivs"].strip()) == ("2", "0"), (process.cmdline(), status)
        found = {line[:26].strip(): line[26:].split()[:2] for line in
                 Path(f"/proc/{process.pid}/limits").read_text().splitlines()[1:]}  # prlimit(2) may be refused
        assert found["Max address space"] == [str(limits.memory_bytes)] * 2, (process.cmdline(), found)
        assert found["Max processes"] == [str(limits.processes)] * 2, (process.cmdline(), found)
        assert process.nice() == limits.nice, process.cmdline()


def the_class_s_memory_is_watched(hub):
    """The hub's limits service (perfaudit/hub/watchdog.py) runs, as root (it stops another account's process), over
    the course's students with their share (tests/hub/test_watchdog.py shows what it stops)."""
    group, share = f"nbgrader-{hub['course_id']}", str(settings.from_environment().limits.memory_bytes)
    watching = [p for p in psutil.process_iter(["cmdline", "username"])
                if {"perfaudit.hub.watchdog", group, share} <= set(p.info["cmdline"] or [])]
    assert [p.info["username"] for p in watching] == ["root"], watching


# A classmate's kernel on loopback TCP (jupyter_client's default): what the attacker must reach, to show the probe
# would find the hub's kernels if they listened there.
TCP_KERNEL = """
import sys, time
from jupyter_client import KernelManager
manager = KernelManager(transport="tcp")
manager.start_kernel()
client = manager.client()
client.start_channels()
client.wait_for_ready(timeout=120)
client.execute(sys.argv[1])
print("printing", flush=True)
time.sleep(float(sys.argv[2]))
manager.shutdown_kernel(now=True)
"""


def started_by_the_hub_s_servers(hub):
    """Every process the hub's Jupyter servers (each person's, Formgrader's) started: their kernels, terminals."""
    accounts = {*hub["students"], hub["attacker"], hub["instructor"], hub["owner"]}
    servers = [p for p in psutil.process_iter(["cmdline", "username"])
               if p.info["username"] in accounts and "jupyterhub.singleuser" in (p.info["cmdline"] or [])]
    assert servers, "no server of the hub's is running"
    return [child for server in servers for child in server.children(recursive=True)]


def sockets_held(processes):
    """{socket inode: the command line of the process holding it} of the processes still running."""
    held = {}
    for process in processes:
        try:
            held.update(dict.fromkeys(held_by(process.pid), " ".join(process.cmdline())))
        except (psutil.NoSuchProcess, FileNotFoundError):
            continue
    return held


def cannot_reach_a_classmate_s_kernel(hub, attacker, classmate):
    """The attacker tries every socket on the machine as a kernel's channels: they reach the classmate's kernel on
    loopback TCP (the control, started here) and no kernel of the hub's: no student's, no Formgrader's. No listening
    TCP socket they see is a hub's kernel's (its pipe for forked children's output, which takes a message with no key,
    included), while the control's are."""
    control = subprocess.Popen(["runuser", "-u", classmate, "--", "env", f"HOME={home(classmate)}",
                                str(hub["python"]), "-c", TCP_KERNEL, PRINTING, "120"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert control.stdout.readline().strip() == "printing", control.stderr.read()[-2000:]
        reached, listening = kernel_channels_reached(attacker, hub["python"])
        of_the_hub = sockets_held(started_by_the_hub_s_servers(hub))
        of_the_control = sockets_held(psutil.Process(control.pid).children(recursive=True))
    finally:
        control.kill()
    # the control kernel: its 5 channels and its pipe, each a port the attacker saw
    assert len({endpoint for endpoint, inode in listening.items() if inode in of_the_control}) == 6, listening
    found = {endpoint: of_the_hub[inode] for endpoint, inode in listening.items() if inode in of_the_hub}
    assert found == {}, f"{attacker} sees listening TCP sockets of the hub's kernels: {found}"
    by_owner = {endpoint: (owner_of(where), kind, said) for endpoint, (where, kind, said) in reached.items()}
    assert any(owner == classmate and f"WORK-OF-{classmate}" in said for owner, _, said in by_owner.values()), \
        f"the probe did not reach the control kernel on loopback TCP: {by_owner}"
    hub_accounts = {*hub["students"], hub["instructor"], hub["owner"]} - {classmate}
    leaked = {endpoint: found for endpoint, found in by_owner.items() if set(found[0].split()) & hub_accounts}
    assert leaked == {}, f"{attacker} reached a kernel of the hub: {leaked}"


# Run as an account: each port given, asked for /api as a browser would, without a token. Prints {port: the status
# line, or "closed"}.
SERVER_ATTACK = r"""
import json, socket, sys
said = {}
for port in json.loads(sys.argv[1]):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            said[port] = s.recv(64).decode(errors="replace").split("\r\n")[0] or "closed"
    except (ConnectionResetError, BrokenPipeError):
        said[port] = "closed"
print(json.dumps(said), flush=True)
"""


def servers_ports(hub):
    """{port: account} of every port the hub's Jupyter servers (each person's, Formgrader's) listen on."""
    accounts = {*hub["students"], hub["attacker"], hub["instructor"], hub["owner"]}
    ports = {}
    for server in psutil.process_iter(["cmdline", "username"]):
        if server.info["username"] in accounts and "jupyterhub.singleuser" in (server.info["cmdline"] or []):
            ports.update({c.laddr.port: server.info["username"] for c in server.net_connections("tcp")
                          if c.status == psutil.CONN_LISTEN})
    return ports


def servers_answer_only_their_own_account(hub, attacker, student):
    """Every server's port closes the attacker's connection unread (perfaudit/hub/peer_guard.py), and the
    student's: only the student's own server answers them (as their terminal's requests)."""
    ports = servers_ports(hub)
    assert student in ports.values() and hub["owner"] in ports.values(), ports
    for account in (attacker, student):
        done = as_account(account, "env", "HOME=/tmp", str(hub["python"]), "-c", SERVER_ATTACK,
                          json.dumps(sorted(ports)))
        assert done.returncode == 0, done.stderr[-2000:]
        said = {int(port): line for port, line in json.loads(done.stdout.splitlines()[-1]).items()}
        answered = {port: ports[port] for port, line in said.items() if line != "closed"}
        assert answered == {port: owner for port, owner in ports.items() if owner == account}, (account, said)
        assert all(said[port].startswith("HTTP/1.1 ") for port in answered), said


# As the attacker, through the hub's public port (the proxy hands the request on, as root): a PUT with a body and no
# login; the status line back.
UPLOAD = """
import socket, sys
from urllib.parse import urlsplit
url, size = urlsplit(sys.argv[1]), int(sys.argv[2])
with socket.create_connection((url.hostname, url.port), timeout=60) as s:
    s.sendall(f"PUT {url.path} HTTP/1.1\\r\\nHost: {url.netloc}\\r\\nContent-Length: {size}\\r\\n\\r\\n".encode())
    for _ in range(size // 2**20):
        s.sendall(b"x" * 2**20)
    print(s.recv(64).decode(errors="replace").split("\\r\\n")[0] or "closed")
"""


def bodies_without_a_login_are_dropped(hub, attacker, student):
    """The proxy hands a student's server and Formgrader anyone's request: a body sent without their login is dropped
    as it arrives (perfaudit/hub/body_guard.py), never held, and the request refused; each server logs it."""
    dropped = "Dropped the body of a request without this server's login"
    # none before: every request of the class's own so far (JupyterLab's, the Assignment List's) kept its body
    assert dropped not in hub["log"].read_text(), hub["log"].read_text()[-3000:]
    for path in (f"/user/{student}/api/contents/{ASSIGNMENT}/x.ipynb",
                 f"/services/{hub['course_id']}/api/contents/x.ipynb"):
        done = as_account(attacker, str(hub["python"]), "-c", UPLOAD, at(hub, path), str(8 * 2**20))
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().split(" ")[1] in ("403", "302"), (path, done.stdout)
    deadline = time.monotonic() + 30  # each server's log line reaches the hub's log through its output
    while hub["log"].read_text().count(dropped) < 2:
        assert time.monotonic() < deadline, hub["log"].read_text()[-3000:]
        time.sleep(0.5)


def plant_odd_entries(attacker, inbound):
    """As the attacker: a submission's folder (secret and all) they closed to the course's group (0740), and a FIFO
    named as a submission. Their names."""
    closed, fifo = (f"{attacker}+{ASSIGNMENT}+2026-01-01 10:00:00.000000 UTC+{what}" for what in ("closed", "fifo"))
    done = as_account(attacker, "sh", "-c", 'cd "$0" && mkdir "$1" && echo s > "$1/submission_secret.txt" && '
                      'chmod 740 "$1" && mkfifo "$2"', str(inbound), closed, fifo)
    assert done.returncode == 0, done.stderr
    return [closed, fifo]


def cannot_read_a_submission_by_name(reader, submission):
    """`reader`, knowing another student's inbound folder's name (nbgrader's exchange: students may write, not read,
    others' folders), can neither list it, read its notebook, nor write in it; with other accounts' permissions given
    to the folder and its files (nbgrader's own 0777/0644), the same commands read it."""
    notebook = submission / NOTEBOOK
    attempts = (["ls", str(submission)], ["head", "-c", "16", str(notebook)], ["touch", str(submission / "x")])
    for argv in attempts:
        done = as_account(reader, *argv)
        assert done.returncode != 0 and "Permission denied" in done.stderr, (
            f"{reader} ran {' '.join(argv)}: {done.returncode}\n{done.stdout[:300]}")
    modes = {p: p.stat().st_mode for p in (submission, notebook)}
    try:
        submission.chmod(0o777)
        notebook.chmod(0o644)
        assert all(as_account(reader, *argv).returncode == 0 for argv in attempts[:2]), "refused for another reason"
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
        (submission / "x").unlink(missing_ok=True)


def cannot_read_the_hubs_database(reader, state):
    """The hub's database (every user's tokens) is refused to `reader`; readable with 0644, its folder being open."""
    database = state / "jupyterhub.sqlite"
    argv = ["head", "-c", "16", str(database)]
    done = as_account(reader, *argv)
    assert done.returncode != 0 and "Permission denied" in done.stderr, f"{reader} read {database}"
    mode = database.stat().st_mode
    try:
        database.chmod(0o644)
        assert as_account(reader, *argv).returncode == 0, f"{database}: refused for another reason than its mode"
    finally:
        database.chmod(mode)


def formgrader_api(hub):
    """Formgrader's own API, under its hub service: the gradebook's students and submissions."""
    base = f"/services/{hub['course_id']}/formgrader"
    return [f"{base}/api/students", f"{base}/api/submissions/{ASSIGNMENT}", f"{base}/api/assignments",
            f"/services/{hub['course_id']}/api/contents/gradebook.db"]


def hub_api(hub):
    """The hub's REST API on what is not the caller's: the users, the instructor, another student, a token."""
    return [("GET", "/hub/api/users"), ("GET", f"/hub/api/users/{hub['instructor']}"),
            ("GET", f"/hub/api/users/{hub['students'][0]}"), ("POST", f"/hub/api/users/{hub['instructor']}/tokens"),
            ("GET", f"/hub/api/groups/formgrade-{hub['course_id']}")]


def test_two_students_and_an_instructor_through_the_hub(hub, chromium, artifacts):
    first, second = hub["students"]
    attacker = hub["attacker"]
    chosen = dict(zip(hub["students"], SUBMISSIONS))
    # Before anyone submits, the attacker leaves in inbound/ a submission's folder closed to the course's group (the
    # service may list it, not enter it) and a FIFO: the class is graded all the same.
    odd = plant_odd_entries(attacker, hub["exchange"] / "inbound")
    with logged_in(chromium, hub, first, artifacts) as page_1, logged_in(chromium, hub, second, artifacts) as page_2:
        pages = {first: page_1, second: page_2}
        for name, page in pages.items():
            fetch(page, hub, name)
            write_work(name, chosen[name])
            submit(page)
        page_1.screenshot(path=str(artifacts / "hub-submitted.png"))

        found = wait_for(hub["course"], lambda f: sorted(r["status"] for r in f.values() if r["student"] != attacker)
                         == ["graded", "graded"], "the grading service's two gradings")
        assert course.scores(hub["course"]) == {name: {STEM: (SUBMISSIONS[chosen[name]], 5)} for name in pages}, found
        for name, page in pages.items():
            text = fetch_feedback(page, hub, name)
            assert f"{STEM} (Score: {SUBMISSIONS[chosen[name]]:.1f} / 5.0)" in text, text[:2000]
        # A student's terminal runs the course's python, JAX and nbgrader, as their notebooks do.
        shell = open_terminal(page_1, at(hub, f"/user/{first}"), server_of(first))
        assert shell.username() == first and shell.cmdline() == ["/bin/bash"], shell.cmdline()
        runs_the_course_s_tools(first, shell.environ()["PATH"], "import jax, perfaudit")
        # The first student works in a kernel of their JupyterLab, which prints their work (the attacker tries it).
        kernel = start_printing_kernel(page_1, at(hub, f"/user/{first}"))
        kernels_are_private(kernel)
        runs_under_the_limits(kernel)
        the_class_s_memory_is_watched(hub)
        # Each server, Formgrader's too, closes another account's connection unread: no classmate's request body
        # or idle connection held at its owner's cost.
        servers_answer_only_their_own_account(hub, attacker, second)
        # ... nor, through the proxy, keeps a body sent without its login
        bodies_without_a_login_are_dropped(hub, attacker, first)
        # A page of the attacker's origin, opened in her browser, reaches none of her server's pages or API: her own
        # origin's page does (the control: the probe reads what it may).
        own, foreign = page_1, page_1.context.new_page()
        foreign.goto(at(hub, f"/user/{attacker}/anything"))
        probe = [at(hub, f"/user/{first}/lab"), at(hub, f"/user/{first}/api/contents/{ASSIGNMENT}")]
        assert [r.split(":")[0] for r in own.evaluate(PROBE, probe)] == ["read", "read"]
        assert foreign.evaluate(PROBE, probe) == ["refused: SecurityError", "refused: TypeError"], foreign.url
        foreign.close()

        # The second student, through the hub: the first's server (files, JupyterLab) is not theirs to open.
        for path in (f"/user/{first}/lab", f"/user/{first}/files/{ASSIGNMENT}/{NOTEBOOK}",
                     f"/user/{first}/api/contents/{ASSIGNMENT}/{NOTEBOOK}"):
            answer = page_2.request.get(at(hub, path))
            assert answer.status == 403, (path, answer.status, answer.url)
        # ... by path, as their own code runs (their account), and through the exchange.
        [submission] = [p for p in hub["exchange"].joinpath("inbound").iterdir() if p.name.startswith(f"{first}+")]
        cannot_read_by_path(second, home(first), home(first) / ASSIGNMENT / NOTEBOOK)
        cannot_list_the_exchange(second, hub["exchange"])
        assert exchange.loosened(hub["exchange"].parent, hub["course_id"]) == []
        assert submission.owner() == first  # the service's per-student limit counts the hub account that submitted
        assert {p.group() for p in [submission, *submission.iterdir()]} == {hub["owner"]}  # read through the group

        # A student is refused Formgrader (a hub service for the instructors' group) and has no grading service
        # page to reach: it has no route through the proxy.
        formgrader = f"/services/{hub['course_id']}/formgrader"
        assert page_1.request.get(at(hub, formgrader)).status == 403
        assert page_1.request.get(at(hub, "/services/grading/")).status == 404

    # The attacker's odd entries are recorded as theirs, skipped (the closed folder once unchanged for a while).
    wait_for(hub["course"], lambda f: {n for n, r in f.items() if r["status"] == "skipped" and r["student"] == attacker}
             == set(odd), "the attacker's odd entries skipped")

    # The attacker, a third student, tries each route to the course, the others' work and the owner's rights.
    # By path, as their own code runs: the course directory, another's submission by its name, the hub's database.
    cannot_read_the_course(attacker, hub["course"])
    cannot_read_a_submission_by_name(attacker, submission)
    cannot_read_the_hubs_database(attacker, hub["state"])
    # ... the grading service's Dask cluster (it would run their code as the course's owner)
    cannot_reach_the_graders_cluster(attacker, hub["python"], hub["course"])
    # ... and, logged in, Formgrader's API and the hub's API. Each route is real: the instructor reads Formgrader's
    # (the same requests answer 200 with the students in them).
    refused = {}
    with logged_in(chromium, hub, attacker, artifacts, then="/hub/home") as page:
        page.wait_for_url("**/hub/home**")
        for path in formgrader_api(hub):
            refused[path] = page.request.get(at(hub, path)).status  # through the hub's OAuth: refused
        xsrf = next((c["value"] for c in page.context.cookies() if c["name"] == "_xsrf"), "")

        def hub_request(method, path):
            return page.request.fetch(at(hub, path), method=method, headers={"X-XSRFToken": xsrf})

        for method, path in hub_api(hub):
            refused[f"{method} {path}"] = hub_request(method, path).status
        own = hub_request("GET", f"/hub/api/users/{attacker}")  # the same cookie reads the attacker's own record
        assert own.ok and own.json()["name"] == attacker, own.status
    assert all(status in (403, 404) for status in refused.values()), refused

    with logged_in(chromium, hub, hub["instructor"], artifacts, then="/hub/home") as page:
        page.wait_for_url("**/hub/home**")  # JupyterHub sends a login's next page to its own domain: Formgrader's
        page.goto(at(hub, f"{formgrader}/manage_students"))  # is on the service's, as the Services menu links it
        page.wait_for_url(at(hub, f"{formgrader}/manage_students") + "**")
        rows = page.locator("table tbody tr")
        for name, full in zip(hub["students"], FULL_NAMES):
            row = rows.filter(has_text=name)
            row.wait_for()
            shown = " ".join(row.inner_text().split())
            assert f"{SUBMISSIONS[chosen[name]]} / 5" in shown and "{1}, {0}".format(*full.split()) in shown, shown
        page.screenshot(path=str(artifacts / "hub-formgrader.png"))
        # The routes the attacker was refused answer the instructor.
        for path in formgrader_api(hub)[:2]:
            answer = page.request.get(at(hub, path))
            assert answer.ok and first in answer.text(), (path, answer.status)
        # A page of a student's origin, opened by the instructor, reaches neither Formgrader nor its course's files.
        foreign = page.context.new_page()
        foreign.goto(at(hub, f"/user/{attacker}/anything"))
        probe = [at(hub, f"{formgrader}/manage_students"), at(hub, f"/services/{hub['course_id']}/api/contents/source")]
        assert foreign.evaluate(PROBE, probe) == ["refused: SecurityError", "refused: TypeError"], foreign.url
        foreign.close()
        # Formgrader's terminal: the course's owner, with the course's environment (not a login shell's PATH).
        terminal = open_terminal(page, at(hub, f"/services/{hub['course_id']}"), formgrader_server(hub))
        # ... and a kernel of Formgrader's, printing (the gradebook's owner's work), which the attacker tries too.
        kernels_are_private(start_printing_kernel(page, at(hub, f"/services/{hub['course_id']}")))
    the_terminal_has_the_course_s_environment(hub, terminal)
    # The attacker tries every socket of the machine as a kernel's: the first student's and Formgrader's kernels
    # are out of reach, while a classmate's kernel on loopback TCP (the control) is read.
    cannot_reach_a_classmate_s_kernel(hub, attacker, second)
    # What make feedback runs, from that terminal after manual grading: every page again, as the course's owner;
    # and nothing in the course is root's afterwards (the hub's own steps and this test's reads included).
    done = as_account(hub["owner"], "env", f"PATH={terminal.environ()['PATH']}", f"HOME={home(hub['owner'])}",
                      "sh", "-c", f"umask {umask(terminal)} && cd '{hub['course']}' && python -m perfaudit.grade "
                      "--feedback-only")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    pages = sorted((hub["course"] / "feedback").glob(f"*/{ASSIGNMENT}/{STEM}.html"))
    assert len(pages) == 2 and not (hub["course"] / "feedback").stat().st_mode & 0o007
    refused = as_account(hub["attacker"], "head", "-c", "16", str(pages[0]))  # nbgrader writes pages 0644, in there
    assert refused.returncode != 0 and "Permission denied" in refused.stderr, refused.stdout
    not_owners = [str(p) for p in [hub["course"], *hub["course"].rglob("*")] if p.owner() != hub["owner"]]
    assert not_owners == [], not_owners


def umask(process):
    return next(line.split()[1] for line in Path(f"/proc/{process.pid}/status").read_text().splitlines()
                if line.startswith("Umask:"))


def server_of(name):
    """A person's Jupyter server: the process the hub started as them."""
    [server] = [p for p in psutil.process_iter(["cmdline", "username"])
                if p.info["username"] == name and "jupyterhub.singleuser" in " ".join(p.info["cmdline"] or [])
                and p.parent() and "jupyterhub" in " ".join(p.parent().cmdline())]
    return server


def formgrader_server(hub):
    [formgrader] = [p for p in psutil.process_iter(["cmdline"])
                    if f"--ServerApp.root_dir={hub['course']}" in (p.info["cmdline"] or [])]
    return formgrader


def open_terminal(page, base, server):
    """A terminal in the Jupyter server at base, opened by the person logged in on page (its REST API, with their
    cookie): the process of its shell, a child of server."""
    xsrf = page.evaluate("() => (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || ''")
    made = page.request.post(f"{base}/api/terminals", headers={"X-XSRFToken": xsrf})
    assert made.ok, (made.status, made.text()[:300])
    deadline = time.monotonic() + 30
    while not (shells := [c for c in server.children() if c.name() == "bash"]):
        assert time.monotonic() < deadline, f"no shell under {server.cmdline()} after opening a terminal"
        time.sleep(0.2)
    return shells[0]


def runs_the_course_s_tools(name, path, imports):
    """python (the course's), nbgrader and alembic run as name with PATH path, and python imports `imports`."""
    done = as_account(name, "env", "-i", f"PATH={path}", f"HOME={home(name)}", "sh", "-c",
                      f"nbgrader --version && alembic --version && python -c '{imports}'")
    assert done.returncode == 0, done.stderr[-2000:]


def the_terminal_has_the_course_s_environment(hub, shell):
    """The shell runs as the course's owner, not as a login shell (whose /etc/profile resets PATH), and python,
    nbgrader and alembic run there, perfaudit importable."""
    assert shell.username() == hub["owner"] and shell.cmdline() == ["/bin/bash"], shell.cmdline()
    assert umask(shell) == "0007"  # Formgrader's: what the terminal makes is born without other accounts' rights
    path = shell.environ()["PATH"]
    assert path.split(os.pathsep)[0] == str(hub["python"].parent), path
    runs_the_course_s_tools(hub["owner"], path, "import perfaudit")
