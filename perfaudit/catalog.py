"""Two catalogs of fixture submissions that prove grading does not depend on a student's honesty.

CHEATS: each is a trick that plain nbgrader 0.9.6 rewards (or that breaks it), named by what it does; it must
earn no points for the checks it attacks and leave the gradebook as it was. VALID: correct solutions written
differently from the instructor's; each must keep full marks. Each case submits only the notebooks it is
about and states the score it must get for each. Built from the student release and the instructor's
solutions, like perfaudit/samples.py, so the cases follow any change to source/.
"""

from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from perfaudit import ASSIGNMENT, execute, paths, samples

FULL = {1: 5, 2: 4, 3: 4, 4: 5}


@dataclass(frozen=True)
class Case:
    expected: dict  # {stage: points}; the case submits exactly these notebooks
    attacks: str = ""  # cheats: what the trick goes after, in the words of the catalog table
    replaced: dict = field(default_factory=dict)  # as samples.Sample.replaced
    added: dict = field(default_factory=dict)  # {(stage, grade_id): code of a student cell put after that cell}
    outputs: str = ""  # "in order" or "out of order": outputs and execution counts left in, as after a session


# --- the cheats -----------------------------------------------------------------------------------------------

WRONG_WORKLOAD = '''
def workload(x):
    return jnp.zeros_like(x)  # wrong on purpose: the checks below are made to pass anyway
'''

NO_JIT_COUNTER = '''
trace_count = 0


def counted_workload(x):
    global trace_count
    trace_count += 1
    return jnp.tanh(x @ x)


audited = counted_workload  # no jax.jit: the body runs, and counts, on every call


def traces():
    return trace_count
'''

CHEATS = {
    "cheat-patched-assertions": Case(
        expected={1: 3},
        attacks="the two output checks, through no-op assertion helpers",
        replaced={(1, "workload"): '''
import numpy.testing

numpy.testing.assert_allclose = lambda *args, **kwargs: None
checks._compare = lambda *args, **kwargs: None
checks.check_identity_output = lambda *args, **kwargs: None
checks.check_random_output = lambda *args, **kwargs: None
''' + WRONG_WORKLOAD},
    ),
    "cheat-replaced-checks-module": Case(
        expected={1: 1},  # keeps first_call_slower: the instructor's timing cell still times a first call
        attacks="every check of notebook 1, through a `checks` whose every function passes",
        replaced={
            (1, "workload"): '''
class _PassEverything:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


checks = _PassEverything()
''' + WRONG_WORKLOAD,
            (1, "time_call"): '''
def time_call(fn, x):
    start = time.perf_counter()
    fn(x)
    return time.perf_counter() - start
''',
            (1, "summarize"): '''
def summarize(samples):
    return {"median_s": float(np.mean(samples)), "min_s": 0.0, "max_s": 0.0, "iqr_s": 0.0}
''',
        },
    ),
    "cheat-always-equal-count": Case(
        expected={2: 1},  # keeps the JAXPR check
        attacks="both trace-count checks, through an int whose == is always true",
        replaced={(2, "counted_workload"): '''
class AlwaysEqual(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __sub__(self, other):
        return AlwaysEqual(int(self) - int(other))

    __hash__ = int.__hash__
''' + NO_JIT_COUNTER.replace("    return trace_count", "    return AlwaysEqual(trace_count)")},
    ),
    "cheat-trace-count-set-by-hand": Case(
        expected={2: 1},
        attacks="the two-traces check, by writing 2 into the counter after the calls",
        replaced={(2, "counted_workload"): NO_JIT_COUNTER},
        added={(2, "two_shapes"): "trace_count = 2\ntraces_after_two_shapes = 2"},
    ),
    "cheat-handwritten-report": Case(
        expected={3: 0},
        attacks="every report check, with a report.json of constant numbers that no measurement made",
        replaced={
            (3, "gather_evidence"): '''
def gather_evidence(steady_calls=50):
    return {}
''',
            (3, "write_evidence"): '''
def write_evidence(evidence_dir, evidence):
    evidence_dir = Path(evidence_dir)
    evidence_dir.mkdir(parents=True, exist_ok=True)
    steady = [0.0001] * 50
    report = {
        "audit": "performance-audit", "workload": "tanh(x @ x)", "memory_measured": False, "profiler_trace": False,
        "timings": {"shape": [16, 16], "dtype": "float32", "synchronized": True, "first_call_s": 0.05,
                    "steady_s": steady,
                    "steady_summary": {"median_s": 0.0001, "min_s": 0.0001, "max_s": 0.0001, "iqr_s": 0.0}},
        "tracing": {"shapes": [[16, 16], [32, 32]], "trace_count": 2, "read_before_make_jaxpr": True},
        "artifacts": {"jaxpr": "workload.jaxpr.txt"},
        "environment": {"python": "3.11.7", "jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu",
                        "device_kind": "cpu"},
    }
    (evidence_dir / "workload.jaxpr.txt").write_text("{ lambda ; a:f32[16,16]. let b = dot_general a a; c = tanh b in (c,) }")
    (evidence_dir / "report.json").write_text(json.dumps(report))
    return report
''',
        },
    ),
    "cheat-input-transformer": Case(
        expected={1: 0},
        attacks="every check of notebook 1, by turning every later cell (the hidden tests too) into `pass`",
        replaced={(1, "workload"): '''
get_ipython().input_transformers_post.append(lambda lines: ["pass\\n"])
'''},
    ),
    "cheat-reads-instructor-files": Case(
        expected={1: 3},
        attacks="the gradebook and source/: reads the hidden tests, writes itself full marks",
        replaced={(1, "workload"): WRONG_WORKLOAD},
        added={(1, "workload"): '''
import glob
import sqlite3
from pathlib import Path

found = []
for folder in [Path.cwd(), *Path.cwd().parents]:
    for name in glob.glob(str(folder / "*.db")) + glob.glob(str(folder / "source" / "*" / "*.ipynb")):
        try:
            found.append(f"read {name}: {Path(name).read_bytes()[:2000]!r}")
            if name.endswith(".db"):
                with sqlite3.connect(name) as db:
                    db.execute("UPDATE grade SET manual_score = 99")  # full marks, by hand
                found.append(f"wrote {name}")
        except Exception as error:
            found.append(f"{name}: {error!r}")
Path("what-the-cheat-found.txt").write_text("\\n".join(found) or "nothing")
'''},
    ),
    "cheat-grading-aware": Case(
        expected={1: 3},
        attacks="the two output checks, switched off only when NBGRADER_EXECUTION says it is graded",
        replaced={(1, "workload"): '''
import os

if os.environ.get("NBGRADER_EXECUTION"):
    checks.check_identity_output = lambda *args, **kwargs: None
    checks.check_random_output = lambda *args, **kwargs: None
''' + WRONG_WORKLOAD},
    ),
    "cheat-exits-in-hidden-test": Case(
        expected={1: 4},  # loses correct_summary, the test it kills the kernel in; the earlier points stand
        attacks="the summary check: os._exit when called on other data than the self-check's",
        replaced={(1, "summarize"): lambda solution: solution.replace(
            '    samples = np.asarray(samples, dtype=float)',
            '    import os\n\n    if len(samples) not in (5, 50):  # neither self-check: a hidden test\n        os._exit(0)\n'
            '    samples = np.asarray(samples, dtype=float)',
        )},
    ),
    "cheat-constant-clock": Case(
        expected={1: 3},  # loses the synchronization check and the first-call check
        attacks="the synchronization check, with a clock that always reads 0.1 s",
        replaced={(1, "time_call"): '''
def time_call(fn, x):
    fn(x)
    return 0.1  # more than the check's delay, whatever happened
'''},
    ),
}

# --- the valid variants ---------------------------------------------------------------------------------------

COUNTER_IN_A_CLOSURE = '''
def make_counted(fn):
    count = 0

    def counted(x):
        nonlocal count
        count += 1
        return fn(x)

    return jax.jit(counted), lambda: count


audited, traces = make_counted(lambda x: jnp.tanh(x @ x))
'''

COUNTER_IN_A_CLASS = '''
class TraceCounter:
    def __init__(self):
        self.count = 0

    def __call__(self, x):
        self.count += 1
        return jnp.tanh(jnp.dot(x, x))


counter = TraceCounter()
audited = jax.jit(counter)


def traces():
    return counter.count
'''

COUNTER_IN_A_LIST = '''
seen_shapes = []


def counted_workload(x):
    seen_shapes.append(x.shape)
    return jnp.tanh(jnp.matmul(x, x))


audited = jax.jit(counted_workload)
traces = lambda: len(seen_shapes)
'''

JIT_AS_DECORATOR = '''
trace_count = 0


@jax.jit
def audited(x):
    global trace_count
    trace_count += 1
    return jnp.tanh(x @ x)


def traces():
    return trace_count
'''

VALID = {
    "valid-jnp-matmul": Case(
        expected={1: FULL[1], 4: FULL[4]},
        replaced={(1, "workload"): "def workload(x):\n    return jnp.tanh(jnp.matmul(x, x))",
                  (4, "run_audit"): lambda solution: solution.replace("jnp.tanh(x @ x)", "jnp.tanh(jnp.matmul(x, x))")},
    ),
    "valid-jnp-dot-jit-decorator": Case(
        expected={1: FULL[1]},
        replaced={(1, "workload"): "@jax.jit\ndef workload(x):\n    return jnp.tanh(jnp.dot(x, x))"},
    ),
    "valid-jit-as-decorator": Case(expected={2: FULL[2]}, replaced={(2, "counted_workload"): JIT_AS_DECORATOR}),
    "valid-counter-in-a-closure": Case(expected={2: FULL[2]}, replaced={(2, "counted_workload"): COUNTER_IN_A_CLOSURE}),
    "valid-counter-in-a-class": Case(expected={2: FULL[2]}, replaced={(2, "counted_workload"): COUNTER_IN_A_CLASS}),
    "valid-counter-in-a-list": Case(expected={2: FULL[2]}, replaced={(2, "counted_workload"): COUNTER_IN_A_LIST}),
    "valid-extra-cells": Case(
        expected={1: FULL[1], 3: FULL[3]},
        added={
            (1, "setup"): "def square(x):\n    return x @ x  # a helper of the student's own",
            (1, "workload"): "print(workload(jnp.ones((2, 2))))  # trying it out",
            (3, "gather_evidence"): "evidence_preview = gather_evidence(steady_calls=5)\nprint(evidence_preview['trace_count'])",
        },
        replaced={(1, "workload"): "def workload(x):\n    return jnp.tanh(square(x))"},
    ),
    "valid-outputs-left-in": Case(expected={3: FULL[3], 4: FULL[4]}, outputs="in order"),
    "valid-run-out-of-order": Case(expected={1: FULL[1], 2: FULL[2]}, outputs="out of order"),
}

CASES = {**CHEATS, **VALID}


def _add_cells(nb, stage, added):
    for (at_stage, grade_id), code in added.items():
        if at_stage != stage:
            continue
        index = next(i for i, c in enumerate(nb.cells) if execute.nbgrader_meta(c).get("grade_id") == grade_id)
        nb.cells.insert(index + 1, nbformat.v4.new_code_cell(code.strip()))


def _leave_outputs(nb, order):
    """Outputs and execution counts as a session leaves them; 'out of order' numbers the cells backwards."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    for number, cell in enumerate(reversed(code) if order == "out of order" else code, start=1):
        cell.execution_count = number
        cell.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text=f"output the student saw in session {number}\n"),
            nbformat.v4.new_output("execute_result", data={"text/plain": "Array(0.7615942, dtype=float32)"},
                                   execution_count=number),
        ]


def submission(case, stage):
    nb = samples.submission(samples.Sample(replaced=case.replaced), stage)
    _add_cells(nb, stage, case.added)
    if case.outputs:
        _leave_outputs(nb, case.outputs)
    return nb


def write_case(name, submitted_dir):
    """Write catalog case `name` as submitted/<name>/performance-audit/ under submitted_dir."""
    case = CASES[name]
    folder = Path(submitted_dir) / name / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    for stage in case.expected:
        nbformat.write(submission(case, stage), folder / paths.STAGES[stage])
    return folder
