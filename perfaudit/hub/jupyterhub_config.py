"""The course's JupyterHub (make hub; docs/hub.md): `jupyterhub -f perfaudit/hub/jupyterhub_config.py`, as root.

One machine: each person logs in with their Linux account's password (PAM; make hub-users makes the accounts)
and gets JupyterLab running as that account, in its private home. Formgrader is a hub service that only the
course's instructors' group reaches (nbgrader's "one class, multiple graders"); the grading service
(python -m perfaudit.serve) is a hub-managed service: the hub starts it, gives it an API token of its own,
restarts it if it stops, and stops it with the hub. Where things are: perfaudit/hub/settings.py.
"""

import os

from perfaudit.hub import body_guard, exchange, own_network, preflight, servers, settings, userenv
from perfaudit.lab import STUDENT_CONFIG
from perfaudit.serve import limits_notes

c = get_config()  # noqa: F821 (provided by jupyterhub)
hub = settings.from_environment()
body_guard.bound_the_hub_s_own_requests()  # the hub's own pages read 1 MiB of a body at most (an anonymous login's)
course_id = hub.course_id
students, instructors = hub.groups()
# The Python every account's process runs (the course venv's, or a thin venv over it: perfaudit/hub/userenv.py).
python = userenv.accounts_python(hub.venv_bin, settings.ACCOUNTS_PYTHON)
accounts_path = preflight.services_path(python, hub.venv_bin)


# --- where it listens, and its own files -----------------------------------------------------------------------
c.JupyterHub.bind_url = hub.url
# Each person's server, and Formgrader, on a domain of its own (<name>.<domain>, <course>--service.<domain>): the
# browser keeps a page from one origin out of another's. On one origin, a page a student's server answers with (its
# owner controls that process: a config file, or the port taken after it is killed) read a classmate's notebooks,
# opened a terminal as her and, opened by an instructor, Formgrader's answer key, each with one click (a held-out
# attacker). JupyterHub: "Subdomains are the only way to reliably isolate user servers from each other." Over HTTPS,
# cookies a subdomain cannot set for another (__Host-: JupyterHub's cookie_host_prefix_enabled).
if hub.domain:
    c.JupyterHub.subdomain_host = hub.domain
    c.JupyterHub.cookie_host_prefix_enabled = hub.domain.startswith("https://")
if hub.tls:  # HTTPS from the hub's own proxy, with the wildcard certificate (else from a reverse proxy in front)
    c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = hub.tls
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = hub.hub_port
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{hub.proxy_api_port}"
c.ConfigurableHTTPProxy.command = [str(settings.PROXY)]
if exchange.state_problem(hub.state):  # a folder the course's owner writes could hold a link where root writes next
    raise SystemExit(exchange.state_problem(hub.state))
hub.state.mkdir(mode=0o700, parents=True, exist_ok=True)  # its database and cookie secret: root's alone
# The state folder may be open to every account (make hub-users made it first, and .hub/accounts-python in it is what
# each JupyterLab runs): the database, with every user's tokens, is the hub's alone whatever its folder's mode. The
# cookie secret JupyterHub writes 0600 itself.
exchange.keep_private(hub.state / "jupyterhub.sqlite")
c.JupyterHub.db_url = f"sqlite:///{hub.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(hub.state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(hub.state / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(hub.state / "jupyterhub-proxy.pid")  # not the course directory (make hub's cwd)

# --- who logs in ---------------------------------------------------------------------------------------------------
# PAM: the accounts' own passwords; only the course's two groups (make hub-users puts each person in one).
# Swap it for the campus's sign-in with one line each, the accounts staying as they are:
#   LTI 1.3 from the LMS (pip install jupyterhub-ltiauthenticator):
#     c.JupyterHub.authenticator_class = "ltiauthenticator.lti13.authenticator.LTI13Authenticator"
#     c.LTI13Authenticator.issuer, .authorize_url, .jwks_endpoint, .client_id: from the LMS's tool registration
#   Campus OAuth / OpenID Connect (pip install oauthenticator):
#     c.JupyterHub.authenticator_class = "oauthenticator.generic.GenericOAuthenticator"
#     c.GenericOAuthenticator.client_id, .client_secret, .authorize_url, .token_url, .userdata_url, .username_claim
#   and, with either, c.LocalAuthenticator.create_system_users = True or make hub-users for the same names.
c.JupyterHub.authenticator_class = "pam"
c.LocalAuthenticator.allowed_groups = {students, instructors}
c.Authenticator.admin_users = set()  # nobody reaches another person's server, instructors included

# --- each person's JupyterLab: their own account, their home, the course's exchange --------------------------------
# Under the per-person limits (perfaudit/hub/server_limits.py): memory per process, processes per account, nice 10;
# and no user namespace, where memory would hide from the watchdog (perfaudit/hub/namespace_guard.py).
c.JupyterHub.spawner_class = "perfaudit.hub.namespace_guard.GuardedSpawner"
c.Spawner.cmd = hub.limits.command([str(python), "-m", "jupyterhub.singleuser"])
c.Spawner.mem_limit = hub.limits.memory_bytes  # told to the server too (MEM_LIMIT), for what shows memory use
c.Spawner.cpu_limit = hub.limits.cpus  # a cap, where cgroups are (perfaudit/hub/person_groups.py); None: fair shares
# A terminal's shell, not a login shell: /etc/profile would put PATH back to the system's (no python, no nbgrader).
TERMINAL_SHELL = "/bin/bash"
c.Spawner.args = [settings.PRIVATE_KERNELS,  # kernels on unix sockets in the person's private runtime folder
                  f"--ServerApp.terminado_settings=shell_command={TERMINAL_SHELL}",  # the course's python first
                  *settings.BOUNDED_REQUESTS,  # no request body held past 64 MiB before its token is read
                  settings.GUARDED_PEERS,  # ... and none of a classmate's read at all: their connections closed unread
                  settings.GUARDED_BODIES]  # ... nor, through the proxy, a body sent without the owner's login
c.Spawner.default_url = "/lab"
c.Spawner.disable_user_config = True  # no ~/.jupyter config of theirs runs in their server (JupyterHub's advice)
# A server its student stopped keeps its route until the hub looks (every 30 s by default), and its port is free for
# any process of theirs to answer there (its pages then on their server's origin): the hub looks every 5 s.
c.Spawner.poll_interval = 5
c.Spawner.environment = {
    "PATH": accounts_path,
    # nbgrader's course and exchange (students/nbgrader_config.py); nbgrader's instructor tools turned off in
    # JupyterLab as make lab turns them off (perfaudit/student_lab/).
    "JUPYTER_CONFIG_PATH": os.pathsep.join([str(settings.STUDENTS_CONFIG), str(STUDENT_CONFIG)]),
    "PERFAUDIT_COURSE_ID": course_id,
    "PERFAUDIT_EXCHANGE": str(hub.exchange),
    # The hub's python3 kernelspec, found first by the server, Validate and the terminal: no kernel of theirs
    # listens on a loopback port (perfaudit/hub/private_pipe.py).
    "JUPYTER_PATH": str(settings.JUPYTER_DATA),
}

# --- instructors: Formgrader, as a hub service only their group reaches --------------------------------------------
c.JupyterHub.load_groups = {group: {"users": servers.members(group)} for group in (students, instructors)}
c.JupyterHub.load_roles = [
    {"name": "formgrader", "groups": [instructors], "scopes": [f"access:services!service={course_id}"]},
]
# Formgrader and the grading service run as the course directory's owner: an instructor's terminal in Formgrader
# is that account's, never root's. make hub refuses a course root owns (perfaudit/hub/preflight.py); started by hand
# on such a course, they run as the hub does, with the course venv's own Python.
owner = hub.owner.pw_name
PRIVATE = ["/bin/sh", "-c", f"umask {preflight.PRIVATE_UMASK:03o} && exec \"$0\" \"$@\""]  # then the command
as_owner = {"user": owner} if os.geteuid() == 0 and owner != "root" else {}
service_python = python if as_owner else hub.venv_bin / "python"
hub_path = os.pathsep.join([str(hub.venv_bin), os.environ.get("PATH", "/usr/bin:/bin")])
# What make hub's check runs with too (perfaudit/hub/preflight.py), so that what it passes the service meets.
service_environment = (preflight.services_environment(hub, python) if as_owner else
                       {"PATH": hub_path, "PERFAUDIT_EXCHANGE": str(hub.exchange)})
# Where the limits service leaves a note for each student it stops, which the grading service tells them on their next
# feedback page (perfaudit/serve/limits_notes.py): in root's state folder, the course's owner's alone.
limits_folder = hub.state / "limits-notes"
if hub.grading:
    limits_notes.prepare(limits_folder, hub.owner.pw_uid)
serve = [str(service_python), "-m", "perfaudit.serve", "--course-dir", str(hub.course), "--limits-notes",
         str(limits_folder), *hub.serve_args]
served_alone = own_network.command(hub, serve)  # the service started by root in a namespace of its own, or None
c.JupyterHub.services = [
    {   # JupyterLab at the course directory, run by the course's owner: Nbgrader > Formgrader, or
        # /services/<course>/formgrader. Named after the course, as nbgrader's chapter asks.
        "name": course_id,
        "url": f"http://127.0.0.1:{hub.formgrader_port}",
        # Under umask 007: what Formgrader writes (collected submissions, manual grades' journal, what its terminal
        # makes) is born without other accounts' permissions; released pages are opened on purpose
        # (perfaudit/hub/release_feedback.py).
        "command": [*PRIVATE, str(service_python), "-m", "jupyterhub.singleuser", f"--ServerApp.root_dir={hub.course}",
                    settings.PRIVATE_KERNELS,  # the instructors' kernels as private as students'
                    settings.HUB_KERNELSPECS,  # ... the hub's python3 kernelspec too (not the autograde sandbox's)
                    *settings.BOUNDED_REQUESTS,
                    settings.GUARDED_PEERS,  # only the proxy (root) and the owner's own processes connect
                    settings.GUARDED_BODIES,  # and a body is read only with an instructor's login
                    # Its terminal: the course's environment as the service has it, make feedback included.
                    f"--ServerApp.terminado_settings=shell_command={TERMINAL_SHELL}",
                    *(["--allow-root"] if os.geteuid() == 0 and not as_owner else [])],
        "cwd": str(hub.course),
        "environment": service_environment,
        "oauth_no_confirm": True,
        **as_owner,
    },
    *([{  # The grading service: no web page and no route through the proxy; the hub gives it JUPYTERHUB_API_TOKEN.
        # Started by root in a network namespace of its own, as the course's owner: no other account reaches its
        # Dask cluster's ports (perfaudit/hub/own_network.py); else as the owner, on the machine's network.
        "name": "grading",
        "command": served_alone or serve,
        "cwd": str(hub.course),
        "environment": service_environment,
        **({} if served_alone else as_owner),
    }] if hub.grading else []),
    {   # Each student's memory in total, and bytes in the exchange, under their share (perfaudit/hub/watchdog.py,
        # exchange_share.py): as the hub (root), which alone may stop another account's process; no web page, no
        # route through the proxy, no token's use. This file runs in the hub's process: its pid tells the servers
        # (the hub's children) from what students start (perfaudit/hub/servers.py).
        "name": "limits",
        "command": [str(hub.venv_bin / "python"), "-m", "perfaudit.hub.watchdog", students,
                    "--hub-pid", str(os.getpid()), "--memory", str(hub.limits.memory_bytes),
                    "--exchange", str(hub.exchange), "--disk", str(hub.limits.exchange_bytes),
                    *(["--limits-notes", str(limits_folder)] if hub.grading else [])],
        "environment": {"PATH": hub_path},
    },
]
