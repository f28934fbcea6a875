"""The grading sandbox, for real (bubblewrap, no mocks): what student code in an autograde kernel can and cannot do.

A notebook of probes runs through TrustedExecute, which starts its kernel exactly as autograde does. Without a
sandbox, grading refuses with instructions; with PERFAUDIT_UNSANDBOXED=1 it grades and says it did so unsandboxed.
"""

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import types
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from perfaudit import ASSIGNMENT, paths
from perfaudit.autograde.isolation import sandbox
from perfaudit.autograde.isolation.boundary import HostFolder
from perfaudit.autograde.isolation.limits import SandboxLimits
from perfaudit.autograde.plugins.execute import OUTPUT_DROPPED, TrustedExecute
from perfaudit.grade.run import Options, run

needs_bubblewrap = pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}")

MISSING_BWRAP = "/nonexistent/bwrap"


@contextlib.contextmanager
def environment(**settings):
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _run_cells(cells, workdir, **settings):
    """Each cell's result: what it printed, or 'ename: evalue' for its error. workdir: the submission's folder."""
    nb = new_notebook(cells=[new_code_cell(source) for source in cells])
    nb, _ = TrustedExecute(timeout=60, **settings).preprocess(nb, {"metadata": {"path": str(workdir)}})
    results = []
    for cell in nb.cells:
        errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
        results.append(errors[0] if errors else "".join(o.get("text", "") for o in cell.outputs))
    return results


def _course_like(root):
    """What a grading machine holds besides the student's own folder: a gradebook, source/, others' work."""
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    (root / "source" / ASSIGNMENT / "01.ipynb").write_text("solutions")
    (root / "gradebook.db").write_text("grades")
    (root / "submitted" / "other-student" / ASSIGNMENT).mkdir(parents=True)
    (root / "submitted" / "other-student" / ASSIGNMENT / "01.ipynb").write_text("someone else's work")
    workdir = root / "autograded" / "this-student" / ASSIGNMENT
    workdir.mkdir(parents=True)
    (workdir / "given.txt").write_text("the student's own file")
    return workdir


def _a_file_in_home():
    home = Path.home()
    with contextlib.suppress(OSError):
        for path in sorted(home.iterdir()):
            if path.is_file() and not path.is_symlink():
                return path
    return None


READ = ("def read(path):\n    try:\n        return open(path).read()[:20]\n    except OSError as e:\n"
        "        return type(e).__name__\n")


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    """Run the probe notebook once in a sandboxed kernel; {probe: result}."""
    root = tmp_path_factory.mktemp("grading-machine")
    workdir = _course_like(root)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    secrets = {
        "gradebook": str(root / "gradebook.db"),
        "source": str(root / "source" / ASSIGNMENT / "01.ipynb"),
        "other_student": str(root / "submitted" / "other-student" / ASSIGNMENT / "01.ipynb"),
        "repo_source": str(next(paths.SOURCE.glob("*.ipynb"))),
    }
    home_file = _a_file_in_home()
    if home_file:
        secrets["home"] = str(home_file)
    limits = SandboxLimits()
    cells = {
        "tcp": f"import socket\ns = socket.socket(); s.settimeout(5)\ntry:\n    s.connect(('127.0.0.1', {port}))\n"
        "    print('connected')\nexcept OSError as e:\n    print(type(e).__name__)",
        "secrets": READ + f"import json\nprint(json.dumps({{k: read(p) for k, p in {secrets!r}.items()}}))",
        "environment": "import os\nprint(os.environ.get('NBGRADER_EXECUTION', 'absent'))",
        "big_file": f"try:\n    with open('big.bin', 'wb') as f:\n        f.seek({limits.file_mb} * 2**20)\n"
        "        f.write(b'x')\n    print('written')\nexcept OSError as e:\n    print(type(e).__name__)\n"
        "import os\nos.remove('big.bin')",
        "processes": "import os, time\nchildren = []\ntry:\n"
        f"    for _ in range({limits.processes} + 1):\n        pid = os.fork()\n        if pid == 0:\n"
        "            time.sleep(30)\n            os._exit(0)\n        children.append(pid)\n    print('all forked')\n"
        "except OSError as e:\n    print(type(e).__name__, len(children))\nfinally:\n"
        "    for pid in children:\n        os.kill(pid, 9)\n        os.waitpid(pid, 0)",
        "open_files": "import os\nheld = []\ntry:\n    while True:\n"
        "        held.append(os.open('/dev/null', os.O_RDONLY))\n"
        "except OSError as e:\n    print(type(e).__name__, len(held))\nfor fd in held:\n    os.close(fd)",
        "own_folder": "open('written.txt', 'w').write('mine')\nprint(open('given.txt').read())",
        "uid": "import os\nprint(os.getuid())",
        "kernel_folder": "import json\nfound = {}\nfor what, path, mode in (('append', "
        f"'{sandbox.CONNECTION_FILE}', 'a'), ('create', '{sandbox.KERNEL_DIR}/new.bin', 'w')):\n"
        "    try:\n        open(path, mode).write('x' * 2**20)\n        found[what] = 'written'\n"
        "    except OSError as e:\n        found[what] = type(e).__name__\nprint(json.dumps(found))",
        "answers": f"import os\nprint(os.listdir({str(paths.ROOT / 'perfaudit' / 'answer_key')!r}))",
        "fixtures": f"import os\nprint(os.listdir({str(paths.ROOT / 'perfaudit' / 'fixtures')!r}))",
        "instructor": f"import os\nprint(os.listdir({str(paths.ROOT / 'perfaudit' / 'instructor')!r}))",
    }
    try:
        with environment(NBGRADER_EXECUTION="autograde"):  # as nbgrader sets it in its own process
            results = dict(zip(cells, _run_cells(list(cells.values()), workdir)))
    finally:
        listener.close()
    return results, workdir, limits


@needs_bubblewrap
def test_no_network_not_even_loopback(probes):
    results, _, _ = probes
    assert results["tcp"].strip() == "ConnectionRefusedError"  # the grader's listener is in another namespace


@needs_bubblewrap
def test_gradebook_source_other_students_and_home_are_unreadable(probes):
    results, _, _ = probes
    read = json.loads(results["secrets"])
    assert read and all(result in ("FileNotFoundError", "PermissionError") for result in read.values()), read


@needs_bubblewrap
def test_the_answer_key_s_folder_is_an_empty_folder(probes):
    """perfaudit/answer_key/ is in the package folder the kernel imports from, but hidden
    tests use it in the grader only: inside the sandbox it is an empty folder (printed in a cell, the key would reach
    the student's feedback)."""
    assert (paths.ROOT / "perfaudit" / "answer_key" / "answers.py").is_file()
    results, _, _ = probes
    assert results["answers"].strip() == "[]"


@needs_bubblewrap
def test_the_answer_key_s_old_folder_is_an_empty_folder(probes):
    """perfaudit/instructor/ held the answer key until it had a folder of its own: a checkout upgraded in place keeps
    its compiled bytecode there (__pycache__/answers.*.pyc), which a cell could read as data. Inside the sandbox the
    folder is empty, whatever it holds."""
    assert (paths.ROOT / "perfaudit" / "instructor" / "demo.py").is_file()
    results, _, _ = probes
    assert results["instructor"].strip() == "[]"


@needs_bubblewrap
def test_the_fixtures_with_their_solutions_are_an_empty_folder(probes):
    """perfaudit/fixtures/ holds the samples and the catalog, solutions among them as text: inside the sandbox it
    is an empty folder (cheat-stages-copied-from-the-grader-s-fixtures read a whole time_stages out of it)."""
    assert (paths.ROOT / "perfaudit" / "fixtures" / "catalog" / "variants.py").is_file()
    results, _, _ = probes
    assert results["fixtures"].strip() == "[]"


@needs_bubblewrap
def test_student_code_does_not_see_that_it_is_autograded(probes):
    results, _, _ = probes
    assert results["environment"].strip() == "absent"


@needs_bubblewrap
def test_a_file_bigger_than_the_limit_cannot_be_written(probes):
    results, _, _ = probes
    assert results["big_file"].strip() == "OSError"  # EFBIG


@needs_bubblewrap
def test_opening_past_the_open_files_limit_fails(probes):
    """processes x open files stays a small part of the machine's file table, which every process shares."""
    results, _, limits = probes
    name, opened = results["open_files"].split()
    assert name == "OSError" and limits.open_files - 100 < int(opened) < limits.open_files  # EMFILE


@needs_bubblewrap
def test_forking_past_the_process_limit_fails(probes):
    results, _, limits = probes
    name, forked = results["processes"].split()
    assert name == "BlockingIOError" and int(forked) < limits.processes


@needs_bubblewrap
def test_the_kernel_works_in_a_scratch_copy_that_the_grader_never_opens(probes):
    results, workdir, _ = probes
    assert results["own_folder"].strip() == "the student's own file"  # the submission's files are there
    assert not (workdir / "written.txt").exists()  # what it wrote vanished with the sandbox
    assert sorted(p.name for p in workdir.iterdir()) == ["given.txt"]
    assert int(results["uid"]) != os.geteuid()  # never the grader's account: a uid of its own, one per kernel
    assert sandbox.sandbox_uid(0) <= int(results["uid"]) < sandbox.sandbox_uid(0) + 256


@needs_bubblewrap
def test_the_kernels_connection_file_and_socket_folder_take_no_writes_once_it_answered(probes):
    """The connection file is a read-only copy of the grader's; the socket folder, sealed before any client
    connected, takes no new entry (boundary.py)."""
    results, _, _ = probes
    found = json.loads(results["kernel_folder"])
    assert found == {"append": "PermissionError", "create": "PermissionError"}, found


def test_each_kernel_of_a_grading_process_gets_a_uid_of_its_own():
    """Processes a submission leaves behind never count against the next kernel's process limit."""
    uids = {sandbox.sandbox_uid(kernel) for kernel in range(1, 256)}
    assert len(uids) == 255 and all(uid > sandbox.SANDBOX_UID_BASE for uid in uids)
    assert max(uids) < 2**32 - 1


@needs_bubblewrap
def test_the_kernel_imports_the_grader_s_perfaudit_where_pythonpath_chose_it(tmp_path, monkeypatch):
    """A second checkout (a git worktree) graded with PYTHONPATH: the kernel sees that checkout's perfaudit where the
    installed distribution points, so it imports the grader's code, in the same order as an installed one (after
    the working folder); the answers read as empty there too. Installed as usual: nothing more is bound."""
    checkout = tmp_path / "checkout"
    shutil.copytree(paths.ROOT / "perfaudit", checkout / "perfaudit", ignore=shutil.ignore_patterns("fixtures"))
    (checkout / "perfaudit" / "__init__.py").write_text("CHECKOUT = 'the grader'\n")
    finder = types.ModuleType("__editable___perfaudit_0_0_finder")
    finder.MAPPING = {"perfaudit": str(checkout / "perfaudit")}  # type: ignore[attr-defined]
    for name in [name for name in sys.modules if name.startswith("__editable___perfaudit_")]:
        monkeypatch.delitem(sys.modules, name)  # this machine's own install: the test's stands in for it
    monkeypatch.setitem(sys.modules, finder.__name__, finder)
    monkeypatch.setenv("PYTHONPATH", str(paths.ROOT))
    assert sandbox.package_seen_installed() == str(checkout / "perfaudit")
    folder = tmp_path / "submission"
    folder.mkdir()
    command = sandbox.command([sys.executable, "-c", f"import os; print(sorted(os.listdir({str(checkout)!r} + "
                                                     "'/perfaudit/answer_key')), open("
                                                     f"{str(checkout)!r} + '/perfaudit/__init__.py').read())"],
                              submission=folder, host=HostFolder(), limits=SandboxLimits())
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.stdout == f"[] {(paths.ROOT / 'perfaudit' / '__init__.py').read_text()}\n", done.stderr
    monkeypatch.delenv("PYTHONPATH")
    assert sandbox.package_seen_installed() is None


@needs_bubblewrap
def test_links_and_fifos_left_by_the_kernel_stay_in_the_scratch(tmp_path):
    (tmp_path / "given.txt").write_text("x")
    results = _run_cells(["import os\nos.symlink('/etc/passwd', 'link')\nos.mkfifo('pipe')\n"
                          "print(sorted(os.listdir()))",
                          "import os\nprint(os.getcwd())"], tmp_path)
    assert results[0] == "['given.txt', 'link', 'pipe']\n"
    assert results[1] == f"{sandbox.SCRATCH}\n"  # no path of the grader's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["given.txt"]


@needs_bubblewrap
def test_raw_writes_to_stdout_and_stderr_never_reach_the_graders_terminal(tmp_path, capfd):
    execute = TrustedExecute(timeout=60)
    nb = new_notebook(cells=[new_code_cell("import os\nos.write(1, b'RAW-OUT \\x1b]0;title\\x07')\n"
                                           "os.write(2, b'RAW-ERR' * 100000)")])
    execute.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    captured = capfd.readouterr()
    assert "RAW-" not in captured.out + captured.err
    raw = execute.run.km.raw_output
    assert len(raw.stdout.kept) + len(raw.stderr.kept) <= SandboxLimits().raw_output_bytes
    assert raw.stderr.dropped > 0 and raw.stdout.dropped == 0  # the flood on 2 hides nothing written to 1
    assert "RAW-OUT \\x1b]0;title\\x07" in raw.text()  # escaped: no terminal control reaches a person


@needs_bubblewrap
def test_nothing_of_the_course_is_bound_but_the_perfaudit_package(tmp_path):
    host = HostFolder()
    connection = host.write("connection.json", "{}")
    argv = sandbox.command(["true"], submission=tmp_path, host=host, connection=connection, limits=SandboxLimits())
    mounts = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind")}
    assert str(paths.ROOT) not in mounts and str(paths.ROOT / "perfaudit") in mounts
    assert mounts[str(tmp_path)] == sandbox.SUBMISSION  # seen under the sandbox's names only
    assert mounts[str(connection)] == sandbox.CONNECTION_FILE
    assert "--bind" not in argv  # nothing of the grader's is writable there
    host.remove()


@needs_bubblewrap
def test_output_beyond_the_limit_is_dropped_but_errors_are_kept(tmp_path):
    flood = "for _ in range(3000):\n    print('x' * 1000)"
    results = _run_cells([flood, "print('more')", "assert False, 'a failing test'"], tmp_path, max_output_bytes=2**20)
    assert len(results[0]) < 1.1 * 2**20 and results[0].endswith(OUTPUT_DROPPED)
    assert results[1] == OUTPUT_DROPPED
    assert results[2] == "AssertionError: a failing test"


def _course_with_a_submission(tmp_path):
    """A course whose one submission starts no kernel (malformed JSON): quick to grade."""
    from courses import make_course

    root = make_course(tmp_path / "course")
    folder = root / "submitted" / "someone" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / "03-evidence.ipynb").write_text('{"cells": [')
    return root


def test_without_a_sandbox_grading_refuses_before_grading_anyone(tmp_path):
    root = _course_with_a_submission(tmp_path)
    env = {**os.environ, sandbox.BWRAP: MISSING_BWRAP, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop(sandbox.UNSANDBOXED, None)
    batch = subprocess.run(
        [sys.executable, "-m", "perfaudit.grade", "--no-progress"], cwd=root, env=env, capture_output=True, text=True
    )
    assert batch.returncode == 2
    assert "refuses to run student code without a sandbox" in batch.stderr
    assert "apt-get install bubblewrap" in batch.stderr and "PERFAUDIT_UNSANDBOXED=1" in batch.stderr
    assert not (root / "autograded" / "someone").exists() and not (root / "grades.csv").exists()
    # Plain nbgrader fails the notebook with the same words, instead of running it unsandboxed.
    shutil.copy(root / "submitted" / "someone" / ASSIGNMENT / "03-evidence.ipynb", tmp_path)
    folder = root / "submitted" / "someone" / ASSIGNMENT
    (folder / "03-evidence.ipynb").write_text((paths.RELEASE / "03-evidence.ipynb").read_text())
    plain = subprocess.run(
        [sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT], cwd=root, env=env, capture_output=True, text=True
    )
    assert plain.returncode != 0 and "refuses to run student code without a sandbox" in plain.stdout + plain.stderr


def test_unsandboxed_when_asked_grades_and_says_so(tmp_path):
    root = _course_with_a_submission(tmp_path)
    with environment(**{sandbox.BWRAP: MISSING_BWRAP, sandbox.UNSANDBOXED: "1", "NBGRADER_EXECUTION": "autograde"}):
        workdir = tmp_path / "work"
        workdir.mkdir()
        assert _run_cells(["import os\nprint(os.environ.get('NBGRADER_EXECUTION', 'absent'))"], workdir) == [
            "absent\n"
        ]
        out = io.StringIO()
        run(Options(course_dir=root, progress=False, feedback=False), out=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Student code: UNSANDBOXED: PERFAUDIT_UNSANDBOXED=1")
    assert sum(line.startswith("Student code: UNSANDBOXED") for line in lines) == 2, out.getvalue()  # and summary
