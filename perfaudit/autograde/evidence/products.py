"""What each ahead-of-time stage of JAX made, as a short fingerprint: the grader's jit sends it with the stage's hold.

The kernel-side stand-in (instruments.py) fingerprints the object JAX's stage returned (the Traced, Lowered and
Compiled objects) and sends that with the prompt that asks the grader to hold the stage; the grader makes the same
chain of the same computation itself, once per check, and counts a prompt as a stage only when the fingerprints
agree (perfaudit/autograde/evidence/measured.py, check_time_stages). A prompt sent without JAX's stage carries nothing
that matches. What is fingerprinted is what the stage decides, left as JAX makes it for any honest chain of it:
- trace: the JAXPR, its variables renamed in order (checks.jaxpr_canonical), less the matmul precision (a setting
  of the student's process);
- lower: the StableHLO module's operations and the function's tensor types, less names, attributes (a committed
  input's sharding) and the matmul precision;
- compile: the compiled program's entry layouts (`entry_computation_layout`), which the compiler decides, with the
  lowering it compiled: the rest of its text holds source locations and, on a GPU, kernels autotuned differently
  by two processes.
This module runs in the student's process (the stand-in) and in the grader; nothing here is trusted as a verdict.
"""

import functools
import hashlib
import re
from typing import Any

from perfaudit.checks.traces import jaxpr_canonical

STAGES = ("trace", "lower", "compile")
NONE = "-"  # no fingerprint: the object is not what JAX's stage returns
FINGERPRINT_CHARS = 16
_TENSOR = re.compile(r"tensor<[^>]*>")
_PRECISION = re.compile(r",?\s*precision = \[[^\]]*\]")
_LAYOUT = re.compile(r"entry_computation_layout=\{(.*?)\}(?:, |$)")


def _jaxpr(traced: Any) -> str:
    program = []
    for kinds, primitive, params, operands in jaxpr_canonical(traced.jaxpr.pretty_print(use_color=False)):
        kept = " ".join(p for p in re.split(r"\s(?=\w+=)", params) if not p.startswith("precision="))
        program.append((kinds, primitive, kept, operands))
    return repr(program) if program else ""


def _stablehlo(lowered: Any) -> str:
    kept = []
    for line in lowered.as_text().splitlines():
        line = line.strip()
        if line.startswith("func.func"):
            kept.append("func " + " ".join(_TENSOR.findall(line)))
        elif line.startswith("return") or ("stablehlo." in line and not line.startswith(("sdy.", "module"))):
            kept.append(_PRECISION.sub("", line))
    return "\n".join(kept)


def _layouts(compiled: Any) -> str:
    found = _LAYOUT.search(compiled.as_text().split("\n", 1)[0])
    return found.group(1) if found else ""


def fingerprint(stage: str, value: Any, lowered: Any = None) -> str:
    """FINGERPRINT_CHARS hex digits of what stage made (value: the Traced, Lowered or Compiled object; for compile,
    lowered: the Lowered object it compiled), or NONE."""
    try:
        if stage == "compile":
            text = f"{_layouts(value)}\n{_stablehlo(lowered)}" if _layouts(value) else ""
        else:
            text = {"trace": _jaxpr, "lower": _stablehlo}[stage](value)
    except Exception:  # noqa: BLE001 - anything but JAX's object: no fingerprint
        return NONE
    return hashlib.sha256(f"{stage}\n{text}".encode()).hexdigest()[:FINGERPRINT_CHARS] if text else NONE


@functools.lru_cache(maxsize=8)
def expected(shape: tuple[int, ...], dtype: str) -> dict[str, str]:
    """{stage: fingerprint} of the grader's own trace, lowering and compile of tanh(x @ x) at shape and dtype (a
    new function each time, so that nothing comes from a cache); once per key in the grader's process."""
    # JAX lazily: the stand-in imports this module in the kernel, and the batch grader's import loads no JAX
    import jax
    import jax.numpy as jnp

    def workload(x):
        return jnp.tanh(x @ x)

    traced = jax.jit(workload).trace(jax.ShapeDtypeStruct(shape, dtype))
    lowered = traced.lower()
    return {"trace": fingerprint("trace", traced), "lower": fingerprint("lower", lowered),
            "compile": fingerprint("compile", lowered.compile(), lowered)}
