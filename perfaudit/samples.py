"""Sample submissions, built from the student release and the instructor's solutions.

A sample is named by what it is. It lists the stages whose solution cells hold the instructor's
solution and, for some cells, other code a student might write; every other solution cell keeps the
release's stub, as an untouched notebook would. Building samples from the notebooks themselves keeps
them in step with any change to source/.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from perfaudit import ASSIGNMENT, execute, paths

ALL_STAGES = frozenset(paths.STAGES)


@dataclass(frozen=True)
class Sample:
    solved: frozenset = ALL_STAGES
    # {(stage, grade_id): code, or a function from the instructor's solution code to the submitted code}
    replaced: dict = field(default_factory=dict)


SAMPLES = {
    "correct": Sample(),
    "untouched": Sample(solved=frozenset()),
    "partly-right": Sample(solved=frozenset({1, 2})),
    "stage1-hardcoded-identity": Sample(replaced={(1, "workload"): '''
def workload(x):
    # Hard-coded: right for the identity only.
    return np.where(np.eye(x.shape[0]) == 1, 0.7615941559557649, 0.0).astype(np.float32)
'''}),
    "stage1-unsynchronized-clock": Sample(replaced={(1, "time_call"): '''
def time_call(fn, x):
    start = time.perf_counter()
    fn(x)  # forgot block_until_ready: stops the clock when the work is queued
    return time.perf_counter() - start
'''}),
    "stage2-forgot-jit": Sample(replaced={(2, "counted_workload"): '''
trace_count = 0


def counted_workload(x):
    global trace_count
    trace_count += 1
    return jnp.tanh(x @ x)


audited = counted_workload  # forgot jax.jit: the body runs on every call


def traces():
    return trace_count
'''}),
    # The instructor's report, claiming a memory measurement that never happened.
    "stage3-memory-claimed": Sample(replaced={(3, "write_evidence"): lambda solution: solution.replace(
        '"memory_measured": False', '"memory_measured": True'
    )}),
    # Going further: counts a multiply-add as one operation.
    "stage4-flops-forgot-factor-two": Sample(replaced={(4, "expected_cost"): '''
def expected_cost(n):
    return {"flops": n**3, "transcendentals": n**2}
'''}),
}

_SOLUTION_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


def instructor_solution(source_cell):
    """The instructor's cell as a student would submit it: the solution markers removed."""
    return "\n".join(line for line in source_cell.source.splitlines() if not _SOLUTION_MARKER.match(line))


def _solution_cells(nb):
    return {execute.nbgrader_meta(c)["grade_id"]: c for c in nb.cells if execute.nbgrader_meta(c).get("solution")}


def submission(sample, stage):
    """The notebook this sample submits for one stage."""
    release = execute.read(paths.RELEASE / paths.STAGES[stage])
    source_cells = _solution_cells(execute.read(paths.SOURCE / paths.STAGES[stage]))
    for grade_id, cell in _solution_cells(release).items():
        code = sample.replaced.get((stage, grade_id))
        if callable(code):
            cell.source = code(instructor_solution(source_cells[grade_id]))
        elif code is not None:
            cell.source = code.strip()
        elif stage in sample.solved:
            cell.source = instructor_solution(source_cells[grade_id])
    return release


def write_submission(name, submitted_dir):
    """Write sample `name` as submitted/<name>/performance-audit/*.ipynb under submitted_dir."""
    folder = Path(submitted_dir) / name / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    for stage, filename in paths.STAGES.items():
        nbformat.write(submission(SAMPLES[name], stage), folder / filename)
    return folder
