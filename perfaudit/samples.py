"""Sample submissions, built from the student release and the instructor's solutions.

A sample is named by what it is. It lists the stages whose solution cells hold the instructor's
solution and, for some cells, other code a student might write; every other solution cell keeps the
release's stub, as an untouched notebook would. Building samples from the notebooks themselves keeps
them in step with any change to source/.
"""

import copy
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


# Submissions with one thing wrong, for batch grading: each is named by what goes wrong and where.
# `stages` are the notebooks it holds (the instructor's solutions, changed by `replaced`); `damage`
# then breaks the written files the way students and LMS downloads do.


def _prefixed(code):
    return lambda solution: f"{code.strip()}\n\n{solution}"


def _drop_cell(grade_id):
    def damage(nb):
        nb.cells = [c for c in nb.cells if execute.nbgrader_meta(c).get("grade_id") != grade_id]
    return damage


def _duplicate_at_end(grade_id):
    def damage(nb):
        original = next(c for c in nb.cells if execute.nbgrader_meta(c).get("grade_id") == grade_id)
        duplicate = copy.deepcopy(original)
        duplicate.id = f"{original.id}-copy"  # a copy pasted in JupyterLab gets a new cell id, the same metadata
        nb.cells.append(duplicate)
    return damage


def _split_before_def(grade_id):
    """What JupyterLab's 'split cell' makes: two consecutive cells, both carrying the original's metadata."""
    def damage(nb):
        index = next(i for i, c in enumerate(nb.cells) if execute.nbgrader_meta(c).get("grade_id") == grade_id)
        lines = nb.cells[index].source.splitlines()
        cut = next(i for i, line in enumerate(lines) if line.startswith("def ") and i > 0)
        second = copy.deepcopy(nb.cells[index])
        second.source = "\n".join(lines[cut:])
        second.id = f"{nb.cells[index].id}-split"
        nb.cells[index].source = "\n".join(lines[:cut])
        nb.cells.insert(index + 1, second)
    return damage


@dataclass(frozen=True)
class Broken:
    stages: tuple
    replaced: dict = field(default_factory=dict)
    damage: dict = field(default_factory=dict)  # {stage: function(notebook) changing it in place}
    file_names: dict = field(default_factory=dict)  # {stage: the name it is submitted under}
    truncated: tuple = ()  # stages whose file is cut in half: malformed JSON


BROKEN = {
    "kernel-dies-in-02-after-3-points": Broken(
        stages=(1, 2), replaced={(2, "jaxpr_text"): _prefixed("import os\nos._exit(1)  # the kernel process exits")}
    ),
    "hangs-in-01-ignoring-interrupts": Broken(stages=(1, 2), replaced={(1, "summarize"): _prefixed(
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    )}),
    # Asks for 4 GiB: fine on most machines, over a 3 GiB grading limit.
    "out-of-memory-in-01": Broken(stages=(1, 2), replaced={(1, "summarize"): _prefixed("_hog = bytearray(4 * 2**30)")}),
    "malformed-json-in-03": Broken(stages=(2, 3), truncated=(3,)),
    "deleted-test-cell-in-02": Broken(stages=(2,), damage={2: _drop_cell("one_trace_per_new_shape")}),
    "duplicated-test-cell-in-01": Broken(stages=(1,), damage={1: _duplicate_at_end("correct_random_output")}),
    "split-solution-cell-in-02": Broken(stages=(2,), damage={2: _split_before_def("counted_workload")}),
    "misnamed-02": Broken(stages=(2,), file_names={2: "02-retracing (1).ipynb"}),
    "empty-submission": Broken(stages=()),
}


def write_broken(name, submitted_dir):
    """Write broken submission `name` as submitted/<name>/performance-audit/ under submitted_dir."""
    broken = BROKEN[name]
    folder = Path(submitted_dir) / name / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    sample = Sample(replaced=broken.replaced)
    for stage in broken.stages:
        nb = submission(sample, stage)
        if stage in broken.damage:
            broken.damage[stage](nb)
        path = folder / broken.file_names.get(stage, paths.STAGES[stage])
        nbformat.write(nb, path)
        if stage in broken.truncated:
            data = path.read_bytes()
            path.write_bytes(data[: len(data) // 2])
    return folder
