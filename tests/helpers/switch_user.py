"""Run a function as another account of this machine, as a service that runs as the course's owner runs it.

Root passes every permission check: a test of what an account may not read (a student's folder at 0740 in the
exchange) runs the code under test as an ordinary account. The function runs in a forked child that takes the
account's uid and gid (no supplementary groups) before it is called: the modules it needs are imported already, so
nothing under root's own folders (a Python under /root/.pyenv) is read after the switch.
"""

import json
import os
import pwd
import traceback


def run_as(account, function, *args):
    """function(*args) in a child process running as `account`: what it returns (JSON-able), or, when it raises,
    an AssertionError holding the child's traceback."""
    if os.geteuid() != 0:
        raise AssertionError("running code as another account needs root (CI runs the tests as root)")
    entry = pwd.getpwnam(account)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(reader)
        status = 1
        try:
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
            said = json.dumps({"result": function(*args)})
            status = 0
        except BaseException:  # noqa: BLE001 - whatever it was goes back to the test, which fails with it
            said = json.dumps({"traceback": traceback.format_exc()})
        with os.fdopen(writer, "w") as out:
            out.write(said)
        os._exit(status)
    os.close(writer)
    with os.fdopen(reader) as answer:
        said = answer.read()
    os.waitpid(pid, 0)
    found = json.loads(said or '{"traceback": "the child said nothing"}')
    if "traceback" in found:
        raise AssertionError(f"as {account}:\n{found['traceback']}")
    return found["result"]
