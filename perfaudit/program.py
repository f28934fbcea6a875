"""The program at each stage, and what XLA's cost model says about it.

JAX traces Python into a JAXPR, lowers the JAXPR to StableHLO, and XLA compiles StableHLO, after its own
optimizations, into the program that runs: `compiled.as_text()` is that optimized HLO. On CPU, for tanh(x @ x), it
runs two fusions: the matrix product in one handed to a library kernel (kind=kCustom), and tanh in a loop fusion of
its own (kind=kLoop); `fusions` lists them. The JAXPR is not the program that runs.

`compiled.cost_analysis()` is XLA's static cost model of the optimized program: counts under its own
conventions, not a measurement (JAX's ahead-of-time page calls it "not a reliably programmable API").
"""

import re

import jax

_HEADER_BLOCKS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_METADATA = re.compile(r", metadata=\{[^{}]*\}")
_COMPUTATION = re.compile(r"^(ENTRY )?%(\S+) \(.*\{$")  # `%name (params) -> type {`, or ENTRY's
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%(\S+) = .*? ([a-z][\w-]*)\(")  # `%name = type opcode(`


def stages(fn, x):
    """{jaxpr, stablehlo, optimized_hlo} texts of jax.jit(fn) at x, and the compiled executable."""
    lowered = jax.jit(fn).lower(x)
    executable = lowered.compile()
    texts = {
        "jaxpr": str(jax.make_jaxpr(fn)(x)),
        "stablehlo": lowered.as_text(),
        "optimized_hlo": optimized_hlo(executable.as_text()),
    }
    return texts, executable


def optimized_hlo(text):
    """compiled.as_text() without its source-location tables and per-instruction metadata: the computations."""
    kept, skipping = [], False
    for line in text.splitlines():
        if line.strip() in _HEADER_BLOCKS:
            skipping = True
        elif skipping and not line.strip():
            skipping = False
            continue
        if not skipping:
            kept.append(_METADATA.sub("", line))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip() + "\n"


def fusions(hlo_text):
    """The fusions the optimized HLO's entry computation runs, in order: [(name, kind, [operations])], where kind
    is XLA's (kLoop: a loop XLA writes itself; kCustom: a call into a kernel XLA did not write, such as a library
    matrix product) and the operations are those of the computation the fusion calls, parameters left out."""
    computations, entry, current = {}, None, None
    for line in hlo_text.splitlines():
        header = _COMPUTATION.match(line)
        if header:
            current = header[2]
            computations[current] = []
            entry = current if header[1] else entry
        elif line.strip() == "}":
            current = None
        elif current and (instruction := _INSTRUCTION.match(line)):
            computations[current].append((instruction[1], instruction[2], line))
    found = []
    for name, opcode, line in computations.get(entry, []):
        if opcode == "fusion":
            kind, calls = re.search(r"\bkind=(\w+)", line), re.search(r"\bcalls=%([\w.-]+)", line)
            operations = [op for _, op, _ in computations.get(calls[1] if calls else None, []) if op != "parameter"]
            found.append((name, kind[1] if kind else None, operations))
    return found


def cost_model(cost, n):
    """XLA's counts for tanh(x @ x) at n x n (from compiled.cost_analysis()) beside the exact arithmetic, and the
    arithmetic intensity both ways (flops per byte)."""
    flops, transcendentals = float(cost.get("flops", 0.0)), float(cost.get("transcendentals", 0.0))
    bytes_model = float(cost.get("bytes accessed", 0.0))
    bytes_minimum = 2 * n * n * 4  # x read once, the result written once (float32)
    return {
        "flops": flops,
        "flops_closed_form": 2 * n**3,  # a multiply-add counts 2
        "flops_exact": 2 * n**3 - n**2,  # n^2 dot products of n multiplies and n - 1 adds
        "transcendentals": transcendentals,  # each tanh counts one, and none of its flops
        "bytes_accessed": bytes_model,  # each operation's reads and writes added up: no cache in the model
        "bytes_minimum": bytes_minimum,
        "intensity_model": flops / bytes_model if bytes_model else float("nan"),
        "intensity_minimum": 2 * n**3 / bytes_minimum,
    }
