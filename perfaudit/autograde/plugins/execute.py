"""nbgrader's Execute preprocessor, changed so the grader alone decides, in one run of the student's code.

- Student and instructor cells run in the student's sandboxed kernel (perfaudit/autograde/isolation/kernel.py), once.
- Test cells never reach that kernel: each runs here, in the grader, against the kernel's objects through the
  channel (perfaudit/autograde/plugins/verdicts.py, channel.py), at the point in the notebook where nbgrader would have
  run it. Its outputs are the grader's own, so nbgrader's determine_grade reads the grader's verdict only.
- A kernel that dies or hangs costs only the cells it had not finished: the cell where it happened and every later
  one get a NotRun error saying why, and the tests that passed before keep their points. Whether the notebook is
  run once more (a kernel killed from outside, or one that never started) is kernel_fate.py's rule. A
  whole-notebook time limit cuts each cell's timeout to the time left, and so does a whole-submission one: a
  submission whose every notebook sleeps holds its grader submission_timeout at most, not notebook_timeout per
  notebook (on the hub, classmates wait behind it). The output kept is capped.
- What one run knows (the deadline, the kernel, the channel, what stopped it) is a Run made for that run; what one
  notebook's runs share (its name, the instructor's cells, the tests' contract) a Notebook made for that notebook.

Configured in nbgrader_config.py, so plain `nbgrader autograde` and `python -m perfaudit.grade` both use it.
"""

import copy
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute
from traitlets import Bool, Enum, Float, Integer
from traitlets.config import Config
import zmq

from perfaudit.autograde import graded
from perfaudit.autograde.evidence import made_up
from perfaudit.autograde.isolation import kernel_fate, sandbox
from perfaudit.autograde.isolation.kernel import SandboxedKernelManager
from perfaudit.autograde.isolation.limits import SandboxLimits
from perfaudit.autograde.isolation import submission
from perfaudit.autograde.plugins import canary, verdicts
from perfaudit.autograde.wire import protocol
from perfaudit.autograde.wire.channel import KernelChannel, KernelGone
from perfaudit.longcells import LONG_CELL_TIMEOUT_S, LONG_RUNNING
from perfaudit.notebooks import nbgrader_meta

if TYPE_CHECKING:
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.manager import KernelManager

NOT_RUN = "NotRun"  # ename of the error put on cells the grader could not run
# {nbgrader's converter: {(assignment, student): when its first notebook's run began}}: one conversion's submissions
_SUBMISSION_STARTS: "weakref.WeakKeyDictionary[Any, dict[tuple[Any, Any], float]]" = weakref.WeakKeyDictionary()
DEMONSTRATION = "demonstration"  # the tag of a read-and-run cell in source/ that grading skips
DEMONSTRATION_SKIPPED = "[not run while grading: a read-and-run demonstration with no points]\n"
SNAPSHOT_TIMEOUT_S = 30  # to read what one cell bound (a few names, most of them references)
OUTPUT_DROPPED = "[the grader dropped the rest of this output: the notebook printed more than its output limit]\n"
# nbclient's words when a cell's reply came but its end on the output channel did not: ZeroMQ dropped a message of
# it over protocol.MAX_MESSAGE_BYTES (kernel.py), and the connection with it, which comes back at once.
IOPUB_TIMEOUT = "Timeout waiting for IOPub output"
RECONNECT_S = 10  # to connect to the kernel again (_reconnect_output)
OUTPUT_LOST = (f"[the grader did not receive all of this cell's output: a single message over "
               f"{protocol.MAX_MESSAGE_BYTES // 2**20} MiB is dropped unread]\n")


def instructor_cells(resources: dict[str, Any] | None, course_id: str) -> dict[str, str] | None:
    """{grade id: source} of the notebook's cells in the gradebook, or None when not autograding (no gradebook)."""
    info = (resources or {}).get("nbgrader", {})
    if not info.get("db_url") or not info.get("notebook") or not info.get("assignment"):
        return None
    with Gradebook(info["db_url"], course_id) as gradebook:
        notebook = gradebook.find_notebook(info["notebook"], info["assignment"])
        return {cell.name: cell.source for cell in notebook.source_cells}


def instructor_notebook(nb: NotebookNode, resources: dict[str, Any] | None, config: Config) -> NotebookNode:
    """The instructor's notebook from source/ when autograding (the contract of the tests comes from it, never from
    the submission); outside autograde (the canary, the checker) the notebook run is the instructor's own."""
    info = (resources or {}).get("nbgrader", {})
    if not info.get("db_url") or not info.get("notebook") or not info.get("assignment"):
        return nb
    coursedir = CourseDirectory(config=config)
    folder = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"]))
    path = folder / f"{info['notebook']}.ipynb"
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as error:
        raise canary.GradingEnvironmentError(
            f"not graded: environment: the instructor's notebook {path} cannot be read ({error}); the tests take "
            "their names from it. Put source/ back and grade again.") from error


# What the kernel says of its language, copied by nbclient into the graded notebook's metadata: only these keys, each
# short text (a submitted ipykernel_launcher.py padded it with 60 MiB, past the notebook's output limit).
LANGUAGE_INFO_KEYS = ("name", "version", "mimetype", "file_extension", "pygments_lexer", "nbconvert_exporter")
LANGUAGE_INFO_CHARS = 100


def _tagged(cells: list[NotebookNode], tag: str) -> set[str]:
    """The grade ids of the instructor's cells that carry `tag`."""
    found = {nbgrader_meta(cell).get("grade_id") for cell in cells if tag in cell.get("metadata", {}).get("tags", [])}
    return found - {None}


def kept_language_info(found: Any) -> NotebookNode:
    """The kernel's language_info as the graded notebook keeps it: the known keys with short text values only."""
    found = found if isinstance(found, dict) else {}
    return NotebookNode({key: found[key] for key in LANGUAGE_INFO_KEYS
                         if isinstance(found.get(key), str) and len(found[key]) <= LANGUAGE_INFO_CHARS})


def not_run_error(reason: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=NOT_RUN, evalue=reason, traceback=[f"{NOT_RUN}: {reason}"])


@dataclass
class Notebook:
    """What every run of one notebook shares: its name, the instructor's cells and the tests' contract."""

    name: str | None  # nbgrader's notebook id; None outside autograde (the canary itself, a tool)
    instructor: dict[str, str] | None  # {grade id: source} of the gradebook's cells; None outside autograde
    contract: verdicts.Contract
    demonstrations: set[str]  # grade ids of the read-and-run cells the instructor tagged: not run while grading
    long_running: set[str]  # grade ids of the cells the instructor tagged as measuring for long


@dataclass
class Run:
    """What one run of a notebook knows, in a new kernel: made for the run, gone with it."""

    deadline: float  # time.monotonic() when the notebook's time is up (its own limit, or its submission's)
    submission: str | Path | None  # the folder the kernel starts from
    scratch: str  # what tests read back from the kernel
    km: "SandboxedKernelManager | None" = None
    kernel_up: bool = False  # the kernel answered: a failure from now on is no failed start
    channel: KernelChannel | None = None  # to the kernel, made when a test or a snapshot first needs it
    namespace: verdicts.StudentNamespace | None = None  # what tests run against, with the channel
    stopped: str | None = None  # why the rest of the notebook is not run, once something stopped it
    limit: str = "the notebook's time limit"  # which time limit the deadline is, in the student's words
    output_bytes: int = 0
    student_code_ran: bool = False  # until then, an error is the environment's, unless the canary passes
    unfilled: list[str] = field(default_factory=list)  # grade ids of solution cells raising NotImplementedError
    suspect: str | None = None  # what failed before any student code ran, judged once the kernel is gone
    tested: bool = False  # whether a test ran yet
    latest: str | None = None  # the cell_key of the instructor's cell furthest on in the notebook that ran so far
    ending: kernel_fate.Ending | None = None  # how the kernel ended, when it ended before the notebook did


class TrustedExecute(Execute):
    notebook_timeout = Integer(
        600, help="Seconds a whole notebook may run; the cell running when it expires is interrupted."
    ).tag(config=True)

    submission_timeout = Integer(
        1200, help="Seconds all the notebooks of one submission may run together, each within notebook_timeout; "
        "the cell running when it expires is interrupted, and the notebooks after it are not run."
    ).tag(config=True)

    submission_started = Float(
        0.0, help="When (time.monotonic()) the grading of the submission began, where each notebook is a conversion "
        "of its own (perfaudit/grade/worker.py); 0: when its conversion first ran a notebook of that student's."
    ).tag(config=True)

    max_output_bytes = Integer(
        10 * 2**20,
        help="Bytes of text and display output a notebook may keep; later ones are dropped, with a note.",
    ).tag(config=True)

    # nbclient waits up to KernelManager.shutdown_wait_time (5 s) for a kernel to exit after its last cell, and a
    # kernel with JAX loaded takes about half a second; the grader needs nothing from a graceful exit (the outputs
    # are in, the scratch folder vanishes), and a student's atexit hook that sleeps could hold each notebook longer.
    shutdown_kernel = Enum(
        ["graceful", "immediate"], default_value="immediate",
        help="How the kernel is stopped after the notebook's last cell: killed at once, or asked to exit first.",
    ).tag(config=True)

    long_cell_timeout = Integer(
        LONG_CELL_TIMEOUT_S,
        help="Seconds for a cell the instructor tagged long-running in source/ (in place of Execute.timeout): "
        "notebook 5's timings of loops that retrace at every step take several times a plain cell's on a busy grader."
    ).tag(config=True)

    canary = Bool(
        True, help="Before the first student's copy of a notebook in this process, grade the instructor's solution "
        "and the release through this pipeline; a broken environment stops grading "
        "(perfaudit/autograde/plugins/canary.py)."
    ).tag(config=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # A keyword, not configuration: nbgrader's Execute.__init__ sets its own kernel_manager_class default.
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)
        self._notebook: Notebook | None = None
        self._run: Run | None = None
        # nbclient's own hook for a cell's timeout: the per-cell limit (timeout, or a timeout_func configured)
        # cut to what the notebook has left
        configured: Callable[[NotebookNode], int | None] | None = self.timeout_func  # type: ignore[has-type]
        self._per_cell_timeout = configured
        self.timeout_func = self._cell_timeout

    @property
    def run(self) -> Run:
        """This run's state; only asked for while a run is under way."""
        assert self._run is not None, "asked for a run's state outside a run"
        return self._run

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any] | None = None,
                   km: "KernelManager | None" = None) -> tuple[NotebookNode, dict[str, Any]]:
        name = (resources or {}).get("nbgrader", {}).get("notebook")
        instructors = instructor_notebook(nb, resources, self.config)
        # Read-and-run demonstrations the instructor tagged in source/: no points, nothing graded depends on them, so
        # grading skips them (the student ran them in JupyterLab). Only the instructor's own unchanged cell is skipped.
        self._notebook = Notebook(
            name=name, instructor=instructor_cells(resources, CourseDirectory(config=self.config).course_id),
            contract=verdicts.Contract(instructors.cells),
            demonstrations=_tagged(instructors.cells, DEMONSTRATION),
            long_running=_tagged(instructors.cells, LONG_RUNNING))
        if self.canary and name and os.environ.get(canary.SKIP) != "1":
            checked = time.monotonic()
            said = canary.check_once_per_process(name, self.config, TrustedExecute)
            if said:
                self.log.info(said)
            self._submission_starts(resources, checked, time.monotonic() - checked)  # the solution's time, not theirs
        submitted = copy.deepcopy(nb)
        runs = 1
        # The tests check notebook 5 against the variant of the student nbgrader grades, never the notebook's claim
        student = (resources or {}).get("nbgrader", {}).get("student")
        coursedir = CourseDirectory(config=self.config)
        submitted_dir = Path(coursedir.root) / coursedir.submitted_directory
        with graded.grading(graded.variant_id(student, submitted_dir) if student else None):
            nb, resources = self._run_once(nb, resources, km)
            while kernel_fate.run_once_more(self.run.ending, runs):
                ending = self.run.ending
                assert ending is not None  # run_once_more says so
                self.log.warning("%s: the kernel %s (%s); grading the notebook once more",
                                 (resources or {}).get("nbgrader", {}).get("student"), ending.fate.value, ending.why)
                runs += 1
                nb, resources = self._run_once(copy.deepcopy(submitted), resources, km)
        # Whether a failure before any student code is the environment's is judged after the last kernel is gone:
        # nothing the submission started can then weigh on the judgement.
        if self.run.suspect is not None:
            self._judge(self.run.suspect)
        return nb, resources

    def _submission_start(self, resources: dict[str, Any] | None, now: float) -> float:
        """When the grading of this notebook's submission began: submission_started where the grader gave it, else
        the first run of a notebook of this student's in this conversion (plain nbgrader autograde grades a class in
        one; each student's notebooks run one after the other)."""
        if self.submission_started:
            return self.submission_started
        return self._submission_starts(resources, now)

    def _submission_starts(self, resources: dict[str, Any] | None, now: float, later_by: float = 0.0) -> float:
        """The start _submission_start reads, kept on nbgrader's converter (the exporter's parent): recorded at now at
        the first run of the student's, then moved later_by seconds (the instructor's check of a later notebook, run
        in the student's conversion). Outside a conversion (a tool, a test), now."""
        converter = getattr(self.parent, "parent", None)
        if converter is None:
            return now
        found = (resources or {}).get("nbgrader", {})
        starts, key = _SUBMISSION_STARTS.setdefault(converter, {}), (found.get("assignment"), found.get("student"))
        if key in starts:
            starts[key] += later_by
        elif not later_by:
            starts[key] = now
        return starts.get(key, now)

    def _run_once(self, nb, resources, km):
        """One run of the notebook in a new kernel."""
        # Under nbgrader the student's submitted folder; run directly (tests, tools) the notebook's own folder.
        now = time.monotonic()
        own, whole = now + self.notebook_timeout, self._submission_start(resources, now) + self.submission_timeout
        run = self._run = Run(
            deadline=min(own, whole),
            limit=f"the notebook's time limit ({self.notebook_timeout} s)" if own <= whole else
            f"the submission's time limit ({self.submission_timeout} s for all its notebooks together)",
            submission=submission.submitted_folder(self.config, resources or {}) or
            (resources or {}).get("metadata", {}).get("path"),
            scratch=tempfile.mkdtemp(prefix="perfaudit-verdicts-"))
        try:
            nb, resources = super().preprocess(nb, resources, km)
            nb.metadata["language_info"] = kept_language_info(nb.metadata.get("language_info"))
        except sandbox.SandboxUnavailable:
            raise
        except Exception as error:  # noqa: BLE001 (the kernel did not start: whose fault is it?)
            if run.kernel_up:
                raise
            run.ending = kernel_fate.of_failed_start(error, crossed=getattr(run.km, "crossed", None))
            if run.ending.fate is not kernel_fate.Fate.STUDENTS_DOING:
                self._blame(run.ending.why)
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = [not_run_error(f"not run: {run.ending.why}")]
        finally:
            if run.channel is not None:
                run.channel.close()
            shutil.rmtree(run.scratch, ignore_errors=True)
            made_up.remove_test_folders()  # what tests made and the kernel's answers filled: gone with the notebook
            raw = getattr(run.km, "raw_output", None)
            if raw:  # escaped and capped: never the kernel's bytes as such
                self.log.debug("the kernel's raw output: %s", raw.text())
        return nb, resources

    def _is_long_running(self, cell):
        """Whether the cell is one the instructor tagged long-running, unchanged (a submission's own tags count for
        nothing)."""
        notebook = self._notebook
        return (notebook is not None and nbgrader_meta(cell).get("grade_id") in notebook.long_running
                and self._is_instructors(cell))

    def _is_instructors(self, cell):
        """Whether the cell is the instructor's, as the gradebook holds it (always so outside autograde)."""
        instructor = self._notebook.instructor if self._notebook is not None else None
        if instructor is None:
            return True
        grade_id = nbgrader_meta(cell).get("grade_id")
        return grade_id in instructor and cell.source == instructor[grade_id]

    def _blame(self, what):
        """Note what failed before any student code ran; _judge decides whose fault it was once the kernel is gone."""
        self.run.suspect = self.run.suspect or what

    def _judge(self, what):
        """Raise GradingEnvironmentError when `what` is the environment's doing: the instructor's solution, with the
        instructor's files, in a new sandbox, fails too, now. Otherwise it came from the submission (a jax.py or a
        perfaudit/ of its own, processes it left), which is graded as it is."""
        name = self._notebook.name if self._notebook is not None else None
        if not name:  # not autograding (the canary itself, a tool): the outputs say what happened
            return
        if not canary.still_sound(name, self.config, TrustedExecute):
            raise canary.GradingEnvironmentError(f"not graded: environment: {what}; the instructor's solution fails "
                                                 "the same way now. Fix the environment and grade again.")
        self.log.warning("%s: %s, but the instructor's solution does not: graded as submitted", name, what)

    def _kernel_died(self):
        """The kernel is dead: whose doing, and whether the notebook is run once more, is kernel_fate's rule."""
        self.run.ending = kernel_fate.of_dead_kernel(getattr(self.run.km, "memory_limit", None))

    def create_kernel_manager(self) -> SandboxedKernelManager:
        km = self.run.km = super().create_kernel_manager()
        km.submission, km.limits = self.run.submission, SandboxLimits(config=self.config)
        km.ignore = CourseDirectory(config=self.config).ignore
        return km

    async def async_start_new_kernel_client(self) -> "AsyncKernelClient":
        kc = await super().async_start_new_kernel_client()
        self.run.kernel_up = True
        return kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)  # nbclient binds the sync name to its own

    def _cell_timeout(self, cell: NotebookNode) -> int:
        """nbclient's timeout_func: the cell's own limit, cut to the time the notebook has left (at least 1 s)."""
        per_cell = self._per_cell_timeout(cell) if self._per_cell_timeout is not None else self.timeout
        if self._is_long_running(cell) and per_cell and per_cell > 0:
            per_cell = max(per_cell, self.long_cell_timeout)
        left = max(1, int(self.run.deadline - time.monotonic() + 0.999))
        return left if not per_cell or per_cell < 0 else min(per_cell, left)

    def output(self, outs: list[NotebookNode], msg: dict[str, Any], display_id: str | None,
               cell_index: int) -> NotebookNode | None:
        if msg["msg_type"] in ("stream", "display_data", "execute_result", "error"):
            if not self._within_output_limit(len(str(msg["content"]))):
                if not outs or outs[-1].get("name") != "stderr" or OUTPUT_DROPPED not in outs[-1].get("text", ""):
                    outs.append(NotebookNode(output_type="stream", name="stderr", text=OUTPUT_DROPPED))
                return None
        return super().output(outs, msg, display_id, cell_index)

    def _within_output_limit(self, size: int) -> bool:
        """Count `size` bytes more of output the notebook keeps: whether they are still within max_output_bytes."""
        self.run.output_bytes += size
        return self.run.output_bytes <= self.max_output_bytes

    # Once a test ran, the kernel may hold what the grader keeps to itself (what tests handed it, holds as timed).
    # Feedback shows no output of a cell after the first test (hide_outputs_after_tests.py); nothing the kernel
    # sends later may rewrite what it shows: an earlier cell's display, or the notebook's widget state.
    # nbclient has no hook for a display update: the override is of its own member, checked by the tests.
    def _update_display_id(self, display_id, msg):
        # an update is written into every output that shares its display id: each copy counts
        copies = sum(len(places) for places in self._display_id_map.get(display_id, {}).values())
        if not self.run.tested and self._within_output_limit(len(str(msg["content"])) * max(1, copies)):
            super()._update_display_id(display_id, msg)

    def handle_comm_msg(self, outs: list[NotebookNode], msg: dict[str, Any], cell_index: int) -> None:
        # A widget's state is kept in the grader (nbclient's widget_state, the notebook's metadata): it counts
        # against the same limit as outputs, buffers too (a fresh attack had the grader hold gigabytes of it).
        size = len(str(msg["content"])) + sum(len(buffer) for buffer in msg.get("buffers") or ())
        if not self.run.tested and self._within_output_limit(size):
            super().handle_comm_msg(outs, msg, cell_index)

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any],
                        index: int) -> tuple[NotebookNode, dict[str, Any]]:
        if cell.cell_type != "code":
            return cell, resources
        run, notebook = self.run, self._notebook
        assert notebook is not None  # made by preprocess
        if run.stopped is None and time.monotonic() >= run.deadline:
            run.stopped = f"not run: {run.limit} ran out before this cell"
        if run.stopped is not None:
            cell.outputs = [not_run_error(run.stopped)]
            return cell, resources
        if nbgrader_meta(cell).get("grade_id") in notebook.demonstrations and self._is_instructors(cell):
            cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=DEMONSTRATION_SKIPPED)]
            return cell, resources
        if verdicts.is_test(cell):
            if self._is_instructors(cell):
                self._out_of_order(verdicts.cell_key(cell, index))
                return self._run_test(cell, resources)
            # A "test" the gradebook does not hold is the student's own cell with forged metadata: it runs in the
            # kernel like any student code, as a plain cell, and is never scored.
            self.log.warning("%s: a graded cell that is not the instructor's runs as student code, unscored",
                             resources.get("nbgrader", {}).get("student"))
            cell.metadata.pop("nbgrader", None)
        run.student_code_ran |= utils.is_solution(cell) or not utils.is_locked(cell)
        # nbclient interrupts the kernel when a cell's reply does not come in time, and stands in its own reply
        interrupts = getattr(run.km, "interrupts", 0)
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
            error = next((o for o in cell.outputs if o.get("output_type") == "error"), None)
            if error is not None and utils.is_solution(cell) and error.get("ename") == "NotImplementedError":
                run.unfilled.append(str(nbgrader_meta(cell).get("grade_id", index))[:60])
            if error is not None and not run.student_code_ran:
                self._blame(f"the instructor's cell '{cell.metadata.get('nbgrader', {}).get('grade_id', index)}' "
                            f"failed before any student code ran ({error.ename}: {error.evalue})")
            self._take_snapshot(cell, index, resources)
            return cell, resources
        except DeadKernelError:
            self._kernel_died()
            if not run.student_code_ran:
                self._blame("the kernel died in an instructor's cell before any student code ran")
            self._stop(cell, resources, "the kernel died while running this cell (it crashed, exited, or ran out "
                                        "of memory)", "the kernel died in an earlier cell")
        except CellTimeoutError as error:
            reply_timed_out = getattr(run.km, "interrupts", 0) > interrupts
            # the reply came, its end on the output channel did not: a wait after an interrupt says nothing of that
            if IOPUB_TIMEOUT in str(error) and not reply_timed_out:
                cell.outputs.append(NotebookNode(output_type="stream", name="stderr", text=OUTPUT_LOST))
                self._reconnect_output()
                self._take_snapshot(cell, index, resources)
                return cell, resources
            self._stop(cell, resources, "the kernel stopped responding to this cell and to interrupts",
                       "the kernel stopped responding in an earlier cell")
        return cell, resources

    def _reconnect_output(self):
        """A new connection to the kernel's output channel: ZeroMQ closed the one that brought a message over
        protocol.MAX_MESSAGE_BYTES and does not open it again, so no later cell's output would arrive. jupyter_client
        opens no single channel again: a new client of the kernel takes over from the old one, between two cells."""
        stale = self.kc  # type: ignore[has-type]  # nbclient's, set when the kernel started
        self.kc = self.km.client()
        self.kc.allow_stdin = False  # as nbclient's own client
        self.kc.start_channels()
        stale.stop_channels()
        if self.run.channel is not None:
            self.run.channel.iopub = zmq.Socket.shadow(self.kc.iopub_channel.socket.underlying)
        try:  # until the new connection receives: what the kernel publishes before that is lost
            run_sync(self.kc.wait_for_ready)(timeout=RECONNECT_S)
        except RuntimeError as error:  # the kernel did not answer: the next cell finds out
            self.log.warning("the kernel's output channel could not be connected again: %s", error)

    def _student_namespace(self) -> verdicts.StudentNamespace:
        """The namespace tests run in, with its channel to the kernel, made when first needed."""
        run = self.run
        if run.namespace is None:
            assert self._notebook is not None  # made by preprocess
            run.channel = KernelChannel(self.km, run.scratch, iopub=self.kc.iopub_channel.socket)
            try:
                run.namespace = verdicts.StudentNamespace(run.channel, self._notebook.contract)
            except Exception as error:  # noqa: BLE001 - the instructor's imports: never the student's doing
                raise canary.GradingEnvironmentError(
                    f"not graded: environment: the grader cannot import what the instructor's cells import "
                    f"({type(error).__name__}: {error}). Fix the environment and grade again.") from error
        return run.namespace

    def _out_of_order(self, key):
        """The instructor's cell that comes after cell `key` in the notebook but ran before it (the submission moved
        a cell), else None; a cell in order becomes the latest."""
        assert self._notebook is not None  # made by preprocess
        order, run = self._notebook.contract.order, self.run
        place = order.get(key)
        if place is None:
            return None
        if run.latest is not None and order[run.latest] > place:
            return run.latest
        run.latest = key
        return None

    def _take_snapshot(self, cell, index, resources):
        """Right after a cell of the instructor's notebook that binds names of the contract, before any later cell
        runs: what tests will read of those names (verdicts.StudentNamespace)."""
        assert self._notebook is not None  # made by preprocess
        key = verdicts.cell_key(cell, index)
        ran_after = self._out_of_order(key)
        if key not in self._notebook.contract.bound_by:
            return
        namespace = self._student_namespace()
        self._channel().start_test(min(SNAPSHOT_TIMEOUT_S, self._cell_timeout(cell)))
        try:
            namespace.take_snapshot(key, ran_after)
        except KernelGone as gone:  # the next cell finds the kernel gone and says so
            self.log.warning("%s: the kernel could not be asked for what cell %r bound: %s",
                             resources.get("nbgrader", {}).get("student"), key, gone)

    def _channel(self) -> KernelChannel:
        """The channel _student_namespace made."""
        assert self.run.channel is not None, "the channel is made with the namespace"
        return self.run.channel

    def _run_test(self, cell, resources):
        """The test runs here; its outputs are the grader's own, whatever the kernel holds or prints."""
        namespace = self._student_namespace()
        self.run.tested = True
        self._channel().start_test(self._cell_timeout(cell))
        cell.execution_count = None
        try:
            cell.outputs = verdicts.run_test(cell.source, namespace, unfilled=self.run.unfilled)
        except KernelGone as gone:
            if gone.died:
                self._kernel_died()
            cell.outputs = []
            self._stop(cell, resources, f"{gone} while the grader ran this test", f"{gone} in an earlier cell")
        return cell, resources

    def _stop(self, cell, resources, here, later):
        self.run.stopped = f"not run: {later}"
        cell.outputs.append(not_run_error(here))
        self.log.warning("%s: cell '%s' stopped the notebook: %s", resources.get("nbgrader", {}).get("student"),
                         nbgrader_meta(cell).get("grade_id", "?"), here)
