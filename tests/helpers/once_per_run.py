"""Work made once per test run, also when pytest-xdist runs the tests in several processes.

The first process that asks for a thing makes it in a folder of the run's temporary directory, under a file
lock; the others wait on the lock and get the same folder and the same result. A failure is kept too: the
others raise it instead of doing the same slow work again.
"""

import fcntl
import os
import pickle
import shutil
import traceback


class MadeElsewhereFailed(RuntimeError):
    """Making the thing failed in the process that tried first."""


def _run_dir(tmp_path_factory):
    """The temporary directory all processes of this run share (xdist gives each worker a folder inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(tmp_path_factory, name, make):
    """(folder, make(folder)'s result): make runs once per test run; its result must pickle."""
    root = _run_dir(tmp_path_factory) / "once-per-run"
    root.mkdir(exist_ok=True)
    folder, result = root / name, root / f"{name}.result"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not result.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                made = (True, make(folder))
            except BaseException:
                made = (False, traceback.format_exc())
                result.write_bytes(pickle.dumps(made))
                raise
            result.write_bytes(pickle.dumps(made))
        ok, value = pickle.loads(result.read_bytes())
    if not ok:
        raise MadeElsewhereFailed(f"making {name!r} failed in another test process:\n{value}")
    return folder, value
