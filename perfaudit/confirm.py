"""Verdicts decided outside the student's kernel: a test's points stand only when the grader confirms them.

The kernel that ran a hidden test also ran the student's code, which can patch the checks, rewrite later cells
or fake its results. So after nbgrader has run the notebook, ConfirmVerdicts runs the student's cells again in a
separate process (perfaudit/harness.py, through perfaudit.sandbox) and, for every test that passed there, calls
the student's functions on inputs chosen now (random matrices at random sizes, a trace sequence, evidence dicts
with random numbers, fresh directories). Only plain data comes back; this process compares it, with the checks
of perfaudit/checks.py where they fit. A test that passed in the kernel but is not confirmed gets an error
output, NotConfirmed, so nbgrader's SaveAutoGrades scores it 0; HideHiddenTests shows students a neutral message,
the batch summary shows instructors the reason.

Steps go one at a time, each with the notebook's cell timeout, all within its notebook timeout; the harness stops
after the last test that passed in the kernel. If it hangs or dies, the tests confirmed before stay confirmed.
Configured in nbgrader_config.py (before SaveAutoGrades), so plain `nbgrader autograde` and
`python -m perfaudit.grade` give the same confirmed scores.
"""

import json
import math
import os
import queue
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from perfaudit import checks, paths, sandbox

NOT_CONFIRMED = "NotConfirmed"  # ename of the error put on tests whose verdict could not be confirmed
STUDENT_MESSAGE = (
    "This check passed in your notebook, but the grader could not confirm it when it ran your code again on "
    "new inputs, so it scores no points. Run the whole notebook from the top and make sure your functions "
    "work for any input; ask your instructor if you think this is a mistake."
)
MAX_REPLY_BYTES = 16 * 2**20
MAX_READ_BACK_BYTES = 16 * 2**20


def not_confirmed_error(reason):
    evalue = f"could not be confirmed: {reason}"
    return NotebookNode(output_type="error", ename=NOT_CONFIRMED, evalue=evalue, traceback=[f"{NOT_CONFIRMED}: {evalue}"])


class MissingConfirmationRule(RuntimeError):
    """A graded test with no rule here: the instructor's to fix, never accepted unconfirmed."""


class Stopped(Exception):
    """The harness can answer no more steps (it hung, died or used up the notebook's time)."""


class StudentError(AssertionError):
    """The student's code raised, or answered with something that is not plain data."""


# ----- the harness process -----


class Harness:
    """One running harness: steps sent one at a time, each answered within its time or the harness is stopped."""

    def __init__(self, workdir, env, limits, cell_timeout, notebook_timeout):
        self.workdir = Path(workdir)
        self.cell_timeout, self.deadline = cell_timeout, time.monotonic() + notebook_timeout
        self.notebook_timeout = notebook_timeout
        self.log = tempfile.TemporaryFile()
        self.shared = {}  # answers the rules of one notebook share (Probe.shared), and the trace sizes used
        argv = sandbox.command([sys.executable, "-I", "-m", "perfaudit.harness"], workdir=str(workdir), env=env,
                               limits=limits)
        if not sandbox.available()[0]:  # running unsandboxed, as asked: a clean environment all the same
            env = sandbox.unsandboxed_env(env)
        self.process = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.log, start_new_session=True)
        self.copies = tempfile.mkdtemp(prefix="perfaudit-confirmed-")  # trusted copies of what it wrote
        self.replies = queue.Queue()
        threading.Thread(target=self._read_replies, daemon=True).start()
        self.where = "starting"

    def _read_replies(self):
        for line in iter(lambda: self.process.stdout.readline(MAX_REPLY_BYTES), b""):
            self.replies.put(line)
        self.replies.put(None)

    def step(self, message, where):
        """Send one step; return (reply value, seconds from sending to the reply). Raise StudentError, Stopped."""
        self.where = where
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Stopped(f"the notebook's time limit ({self.notebook_timeout} s) ran out before {where}")
        timeout = min(self.cell_timeout, left)
        started = time.monotonic()
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
            line = self.replies.get(timeout=timeout)
        except (BrokenPipeError, OSError):
            line = None
        except queue.Empty:
            raise Stopped(f"no answer within {timeout:.0f} s in {where}") from None
        elapsed = time.monotonic() - started
        if line is None:
            raise Stopped(f"the process ended in {where} ({self._ended()})")
        try:
            reply = json.loads(line)
            ok, value, error = reply["ok"], reply.get("value"), reply.get("error")
        except (ValueError, KeyError, TypeError):
            raise Stopped(f"an unreadable answer in {where}") from None
        if not ok:
            raise StudentError(f"{where} raised {error}")
        return value, elapsed

    def _ended(self):
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "its output closed"
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else -code
            return f"killed by signal {name}"
        self.log.seek(0, os.SEEK_END)
        self.log.seek(max(0, self.log.tell() - 300))
        tail = self.log.read().decode(errors="replace").strip().splitlines()
        return f"exit code {code}" + (f": {tail[-1]}" if tail else "")

    def close(self):
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # the session this harness leads, and nothing else
            except ProcessLookupError:
                pass
        self.process.wait()
        self.log.close()
        shutil.rmtree(self.copies, ignore_errors=True)


class Probe:
    """What a rule uses: calls into the harness, this grading's random numbers, fresh directories read back."""

    def __init__(self, harness, rng, grade_id):
        self.harness, self.rng, self.grade_id = harness, rng, grade_id

    def _step(self, message, what):
        return self.harness.step(message, f"{what} (test '{self.grade_id}')")

    def get(self, name):
        value, _ = self._step({"op": "get", "name": name}, f"reading {name}")
        return value

    def call(self, name, *args, as_array=False, what=None):
        """(the plain result of name(*args), seconds from sending to the answer)."""
        encoded = [{"matrix": a.tolist()} if isinstance(a, np.ndarray) else a for a in args]
        return self._step({"op": "call", "name": name, "args": encoded, "as_array": as_array}, what or f"calling {name}")

    def op(self, message, what):
        return self._step(message, what)

    def fresh_dir(self, files=None):
        """(name relative to the harness's folder, its path here): a new directory holding only `files`
        ({name: text}), all of it the harness's to write, as the rest of its folder is."""
        name = f"confirm-{self.rng.integers(1 << 62):x}"
        path = self.harness.workdir / name
        path.mkdir()
        for file_name, text in (files or {}).items():
            (path / file_name).write_text(text)
        owner = self.harness.workdir.stat()
        if (owner.st_uid, owner.st_gid) != (os.geteuid(), os.getegid()):  # the sandbox's user
            for made in (path, *path.iterdir()):
                os.chown(made, owner.st_uid, owner.st_gid)
        return name, path

    def read_back(self, path):
        """A trusted copy of the regular files in path (no links, nothing large): checks read this copy."""
        copy = Path(tempfile.mkdtemp(prefix="confirmed-", dir=self.harness.copies))
        total = 0
        for entry in os.scandir(path):
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                continue
            total += info.st_size
            if total > MAX_READ_BACK_BYTES:
                raise StudentError(f"the files written to {path.name} are larger than {MAX_READ_BACK_BYTES} bytes")
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                (copy / entry.name).write_bytes(handle.read(MAX_READ_BACK_BYTES + 1))
        return copy

    def shared(self, key, make):
        """One probe's answer shared by the rules of one notebook (the three report tests read one write)."""
        if key not in self.harness.shared:
            try:
                self.harness.shared[key] = (make(), None)
            except (AssertionError, Stopped) as error:
                self.harness.shared[key] = (None, error)
        value, error = self.harness.shared[key]
        if error is not None:
            raise error
        return value


# ----- inputs chosen at grading time -----


def _new_size(rng, avoid=(8, 16, 32)):
    return int(rng.choice([n for n in range(5, 48) if n not in avoid]))


def _jaxpr_text(token):
    return ("{ lambda ; a:f32[16,16]. let\n"
            "    b:f32[16,16] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a a\n"
            f"    c:f32[16,16] = tanh b\n  in (c,) }}\n# evidence {token}\n")


def make_evidence(rng, steady_calls):
    """An evidence dict as gather_evidence returns it, with numbers that exist nowhere but here."""
    return {
        "first_call_s": float(rng.uniform(0.05, 0.5)),
        "steady_s": [float(s) for s in rng.uniform(1e-5, 1e-3, size=steady_calls)],
        "shape": [16, 16],
        "dtype": "float32",
        "trace_count": 2,
        "shapes": [[16, 16], [32, 32]],
        "jaxpr_text": _jaxpr_text(f"{rng.integers(1 << 62):x}"),
    }


def make_report(rng, evidence):
    """A stage 3 report of this evidence (what run_audit returns), made here."""
    steady = np.asarray(evidence["steady_s"])
    q1, q3 = np.percentile(steady, [25, 75])
    return {
        "audit": "performance-audit", "workload": "tanh(x @ x)", "memory_measured": False, "profiler_trace": False,
        "timings": {"shape": evidence["shape"], "dtype": evidence["dtype"], "synchronized": True,
                    "first_call_s": evidence["first_call_s"], "steady_s": evidence["steady_s"],
                    "steady_summary": {"median_s": float(np.median(steady)), "min_s": float(steady.min()),
                                       "max_s": float(steady.max()), "iqr_s": float(q3 - q1)}},
        "tracing": {"shapes": evidence["shapes"], "trace_count": 2, "read_before_make_jaxpr": True},
        "artifacts": {"jaxpr": "workload.jaxpr.txt"},
        "environment": {"python": "3.11", "jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu",
                        "device_kind": f"cpu-{rng.integers(1000)}"},
    }


def make_first_call(rng):
    """What perfaudit.decompose.first_call returns, with consistent random numbers."""
    first = float(rng.uniform(0.05, 0.3))
    observed = {name: first * float(share) for name, share in zip(("trace_s", "lower_s", "compile_s"),
                                                                  rng.uniform(0.05, 0.3, size=3))}
    observed["sum_s"] = sum(observed.values())
    observed["remainder_s"] = first - observed["sum_s"]
    aot = {name: first * float(share) for name, share in zip(("trace_s", "lower_s", "compile_s", "first_run_s"),
                                                            rng.uniform(0.05, 0.3, size=4))}
    aot["sum_s"] = sum(aot.values())
    rounds = 3
    first_rounds = [first * 0.9, first, first * 1.2]
    aot_rounds = [aot["sum_s"] * 1.1, aot["sum_s"], aot["sum_s"] * 0.95]
    return {
        "decomposition": {
            "shape": [16, 16], "dtype": "float32", "rounds": rounds, "first_call_rounds_s": first_rounds,
            "aot_sum_rounds_s": aot_rounds, "first_call_s": first, "observed": observed, "aot": aot,
            "warm_up": {"first_lower_s": float(rng.uniform(0.01, 0.1)), "second_lower_s": float(rng.uniform(1e-3, 1e-2))},
            "one_time_lowering": {"measured_in": "a fresh Python process", "first_lower_s": 0.05,
                                  "second_lower_s": 0.005, "one_time_s": 0.045},
        },
        "cost_analysis": {"flops": 8192.0, "transcendentals": 256.0, "bytes_accessed": float(rng.integers(2048, 4096))},
        "memory_estimate": {"is_estimate": True, "source": "compiled.memory_analysis()", "argument_size_in_bytes": 1024,
                            "output_size_in_bytes": 1024, "temp_size_in_bytes": int(rng.integers(0, 4096))},
        "stablehlo_text": ("module @jit_workload {\n  func.func public @main(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {\n"
                           "    %0 = stablehlo.dot_general %arg0, %arg0 : tensor<16x16xf32>\n"
                           f"    %1 = stablehlo.tanh %0 : tensor<16x16xf32>\n    return %1\n  }}\n}}\n// {rng.integers(1 << 62):x}\n"),
    }


# ----- comparisons on plain data -----


def _matrix_result(probe, name, a, what):
    found, _ = probe.call(name, a, as_array=True, what=f"calling {name} on {what}")
    return np.asarray(found, dtype=np.float64)


def _confirm_identity(probe, name):
    n = int(probe.rng.integers(2, 64))
    eye = np.eye(n, dtype=np.float32)
    found = _matrix_result(probe, name, eye, f"the {n}x{n} identity")
    checks._compare(found, np.tanh(eye.astype(np.float64)), f"{name}(I) for the {n}x{n} identity", atol=1e-6)


def _confirm_random(probe, name):
    n = _new_size(probe.rng)
    a = checks.random_matrix(probe.rng, n)
    found = _matrix_result(probe, name, a, f"a random {n}x{n} matrix")
    expected = np.tanh(a.astype(np.float64) @ a.astype(np.float64))
    checks._compare(found, expected, f"{name}(A) should be tanh(A @ A) for a random {n}x{n} matrix A", atol=1e-4)


def _number(value, what):
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise AssertionError(f"{what} should be a number; found {type(value).__name__}.")
    return float(value)


def _timings_are_measured(first, steady, elapsed, what):
    """Timings a real clock took: within the time the call took, and not all the same."""
    if first + sum(steady) > elapsed:
        raise AssertionError(f"{what}: the timings add up to {first + sum(steady):.3f} s, more than the "
                             f"{elapsed:.3f} s the whole call took.")
    if len(set(steady)) < 2:
        raise AssertionError(f"{what}: all {len(steady)} steady timings are exactly {steady[0]!r}: not measured.")


def _evidence_is_measured(evidence, steady_calls, elapsed, what):
    if not isinstance(evidence, dict):
        raise AssertionError(f"{what} should be a dict; found {type(evidence).__name__}.")
    steady = [_number(s, f"{what}: steady_s[]") for s in evidence.get("steady_s", [])]
    if len(steady) != steady_calls:
        raise AssertionError(f"{what}: {steady_calls} steady calls asked for; {len(steady)} steady timings found.")
    first = _number(evidence.get("first_call_s"), f"{what}: first_call_s")
    checks.check_timings(first, steady)
    _timings_are_measured(first, steady, elapsed, what)


def _report_carries(report, evidence, copy):
    """The report's numbers are the evidence's: a report written from constants fails here."""
    timings, tracing = report.get("timings", {}), report.get("tracing", {})
    for key in ("first_call_s", "steady_s", "shape", "dtype"):
        if timings.get(key) != evidence[key]:
            raise AssertionError(f"report.json's timings.{key} is {timings.get(key)!r}; the evidence given to "
                                 f"write_evidence had {evidence[key]!r}.")
    for key in ("trace_count", "shapes"):
        if tracing.get(key) != evidence[key]:
            raise AssertionError(f"report.json's tracing.{key} is {tracing.get(key)!r}; the evidence had {evidence[key]!r}.")
    jaxpr = copy / str(report.get("artifacts", {}).get("jaxpr", ""))
    if not jaxpr.is_file() or jaxpr.read_text() != evidence["jaxpr_text"]:
        raise AssertionError("the JAXPR file beside report.json is not the jaxpr_text of the evidence given.")


def _written_report(probe):
    """write_evidence(fresh dir, evidence made here) once per notebook: (evidence, report, trusted copy)."""
    def write():
        evidence = make_evidence(probe.rng, int(probe.rng.integers(5, 20)))
        name, path = probe.fresh_dir()
        probe.call("write_evidence", name, evidence, what="write_evidence into a new directory")
        copy = probe.read_back(path)
        return evidence, checks.read_report(copy), copy
    return probe.shared("write_evidence", write)


def _audit_run(probe, key):
    """run_audit(fresh dir, steady calls chosen now): (returned report, written report, trusted copy)."""
    def run():
        steady_calls = int(probe.rng.integers(5, 20))
        name, path = probe.fresh_dir()
        returned, elapsed = probe.call("run_audit", name, steady_calls, what="run_audit into a new directory")
        copy = probe.read_back(path)
        checks.check_evidence_dir(copy)
        report = checks.read_report(copy)
        timings = report["timings"]
        _evidence_is_measured(timings, steady_calls, elapsed, "report.json's timings")
        return returned, report, copy
    return probe.shared(key, run)


# ----- one rule per graded test: what its points claim, confirmed on inputs chosen now -----


def correct_identity_output(probe):
    _confirm_identity(probe, "workload_jit")


def correct_random_output(probe):
    _confirm_random(probe, "workload_jit")


def synchronized_time_call(probe):
    for low, high in ((0.02, 0.06), (0.12, 0.2)):
        delay = float(probe.rng.uniform(low, high))
        seconds, elapsed = probe.op({"op": "time_call", "delay": delay}, "time_call on a slow result")
        seconds = _number(seconds, "time_call's result")
        if seconds < delay:
            raise AssertionError(f"time_call measured {seconds * 1e3:.3f} ms for a call whose result takes at least "
                                 f"{delay * 1e3:.0f} ms to become ready.")
        if seconds > elapsed:
            raise AssertionError(f"time_call returned {seconds:.3f} s for a call that took {elapsed:.3f} s in all.")


def first_call_slower(probe):
    checks.check_timings(_number(probe.get("first_call_s"), "first_call_s"),
                         [_number(s, "steady_s[]") for s in probe.get("steady_s")])
    steady_calls = int(probe.rng.integers(5, 12))
    step = {"op": "first_and_steady", "n": _new_size(probe.rng), "steady": steady_calls,
            "seed": int(probe.rng.integers(1 << 62))}
    timed, elapsed = probe.op(step, "time_call on a new jit of workload")
    first = _number(timed["first"], "time_call's result")
    steady = [_number(s, "time_call's result") for s in timed["steady"]]
    for seconds, outer in zip([first] + steady, timed["outer"]):
        if seconds > outer + 1e-3:
            raise AssertionError(f"time_call returned {seconds:.6f} s for a call that took {outer:.6f} s in all.")
    checks.check_timings(first, steady)
    _timings_are_measured(first, steady, elapsed, "time_call on a new jit of workload")


def correct_summary(probe):
    samples = [float(s) for s in probe.rng.exponential(1e-4, size=int(probe.rng.integers(7, 60)))]
    found, _ = probe.call("summarize", samples, what=f"summarize on {len(samples)} random timings")
    checks.check_summarize(lambda _: found, samples)


def _trace_sequence(probe):
    """A random sequence of new and repeated shapes: each new shape adds one trace, each repeat none."""
    used = probe.harness.shared.setdefault("trace sizes", {8, 16, 32})  # shapes audited has already seen
    sizes = [int(n) for n in probe.rng.choice([n for n in range(5, 48) if n not in used], 3, replace=False)]
    used.update(sizes)
    sequence = [sizes[0]] + [int(n) for n in probe.rng.choice(sizes, int(probe.rng.integers(4, 7)))]
    step = {"op": "traces", "sizes": sequence, "seed": int(probe.rng.integers(1 << 62))}
    counts, _ = probe.op(step, "calling audited at new and repeated shapes")
    previous, seen = counts["before"], set()
    for n, count in zip(sequence, counts["after"]):
        if not isinstance(count, int) or isinstance(count, bool) or not isinstance(previous, int):
            raise AssertionError(f"traces() should return an int; found {count!r}.")
        expected = 0 if n in seen else 1
        if count - previous != expected:
            kind = "a repeated" if n in seen else "a new"
            raise AssertionError(f"calls at {sequence}: {kind} {n}x{n} shape should add {expected} trace(s); "
                                 f"traces() went from {previous} to {count}.")
        seen.add(n)
        previous = count


def two_traces(probe):
    count = probe.get("traces_after_two_shapes")
    if not isinstance(count, int) or isinstance(count, bool):
        raise AssertionError(f"traces_after_two_shapes should be an int; found {count!r}.")
    checks.check_trace_count(count)
    _trace_sequence(probe)


def one_trace_per_new_shape(probe):
    _trace_sequence(probe)


def jaxpr_shows_workload(probe):
    text = probe.get("jaxpr_text")
    checks.check_jaxpr_text(text)
    if "lambda" not in text or "f32[" not in text:
        raise AssertionError("jaxpr_text is not the text of a JAXPR (str(jax.make_jaxpr(audited)(x16))).")


def report_follows_schema(probe):
    evidence, report, copy = _written_report(probe)
    checks.check_report_schema(report)
    _report_carries(report, evidence, copy)


def report_states_not_measured(probe):
    evidence, report, copy = _written_report(probe)
    checks.check_report_scope(report)
    _report_carries(report, evidence, copy)


def report_agrees_with_evidence(probe):
    evidence, report, copy = _written_report(probe)
    checks.check_report_agrees(report, copy)
    _report_carries(report, evidence, copy)
    steady_calls = int(probe.rng.integers(5, 20))
    gathered, elapsed = probe.call("gather_evidence", steady_calls, what=f"gather_evidence({steady_calls})")
    _evidence_is_measured(gathered, steady_calls, elapsed, f"gather_evidence({steady_calls})")
    checks.check_trace_count(gathered.get("trace_count"))
    checks.check_jaxpr_text(gathered.get("jaxpr_text"))


def audit_output_correct(probe):
    _confirm_identity(probe, "workload")
    _confirm_random(probe, "workload")


def audit_evidence_checks(probe):
    _audit_run(probe, "run_audit")


def audit_reruns_clean(probe):
    returned, report, _ = _audit_run(probe, "run_audit again")
    if returned != report:
        raise AssertionError("run_audit should return the report it wrote to report.json.")


def expected_cost_matches_xla(probe):
    n = _new_size(probe.rng, avoid=(16,))
    found, _ = probe.call("expected_cost", n, what=f"expected_cost({n})")
    if not isinstance(found, dict):
        raise AssertionError(f"expected_cost({n}) should return a dict; found {type(found).__name__}.")
    for key, value in (("flops", 2 * n**3), ("transcendentals", n**2)):
        if not math.isclose(_number(found.get(key), f"expected_cost({n})[{key!r}]"), value, rel_tol=1e-9):
            raise AssertionError(f"expected_cost({n})[{key!r}] should be {value}; found {found.get(key)!r}.")


def going_further_evidence(probe):
    rng = probe.rng
    evidence = make_evidence(rng, int(rng.integers(5, 20)))
    base, first_call = make_report(rng, evidence), make_first_call(rng)
    name, path = probe.fresh_dir({"workload.jaxpr.txt": evidence["jaxpr_text"],
                                  "report.json": json.dumps(base, indent=2) + "\n"})
    returned, _ = probe.call("write_going_further", name, base, first_call, what="write_going_further into a new directory")
    copy = probe.read_back(path)
    checks.check_going_further(copy)
    checks.check_evidence_dir(copy)
    report = checks.read_report(copy)
    if returned != report:
        raise AssertionError("write_going_further should return the report it wrote.")
    for section in ("decomposition", "cost_analysis", "memory_estimate"):
        if report[section] != first_call[section]:
            raise AssertionError(f"report.json's {section} is not the one given to write_going_further.")
    if report.get("timings") != base["timings"] or report.get("tracing") != base["tracing"]:
        raise AssertionError("report.json's timings and tracing are not those of the report given to write_going_further.")
    if (copy / report["artifacts"]["stablehlo"]).read_text() != first_call["stablehlo_text"]:
        raise AssertionError("the StableHLO file is not the stablehlo_text given to write_going_further.")


RULES = {rule.__name__: rule for rule in (
    correct_identity_output, correct_random_output, synchronized_time_call, first_call_slower, correct_summary,
    two_traces, one_trace_per_new_shape, jaxpr_shows_workload,
    report_follows_schema, report_states_not_measured, report_agrees_with_evidence,
    audit_output_correct, audit_evidence_checks, audit_reruns_clean, expected_cost_matches_xla, going_further_evidence,
)}


# ----- the preprocessor -----


def graded_tests(nb):
    """(index, cell) of every autograded test cell: graded code cells that are not solutions."""
    return [(i, c) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and utils.is_grade(c) and not utils.is_solution(c)]


def kernel_points(cell):
    """The points nbgrader would give this test cell from its outputs as they are now."""
    score, _ = utils.determine_grade(cell)
    return score or 0


def cell_name(cell, index):
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return f"cell '{grade_id}'" if grade_id else f"cell {index + 1}"


def working_copy(folder, ignore, into):
    """The submission's other files (no notebooks, no links), copied into a new folder."""
    root = Path(folder)
    for path in utils.find_all_files(str(root), list(ignore) + ["*.ipynb"]):
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        target = Path(into) / Path(path).relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def harness_env(workdir):
    """The kernel's environment (perfaudit.sandbox.student_env: no NBGRADER_EXECUTION either), with IPython's and
    matplotlib's settings for a process without a display, and evidence kept in its own folder."""
    env = {**sandbox.student_env(), "IPYTHONDIR": str(Path(workdir) / ".ipython"), "MPLBACKEND": "Agg"}
    env.pop(paths.EVIDENCE_ENV, None)
    return env


def _memory_mb():
    """This grading process's own address-space limit (the batch grader sets one), else the sandbox default."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return sandbox.Limits().memory_mb if soft == resource.RLIM_INFINITY else max(1, soft // 2**20)


def confirm(nb, workdir, env, cell_timeout, notebook_timeout, rng=None, log=None):
    """{index of each test cell that passed in the kernel: None when confirmed, else the reason it was not}."""
    rng = rng or np.random.default_rng()
    tests = dict(graded_tests(nb))
    passed = [i for i, c in tests.items() if kernel_points(c) > 0]
    verdicts = {i: "not reached" for i in passed}
    if not passed:
        return verdicts
    limits = sandbox.Limits(cpu_s=notebook_timeout, memory_mb=_memory_mb())
    with sandbox.workdir_for(workdir):  # the sandbox's user writes there while the harness runs
        return _confirm_in(nb, tests, passed, verdicts, Harness(workdir, env, limits, cell_timeout, notebook_timeout),
                           rng, log)


def _confirm_in(nb, tests, passed, verdicts, harness, rng, log):
    try:
        harness.step({"op": "ready"}, "starting")
        for index, cell in enumerate(nb.cells[: max(passed) + 1]):
            if cell.cell_type != "code":
                continue
            if index not in tests:
                try:
                    harness.step({"op": "run", "source": cell.source}, cell_name(cell, index))
                except StudentError:
                    pass  # the kernel carried on after errors: so does the harness
            elif index in verdicts:
                verdicts[index] = _apply_rule(cell, Probe(harness, rng, cell.metadata.nbgrader["grade_id"]))
    except (Stopped, StudentError) as error:
        for index in passed:
            if verdicts[index] == "not reached":
                verdicts[index] = f"the confirmation run stopped: {error}"
        if log:
            log.warning("confirmation stopped: %s", error)
    finally:
        harness.close()
    return verdicts


def _apply_rule(cell, probe):
    try:
        RULES[probe.grade_id](probe)
    except AssertionError as error:  # a check failed, or the student's code raised
        return str(error) or type(error).__name__
    except Stopped:
        raise
    except Exception as error:  # noqa: BLE001 (unexpected data: fail closed, with the reason)
        return f"{type(error).__name__}: {error}"
    return None


class ConfirmVerdicts(NbGraderPreprocessor):
    """Put NotConfirmed on every test that passed in the kernel but could not be confirmed outside it."""

    def preprocess(self, nb, resources):
        missing = sorted({c.metadata.nbgrader["grade_id"] for _, c in graded_tests(nb)} - set(RULES))
        if missing:
            raise MissingConfirmationRule(
                f"no confirmation rule for graded cell(s) {', '.join(missing)}: add one to perfaudit/confirm.py RULES"
            )
        if not any(kernel_points(c) > 0 for _, c in graded_tests(nb)):
            return nb, resources
        from perfaudit.grade.execute import GuardedExecute  # its timeouts are the notebook's own

        execute = GuardedExecute(config=self.config)
        workdir = Path(tempfile.mkdtemp(prefix="perfaudit-confirm-"))
        try:
            working_copy(self._submitted_folder(resources), self._ignore(), workdir)
            verdicts = confirm(nb, workdir, harness_env(workdir), execute.timeout or 30, execute.notebook_timeout,
                               log=self.log)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        for index, reason in verdicts.items():
            if reason is not None:
                nb.cells[index].outputs.append(not_confirmed_error(reason))
                self.log.warning("%s: '%s' could not be confirmed: %s", resources.get("nbgrader", {}).get("student"),
                                 nb.cells[index].metadata.nbgrader["grade_id"], reason)
        return nb, resources

    def _ignore(self):
        return CourseDirectory(config=self.config).ignore

    def _submitted_folder(self, resources):
        """The student's submitted folder: the files nbgrader copied before the kernel wrote anything."""
        info = resources.get("nbgrader", {})
        coursedir = CourseDirectory(config=self.config)
        folder = Path(coursedir.format_path(coursedir.submitted_directory, info.get("student", "."),
                                            info.get("assignment", ".")))
        return folder if folder.is_dir() else Path(resources.get("metadata", {}).get("path", "."))
