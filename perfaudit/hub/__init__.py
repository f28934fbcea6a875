"""make hub: the course on JupyterHub on one machine (docs/hub.md).

settings.py  where things are, from the environment
accounts.py  the class's local users and groups (make hub-users)
exchange.py  nbgrader's shared exchange, permissioned as nbgrader's JupyterHub chapter gives it, and the course
             folders students must not read
userenv.py   the Python every account's JupyterLab runs: the course's venv, through an interpreter each can run
preflight.py make hub's checks: a course root owns is refused; the course's owner can run what the services run
people.py    the students' names in the gradebook (Formgrader's list), written as the course's owner
server_limits.py  what each person's server may take: memory per process, processes per account, nice (rlimits)
watchdog.py  each student's memory in total under their share: their largest process stopped past it (a service)
held_memory.py  the memory no resident set shows that the watchdog counts: memfds, removed tmpfs files, SysV segments
exchange_share.py  each student's bytes in the exchange under their share, where no user quota keeps them
namespace_guard.py  the hub's spawner: each server starts where no user namespace (hidden memory) can be made
person_groups.py  each person's server in cgroups of their own, where the machine has them: all their memory, fair CPU
servers.py   which of a student's processes is their server: the one the hub started (both of the above spare it)
submit.py    nbgrader's Submit in students' servers: a submission is the student's and the owner's group's alone
release_feedback.py  nbgrader's release_feedback, each released page readable by the student who fetches it
own_network.py  the grading service in a network namespace of its own: its Dask cluster's ports beyond every account
jupyterhub_config.py  the hub: authenticator, spawner, Formgrader and the grading service as hub services
peer_guard.py  each server's connections from other accounts than root (the proxy) and its own, closed unread
body_guard.py  each server's request bodies read only with its login: a body sent through the proxy without, dropped
private_pipe.py  the kernel the hub's users run: ipykernel, its pipe from forked children on a private unix socket
kernelspecs.py  Formgrader's kernelspecs: the hub's python3 first (each person's server: JUPYTER_PATH)
jupyter_data/  the hub's python3 kernelspec, which runs private_pipe.py
students/    the Jupyter config every student's server reads
proxy/       the proxy's pinned npm packages
"""
