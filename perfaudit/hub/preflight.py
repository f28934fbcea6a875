"""Before the hub starts (make hub): the course's owner can run what Formgrader and the grading service run.

Both run as the course directory's owner, with the Python every account runs (perfaudit/hub/userenv.py) and the
services' PATH. make hub runs `python -m perfaudit.serve --check` as that account, with that environment: nbgrader,
`alembic` (which nbgrader runs from PATH), bubblewrap, the folders the service writes. A course root owns is refused:
Formgrader's terminal would be a root shell for every instructor, and the grading service would grade as root.
Each answer is one line.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from perfaudit.hub import own_network

PRIVATE_UMASK = 0o007  # what the course's processes make is never other accounts' (a gradebook made by people.py)
CHECK_TIMEOUT_S = 300  # imports nbgrader, JAX's canary is not run: a minute on a busy machine


# The system's commands, after the course's: never root's own PATH (a pyenv's shims under /root, /usr/sbin), which
# no other account needs or may run.
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def services_path(python, venv_bin):
    """PATH of Formgrader, the grading service and each person's JupyterLab: the Python every account runs (with
    the venv's commands beside it, when it is the thin venv), then the venv's own bin, then the system's."""
    return os.pathsep.join(dict.fromkeys([str(Path(python).parent), str(venv_bin), SYSTEM_PATH]))


def services_environment(hub, python):
    """What the hub gives Formgrader and the grading service (c.JupyterHub.services' environment), beside what
    JupyterHub adds itself (the account's HOME, USER, SHELL; its JUPYTERHUB_ variables)."""
    return {"PATH": services_path(python, hub.venv_bin), "PERFAUDIT_EXCHANGE": str(hub.exchange)}


def as_the_service_runs(hub, python):
    """The environment the grading service runs with under the hub (JupyterHub's LocalProcessSpawner gives a service
    its environment, the account's HOME, USER and SHELL, and of the hub's own only Spawner.env_keep), so a check
    made with it meets what the service will meet."""
    from jupyterhub.spawner import Spawner  # the hub's own package: seconds to import, for this check alone

    kept = {key: os.environ[key] for key in Spawner().env_keep if key in os.environ}
    return {**kept, **services_environment(hub, python), "HOME": hub.owner.pw_dir, "USER": hub.owner.pw_name,
            "SHELL": hub.owner.pw_shell}


def root_owned(hub):
    """The one line that refuses a course root owns, or None."""
    if hub.owner.pw_uid != 0:
        return None
    return (f"Refused: root owns the course directory {hub.course}, so Formgrader's terminal would be a root shell "
            "for every instructor and the grading service would grade as root. Give the course an account of its "
            f"own: useradd --create-home grader && chown -R grader: {hub.course} (docs/hub.md).")


def shared_origin(hub):
    """make hub's refusal, in one line, to serve a class from one origin; None where each server has its own."""
    if hub.domain:
        if not re.fullmatch(r"https?://[a-z0-9.-]+(:[0-9]+)?", hub.domain):
            return f"refused: PERFAUDIT_HUB_DOMAIN={hub.domain!r} is not https://<host name>[:port]"
        return None
    if hub.shared_origin:
        return None
    return ("refused: every student's server would be served from the hub's one origin, where a page one of them "
            "serves acts as any classmate who opens it (JupyterHub's own warning); set PERFAUDIT_HUB_DOMAIN="
            "https://<the hub's host name> with a wildcard DNS record and certificate for *.<that name> "
            "(docs/hub.md), or PERFAUDIT_HUB_SHARED_ORIGIN=1 for people who trust each other")


def run_as_owner(hub, python, *args, as_the_service=False):
    """`python -m ARGS` as the course's owner, in the course directory (Python puts it first on sys.path: what is
    there is read as the service reads it), with the service's environment; as_the_service: started as the hub
    starts the grading service, in a network namespace of its own where it has one (perfaudit/hub/own_network.py).
    The finished process."""
    argv = [str(python), "-m", *args]
    if os.geteuid() == 0 and hub.owner.pw_uid != 0:
        runuser = shutil.which("runuser") or "/usr/sbin/runuser"  # root's PATH finds it; the service's has no sbin
        argv = (as_the_service and own_network.command(hub, argv)) or [runuser, "-u", hub.owner.pw_name, "--", *argv]
    return subprocess.run(argv, cwd=hub.course, env=as_the_service_runs(hub, python), capture_output=True, text=True,
                          timeout=CHECK_TIMEOUT_S, umask=PRIVATE_UMASK)


def last_line(done):
    """The command's own last line (its stdout's), else its error's (a traceback's last line, runuser's)."""
    for stream in (done.stdout, done.stderr):
        said = [line for line in stream.splitlines() if line.strip()]
        if said:
            return said[-1]
    return f"exit status {done.returncode}"


def owner_problem(hub, python):
    """Why the course's owner cannot run the grading service's commands, in one line; None when it can."""
    try:
        done = run_as_owner(hub, python, "perfaudit.serve", "--check", "--course-dir", str(hub.course),
                            as_the_service=True)
    except subprocess.TimeoutExpired:
        return f"The course's owner {hub.owner.pw_name} could not be checked: the check took over {CHECK_TIMEOUT_S} s."
    if done.returncode == 0:
        return None
    if "The grading service cannot grade" in last_line(done):
        return last_line(done)
    return f"The course's owner {hub.owner.pw_name} cannot run {python} -m perfaudit.serve: {last_line(done)}"
