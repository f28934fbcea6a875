"""TrustedExecute on small notebooks in a real kernel: the time limit, a dead kernel, tests decided in the grader."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from courses import NB1, NB2, NB3, NB4, NB5, make_course
from nbformat.v4 import new_code_cell, new_notebook

from perfaudit import ASSIGNMENT, paths
from perfaudit.autograde.isolation import memory
from perfaudit.autograde.plugins.execute import (LONG_RUNNING, NOT_RUN, OUTPUT_DROPPED, Notebook, Run,
                                                 TrustedExecute)
from perfaudit.fixtures import samples
from perfaudit.instructor import course


def _run(cells, workdir, **settings):
    """Run with workdir as the submission's folder, as autograde runs a student's notebook."""
    nb = new_notebook(cells=[new_code_cell(source) for source in cells])
    nb, _ = TrustedExecute(**settings).preprocess(nb, {"metadata": {"path": str(workdir)}})
    return nb


def _errors(cell):
    return [(o.ename, o.evalue) for o in cell.outputs if o.output_type == "error"]


def test_notebook_time_limit_interrupts_the_running_cell_and_skips_the_rest(tmp_path):
    nb = _run(["x = 1", "import time\ntime.sleep(60)", "x += 1", "print(x)"], tmp_path, timeout=30, notebook_timeout=3)
    assert _errors(nb.cells[0]) == []
    assert _errors(nb.cells[1])[0][0] == "KeyboardInterrupt"  # interrupted at the notebook's limit, not at 30 s
    for cell in nb.cells[2:]:
        assert _errors(cell) == [(NOT_RUN, "not run: the notebook's time limit (3 s) ran out before this cell")]


def test_a_submission_s_time_limit_holds_for_its_notebooks_together(tmp_path):
    """A notebook graded after its submission's earlier ones used most of submission_timeout gets what is left:
    its sleeping cell interrupted there, not at its own limit, and the rest not run, saying which limit it was."""
    nb = _run(["x = 1", "import time\ntime.sleep(60)", "print(x)"], tmp_path, timeout=30, notebook_timeout=30,
              submission_timeout=10, submission_started=time.monotonic() - 7)
    assert _errors(nb.cells[0]) == []
    assert _errors(nb.cells[1])[0][0] == "KeyboardInterrupt"
    assert _errors(nb.cells[2]) == [(NOT_RUN, "not run: the submission's time limit (10 s for all its notebooks "
                                              "together) ran out before this cell")]


def test_a_submission_s_clock_is_its_student_s_in_one_conversion():
    """Under plain nbgrader autograde one conversion grades the class, each student's notebooks in turn: a student's
    later notebook keeps the start of their first, a classmate's starts their own, and a new conversion (Formgrader
    grading her again) starts again; the instructor's check of a later notebook, run in her conversion, is not her
    time. The batch gives the start (submission_started), as each of its notebooks is a conversion of its own."""
    from traitlets.config import Configurable

    exporter = Configurable(parent=Configurable())  # nbgrader's exporter, whose parent is the converter

    def start(student, now, parent=exporter, **settings):
        return TrustedExecute(parent=parent, **settings)._submission_start(
            {"nbgrader": {"assignment": "a", "student": student}}, now)

    assert start("ann", 100.0) == 100.0
    assert start("ann", 500.0) == 100.0
    assert start("bob", 500.0) == 500.0
    TrustedExecute(parent=exporter)._submission_starts({"nbgrader": {"assignment": "a", "student": "ann"}}, 600.0, 40)
    assert start("ann", 700.0) == 140.0
    assert start("ann", 900.0, parent=Configurable(parent=Configurable())) == 900.0
    assert start("ann", 900.0, parent=None) == 900.0
    assert start("ann", 900.0, submission_started=42.0) == 42.0


def test_a_cell_s_time_is_its_own_limit_cut_to_what_the_notebook_has_left():
    """Through nbclient's own hook (timeout_func): Execute.timeout, or a timeout_func configured, then the deadline."""
    cell = new_code_cell("pass")

    def timeout_in(execute, left_s):
        execute._run = Run(deadline=time.monotonic() + left_s, submission=None, scratch="")
        return execute._cell_timeout(cell)

    assert timeout_in(TrustedExecute(timeout=30), 100) == 30
    assert timeout_in(TrustedExecute(timeout=30), 3) == 3
    assert timeout_in(TrustedExecute(timeout=None), 100) == 100  # no per-cell limit: the notebook's
    assert timeout_in(TrustedExecute(timeout=30, timeout_func=lambda c: 7), 100) == 7
    assert timeout_in(TrustedExecute(timeout=30), -5) == 1  # at least a second: the cell is stopped, not skipped


def test_a_cell_the_instructor_tagged_long_running_gets_the_long_limit_and_a_student_s_tag_nothing():
    """The long limit goes by the instructor's cells (notebook 5's timings): a tagged cell of source/, unchanged, gets
    long_cell_timeout; the same grade id changed by the student, or a student's cell tagged so, gets Execute.timeout."""
    measuring = new_code_cell("measure()", metadata={"nbgrader": {"grade_id": "measure_speedup"}})
    execute = TrustedExecute(timeout=30, long_cell_timeout=120)
    execute._notebook = Notebook(name="05-audit", instructor={"measure_speedup": "measure()"},
                                 contract=None, demonstrations=set(), long_running={"measure_speedup"})
    execute._run = Run(deadline=time.monotonic() + 600, submission=None, scratch="")
    assert execute._cell_timeout(measuring) == 120
    assert execute._cell_timeout(new_code_cell("measure(); spin()", metadata=measuring.metadata)) == 30
    forged = new_code_cell("spin()", metadata={"nbgrader": {"grade_id": "mine"}, "tags": [LONG_RUNNING]})
    assert execute._cell_timeout(forged) == 30
    execute._run = Run(deadline=time.monotonic() + 50, submission=None, scratch="")
    assert execute._cell_timeout(measuring) == 50  # still cut to what the notebook has left


def test_errors_and_display_updates_count_toward_the_output_limit_each_copy_it_makes(tmp_path):
    """What a kernel can make the grader keep, whatever kind of output carries it: errors shown without raising, a
    display updated again and again, and one update written into every output that shares its display id (100
    outputs, one 512 KiB update: 50 MiB kept, before updates counted)."""
    limit = 2 * 2**20
    cells = [
        "import sys\nfor _ in range(12):\n    try:\n        raise ValueError('e' * 2**20)\n"
        "    except ValueError:\n        get_ipython().showtraceback()",
        "from IPython.display import display, update_display\nh = display({'text/plain': '-'}, raw=True, "
        "display_id='one')\nfor _ in range(12):\n    update_display({'text/plain': 'u' * 2**20}, raw=True, "
        "display_id='one')",
        "for _ in range(100):\n    display({'text/plain': '.'}, raw=True, display_id='shared')\n"
        "update_display({'text/plain': 's' * 2**19}, raw=True, display_id='shared')",
    ]
    for cell in cells:
        nb = _run([cell], tmp_path, timeout=60, max_output_bytes=limit)
        assert len(nbformat.writes(nb)) < 2 * limit, cell
    nb = _run(cells[:1], tmp_path, timeout=60, max_output_bytes=limit)
    assert "the grader dropped the rest of this output" in nbformat.writes(nb)


def test_a_cell_that_ignores_interrupts_stops_the_notebook_and_is_not_taken_for_lost_output(tmp_path):
    """nbclient stands in its own reply for a cell that timed out and then waits on the output channel: that wait
    timing out is the hang's, not a message dropped over the size limit (which the grader reconnects past)."""
    hang = "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass"
    nb = _run([hang, "print('after')"], tmp_path, timeout=3)
    assert _errors(nb.cells[0]) == [(NOT_RUN, "the kernel stopped responding to this cell and to interrupts")]
    assert _errors(nb.cells[1]) == [(NOT_RUN, "not run: the kernel stopped responding in an earlier cell")]


def test_a_dead_kernel_keeps_earlier_outputs_and_marks_every_later_cell(tmp_path):
    nb = _run(["print('before')", "import os\nos._exit(3)", "print('after')"], tmp_path, timeout=30)
    assert nb.cells[0].outputs[0].text == "before\n"
    assert _errors(nb.cells[1])[0][0] == NOT_RUN and "kernel died" in _errors(nb.cells[1])[0][1]
    assert _errors(nb.cells[2]) == [(NOT_RUN, "not run: the kernel died in an earlier cell")]
    assert nbformat.validate(nb) is None


def _test_cell(source, grade_id="a_test", points=1):
    cell = new_code_cell(source)
    cell.metadata.nbgrader = {"grade": True, "solution": False, "locked": True, "grade_id": grade_id,
                              "points": points, "schema_version": 3}
    return cell


def _grade(cell):
    from nbgrader.utils import determine_grade

    return determine_grade(cell)[0]


def test_test_cells_run_in_the_grader_and_never_reach_the_kernel(tmp_path):
    secret = "assert square(7) == 49  # the hidden line"
    nb = new_notebook(cells=[
        new_code_cell("def square(x):\n    return x * x"),
        _test_cell(f"### BEGIN HIDDEN TESTS\n{secret}\n### END HIDDEN TESTS"),
        new_code_cell("print(repr(In), repr(_ih), repr(globals()))"),
    ])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert _errors(nb.cells[1]) == [] and _grade(nb.cells[1]) == 1
    printed = nb.cells[2].outputs[0].text
    assert "the hidden line" not in printed and "BEGIN" not in printed and "def square" in printed


def test_what_the_kernel_prints_or_returns_cannot_change_a_tests_score(tmp_path):
    forged = ("def square(x):\n    return 0\n"
              "get_ipython().events.register('post_run_cell', lambda *a: print('1.0'))\n"
              "get_ipython().display_formatter.formatters['text/plain'].for_type(int, lambda *a: '1')")
    nb = new_notebook(cells=[new_code_cell(forged), _test_cell("assert square(3) == 9, 'square(3) should be 9'\n42")])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert _errors(nb.cells[1]) == [("AssertionError", "square(3) should be 9")]
    assert _grade(nb.cells[1]) == 0
    assert all(o.output_type in ("stream", "error") for o in nb.cells[1].outputs)  # never an execute_result


def test_a_test_reads_each_name_as_the_cell_that_binds_it_left_it(tmp_path):
    """A later cell that mutates a value, or rebinds a name in a way the notebook does not (a hook, an exec), never
    reaches a test: plain data as it was, a function as the one bound then; a folder is read when the test runs."""
    nb = new_notebook(cells=[
        new_code_cell("import pathlib\nguesses = {'a': 1}\ndef answer():\n    return 1\nfolder = pathlib.Path('out')"),
        new_code_cell("guesses.update({'a': 2})\nexec('def answer():\\n    return 2')\n"
                      "folder.mkdir()\n(folder / 'note.txt').write_text('written later')"),
        _test_cell("assert guesses == {'a': 1}, guesses\nassert answer() == 1\n"
                   "assert (folder / 'note.txt').read_text() == 'written later'", "reads"),
    ])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert _errors(nb.cells[2]) == [] and _grade(nb.cells[2]) == 1


def _locked_cell(source, grade_id):
    cell = new_code_cell(source)
    cell.metadata.nbgrader = {"grade": False, "solution": False, "locked": True, "grade_id": grade_id,
                              "schema_version": 3}
    return cell


def test_a_locked_cell_s_constants_are_the_grader_s_own_whatever_the_kernel_holds(tmp_path):
    """A locked cell's value made of the instructor's imports and constants alone is made by the grader's own run of
    the cell: a hook the student registered earlier, which rebinds it in the kernel as the cell ends, reaches no
    test. A value the cell makes by calling the student's code is still the kernel's."""
    nb = new_notebook(cells=[
        _locked_cell("import numpy as np", "setup"),
        new_code_cell("def forge(*args):\n    globals().update(n=99, x=np.zeros(2), y=np.zeros(2))\n"
                      "get_ipython().events.register('post_run_cell', forge)\n"
                      "def twice(v):\n    return 2 * v"),
        _locked_cell("n = 3\nx = np.arange(n) + 1.0\ny = twice(x)", "constants"),
        _test_cell("assert n == 3, n\nassert list(x) == [1.0, 2.0, 3.0], x\nassert list(y) == [0.0, 0.0], y",
                   "reads"),
    ])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert _errors(nb.cells[3]) == [] and _grade(nb.cells[3]) == 1


def test_a_students_function_is_called_with_the_graders_inputs_and_its_answer_checked_here(tmp_path):
    nb = new_notebook(cells=[
        new_code_cell("import numpy as np\ndef double(a):\n    return np.asarray(a) * 2"),
        _test_cell("import numpy as np\nrng = np.random.default_rng()\na = rng.standard_normal((7, 3))\n"
                   "assert np.allclose(double(a), 2 * a)\nassert double(a).dtype == np.float64", "doubles"),
        new_code_cell("def double(a):\n    return float('nan')"),
        _test_cell("import numpy as np\nassert np.allclose(double(np.ones(2)), 2), 'double should double'", "later"),
    ])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert _grade(nb.cells[1]) == 1
    assert _errors(nb.cells[3]) == [("AssertionError", "double should double")]  # the kernel's state at that point


def test_a_test_that_hangs_in_student_code_is_interrupted_and_fails_alone(tmp_path):
    nb = new_notebook(cells=[
        new_code_cell("import time\ndef slow():\n    time.sleep(60)\ndef fast():\n    return 1"),
        _test_cell("slow()", "hangs"),
        _test_cell("assert fast() == 1", "after"),
    ])
    nb, _ = TrustedExecute(timeout=3).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert _errors(nb.cells[1])[0][0] == "Timeout" and "interrupted" in _errors(nb.cells[1])[0][1]
    assert _errors(nb.cells[2]) == []


def test_only_folders_made_for_tests_are_handed_to_the_students_code(tmp_path):
    """A folder argument is mirrored: the kernel's answer replaces its contents. So only the grader's own count."""
    nb = new_notebook(cells=[
        new_code_cell("from pathlib import Path\ndef write(folder):\n    (Path(folder) / 'x.txt').write_text('hi')"),
        _test_cell("from pathlib import Path\nwrite(Path('/tmp'))", "outside"),
        _test_cell("from perfaudit.autograde import hidden\nfolder = hidden.new_folder()\nwrite(folder)\n"
                   "assert (folder / 'x.txt').read_text() == 'hi'", "made_for_the_test"),
    ])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert _errors(nb.cells[1])[0][0] == "ValueError" and "hidden.new_folder()" in _errors(nb.cells[1])[0][1]
    assert _errors(nb.cells[2]) == []


def test_a_path_from_the_students_process_cannot_make_a_test_open_the_graders_files(tmp_path, monkeypatch):
    """The grader works in the course directory: a student's string path must not lead a check there."""
    course_file = tmp_path / "course" / "submitted" / "classmate" / "report.json"
    course_file.parent.mkdir(parents=True)
    course_file.write_text("{}")
    monkeypatch.chdir(tmp_path / "course")
    nb = new_notebook(cells=[
        new_code_cell(f"EVIDENCE_DIR = 'submitted/classmate'\nABSOLUTE = {str(course_file.parent)!r}"),
        _test_cell("from perfaudit import checks\nchecks.read_report(EVIDENCE_DIR)", "relative"),
        _test_cell("from perfaudit import checks\nchecks.read_report(ABSOLUTE)", "absolute"),
    ])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path / "course")}})
    for cell in nb.cells[1:]:
        assert _errors(cell)[0][0] in ("PermissionError", "AssertionError"), _errors(cell)
        assert _grade(cell) == 0


def _group_of(pid):
    """The folder of the memory cgroup process pid is in (as memory.py made it for the kernel)."""
    hierarchy = memory._hierarchy()
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        memory_line = "memory" in controllers.split(",") if hierarchy.version == 1 else number == "0"
        if memory_line:
            return Path(hierarchy.mount + path)
    raise AssertionError(f"process {pid} is in no memory cgroup")


def _alive(process):
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _oom_kill_the_first_kernel_from_outside(killed):
    """Another group's memory on the grading machine: the first kernel's parent group is limited to what it holds
    now plus 64 MB, a process in a group beside the kernel's fills it, and the OOM killer of the parent group picks
    the kernel (oom_score_adj 1000: the most expendable). The limit is lifted as soon as the kernel is gone."""
    deadline = time.monotonic() + 120
    kernel = None
    while kernel is None and time.monotonic() < deadline:
        kernel = next((c for c in psutil.Process().children(recursive=True)  # the kernel, not bwrap around it
                       if "ipykernel" in " ".join(c.cmdline()) and c.name() != "bwrap"), None)
        time.sleep(0.05)
    time.sleep(4.0)  # the kernel has started and is running the cell that sleeps
    group = _group_of(kernel.pid)
    parent, version = group.parent, memory._hierarchy().version
    for pid in (group / "cgroup.procs").read_text().split():
        Path(f"/proc/{pid}/oom_score_adj").write_text("1000")
    limit = parent / ("memory.max" if version == 2 else "memory.limit_in_bytes")
    usage = int((parent / ("memory.current" if version == 2 else "memory.usage_in_bytes")).read_text())
    beside = parent / f"outside-{os.getpid()}"
    beside.mkdir()
    hog = subprocess.Popen([sys.executable, "-c", (
        "import os, psutil, time\n"
        f"open({str(beside / 'cgroup.procs')!r}, 'w').write(str(os.getpid()))\n"
        f"kernel, held = psutil.Process({kernel.pid}), []\n"
        "while len(held) < 256:\n"
        "    try:\n        if kernel.status() == psutil.STATUS_ZOMBIE:\n            break\n"
        "    except psutil.NoSuchProcess:\n        break\n"
        "    held.append(b'x' * 2**22)\n    time.sleep(0.01)\n")])
    try:
        limit.write_text(str(usage + 64 * 2**20))
        while time.monotonic() < deadline and _alive(kernel):
            time.sleep(0.02)
        killed.append(kernel.pid)
    finally:
        limit.write_text("max" if version == 2 else "-1")
        hog.wait(timeout=60)
        beside.rmdir()


@pytest.mark.skipif(os.geteuid() != 0 or memory.mechanism() == memory.WATCHDOG,
                    reason="an OOM kill from outside the kernel's group needs a memory cgroup this process may limit")
def test_a_kernel_the_oom_killer_chose_for_another_group_is_graded_once_more(tmp_path, monkeypatch):
    """A cause outside the notebook the machine recorded (the OOM killer chose the kernel for memory another group
    used): the notebook runs once more, in a new kernel, and keeps everything it would have had."""
    # A parent group of this test's own: the limit it sets on the parent would OOM-kill the kernels other test
    # processes run under the shared one (seen: an honest sample's kernel killed beside this test's).
    monkeypatch.setattr(memory, "PARENT", f"{memory.PARENT}-oom-test-{os.getpid()}")
    killed = []
    killer = threading.Thread(target=_oom_kill_the_first_kernel_from_outside, args=(killed,), daemon=True)
    killer.start()
    nb = _run(["import time\ntime.sleep(12)", "print('done')"], tmp_path, timeout=30)
    killer.join(timeout=60)
    assert len(killed) == 1
    assert [_errors(cell) for cell in nb.cells] == [[], []]
    assert nb.cells[1].outputs[0].text == "done\n"


@pytest.mark.slow
def test_a_kernel_that_kills_itself_is_graded_once_and_keeps_the_points_before(tmp_path):
    """No record of a cause outside the notebook (the kernel sent itself SIGKILL): graded once, as it is, with
    the points of the tests that passed before it died."""
    root = make_course(tmp_path / "course")
    student = "kills-itself-in-02-after-3-points"
    folder = root / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    kills_itself = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)  # the kernel kills itself"
    sample = samples.Sample(replaced={(2, "jaxpr_text"): lambda solution: f"{kills_itself}\n\n{solution}"})
    nbformat.write(samples.submission(sample, 2), folder / paths.STAGES[2])
    said = course.nbgrader("autograde", ASSIGNMENT, f"--student={student}", course_dir=root)
    assert course.scores(root) == {student: {NB1: (0, 5), NB2: (3, 6), NB3: (0, 4), NB4: (0, 5), NB5: (0, 6)}}
    assert "grading the notebook once more" not in said
    assert said.count("stopped the notebook: the kernel died while running this cell") == 1, said


@pytest.mark.slow
@pytest.mark.parametrize("grader", ["nbgrader autograde", "python -m perfaudit.grade"])
def test_a_submission_that_sleeps_holds_its_grader_its_time_limit_in_all(tmp_path, grader, monkeypatch):
    """A submission that sleeps in notebook 1 holds either grader for its submission's time limit in all, not for
    notebook_timeout in each notebook: the sleep is interrupted where that limit ends, and no cell after it runs, in
    that notebook or the four after it, each saying which limit ran out. (The course's limits are cut so the test is
    short, the cell's own limit above the submission's; without the submission's, notebooks 2 to 5 would be graded.)"""
    root = make_course(tmp_path / "course")
    with open(root / "nbgrader_config.py", "a") as config:
        config.write("\nc.TrustedExecute.submission_timeout = 30\nc.Execute.timeout = 300\n")
    student = "sleeps-in-01"
    folder = root / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    sleeps = "import time\ntime.sleep(3600)  # longer than any limit"
    sample = samples.Sample(replaced={(1, "workload"): lambda solution: f"{sleeps}\n\n{solution}"})
    for stage in (1, 2, 3, 4, 5):
        nbformat.write(samples.submission(sample, stage), folder / paths.STAGES[stage])
    monkeypatch.setenv("PERFAUDIT_SKIP_CANARY", "1")  # the course's check is not what this test is about
    if grader == "nbgrader autograde":
        course.nbgrader("autograde", ASSIGNMENT, f"--student={student}", course_dir=root)
    else:
        done = subprocess.run([sys.executable, "-m", "perfaudit.grade", "--skip-canary", "--no-progress",
                               "--no-feedback"], cwd=root, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
    assert course.scores(root) == {student: {NB1: (0, 5), NB2: (0, 6), NB3: (0, 4), NB4: (0, 5), NB5: (0, 6)}}
    said = "not run: the submission's time limit (30 s for all its notebooks together) ran out before this cell"
    graded = root / "autograded" / student / ASSIGNMENT
    one = nbformat.read(graded / paths.STAGES[1], as_version=4)
    errors = [error for cell in one.cells if cell.cell_type == "code" for error in _errors(cell)]
    assert ("KeyboardInterrupt", "") in errors and (NOT_RUN, said) in errors, errors
    for stage in (2, 3, 4, 5):
        later = nbformat.read(graded / paths.STAGES[stage], as_version=4)
        assert {error for cell in later.cells if cell.cell_type == "code" for error in _errors(cell)} == {
            (NOT_RUN, said)}, stage


def test_a_demonstration_the_instructor_tagged_is_not_run_while_grading(tmp_path):
    """A read-and-run cell tagged `demonstration` in the instructor's notebook (no points, nothing graded depends on
    it) is skipped, with a note; the cells after it run."""
    from perfaudit.autograde.plugins.execute import DEMONSTRATION_SKIPPED

    demo = new_code_cell("raise RuntimeError('a long demonstration')")
    demo.metadata.nbgrader = {"grade": False, "solution": False, "locked": True, "grade_id": "sweep",
                              "schema_version": 3}
    demo.metadata.tags = ["demonstration"]
    nb = new_notebook(cells=[new_code_cell("x = 1"), demo, new_code_cell("print(x + 1)")])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert nb.cells[1].outputs[0].text == DEMONSTRATION_SKIPPED
    assert nb.cells[2].outputs[0].text == "2\n"


def test_the_kernel_is_killed_after_the_last_cell_so_nothing_of_the_student_s_runs_after_it(tmp_path):
    """A student's exit hook never runs: the grader kills the kernel once the last cell is done instead of waiting
    for it to exit (a hook that sleeps would otherwise hold every notebook up to the shutdown wait)."""
    nb = new_notebook(cells=[new_code_cell("import atexit, os\natexit.register(os.write, 1, b'exit hook ran\\n')"),
                             new_code_cell("print('last cell')")])
    execute = TrustedExecute(timeout=30)
    nb, _ = execute.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert nb.cells[1].outputs[0].text == "last cell\n"
    raw = execute.run.km.raw_output
    for stream in (raw.stdout, raw.stderr):
        stream._thread.join(timeout=30)  # the pipe ends when the last process holding it is gone
        assert not stream._thread.is_alive()
    assert "exit hook ran" not in raw.text(), raw.text()


COMM_FLOOD = '''
import uuid
kernel = get_ipython().kernel
blob = "A" * 2**20
for _ in range(20):  # 20 MiB of widget state, in messages no frontend asked for
    kernel.session.send(kernel.iopub_socket, "comm_open",
                        {"comm_id": uuid.uuid4().hex, "target_name": "x", "data": {"state": {"s": blob}}},
                        parent=kernel.get_parent("shell"))
print("sent")
'''


def test_widget_state_the_kernel_sends_counts_against_the_output_limit(tmp_path):
    """nbclient keeps each comm message's state in the grader; past the notebook's output limit it keeps none."""
    execute = TrustedExecute(timeout=60, max_output_bytes=4 * 2**20)
    nb = new_notebook(cells=[new_code_cell(COMM_FLOOD), new_code_cell("print('after')")])
    nb, _ = execute.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    kept = sum(len(str(state)) for state in execute.widget_state.values())
    assert 2**20 < kept <= 4 * 2**20  # some kept, within the limit
    assert [o.get("text") for o in nb.cells[1].outputs] == [OUTPUT_DROPPED]  # the limit is the notebook's, shared


def test_the_kernel_s_language_info_is_kept_short_in_the_graded_notebook(tmp_path):
    """nbclient copies it from the kernel's kernel_info reply: a submitted ipykernel_launcher.py that pads it gets
    the known keys kept, short, and nothing else."""
    (tmp_path / "ipykernel_launcher.py").write_text('''
import os, runpy, sys
from ipykernel.ipkernel import IPythonKernel
info = dict(IPythonKernel.language_info)
info["padding"] = "B" * (8 * 2**20)
info["version"] = "3" * 1000
IPythonKernel.language_info = info
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
sys.modules.pop("ipykernel_launcher", None)
runpy.run_module("ipykernel_launcher", run_name="__main__")
''')
    nb = _run(["print('ran')"], tmp_path, timeout=60)
    assert [o.get("text") for o in nb.cells[0].outputs] == ["ran\n"]
    assert dict(nb.metadata.language_info) == {"name": "python", "mimetype": "text/x-python",
                                               "file_extension": ".py", "pygments_lexer": "ipython3",
                                               "nbconvert_exporter": "python"}
