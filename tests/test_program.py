"""Notebook 4, going further continued: the program at each stage, the cost model, cold starts in fresh processes.

Relations and structure only, never an absolute time.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit import coldstart, program

N = 16


def workload(x):
    return jnp.tanh(x @ x)


@pytest.fixture(scope="module")
def x16():
    return jax.device_put(np.eye(N, dtype=np.float32))


def test_three_stages_of_the_program(x16):
    texts, compiled = program.stages(workload, x16)
    assert "dot_general" in texts["jaxpr"] and "tanh" in texts["jaxpr"]
    assert "stablehlo.dot_general" in texts["stablehlo"] and "stablehlo.tanh" in texts["stablehlo"]
    hlo = texts["optimized_hlo"]
    assert hlo.startswith("HloModule") and "ENTRY" in hlo and "tanh(" in hlo and "fusion(" in hlo
    assert "metadata=" not in hlo and "StackFrames" not in hlo, "source locations are left out"
    assert "fusion" not in texts["jaxpr"], "the JAXPR is not the optimized program"


def test_the_matrix_product_and_tanh_run_in_fusions_of_their_own(x16):
    # Notebook 4: XLA does not fuse tanh into the matrix product; on CPU the product goes to a library kernel.
    found = program.fusions(jax.jit(workload).lower(x16).compile().as_text())
    (with_dot,) = [fusion for fusion in found if "dot" in fusion[2]]
    (with_tanh,) = [fusion for fusion in found if "tanh" in fusion[2]]
    assert "tanh" not in with_dot[2] and "dot" not in with_tanh[2], found
    if jax.default_backend() == "cpu":
        assert with_dot[1] == "kCustom" and with_tanh[1] == "kLoop", found


def test_cost_model_states_its_conventions(x16):
    _, compiled = program.stages(workload, x16)
    model = program.cost_model(compiled.cost_analysis(), N)
    assert model["flops"] == model["flops_closed_form"] == 2 * N**3 > model["flops_exact"] == 2 * N**3 - N**2
    assert model["transcendentals"] == N**2
    assert model["bytes_accessed"] >= model["bytes_minimum"] == 2 * N * N * 4
    assert model["intensity_model"] <= model["intensity_minimum"] == N / 4


def test_a_persistent_cache_turns_a_second_process_compile_into_a_load(tmp_path):
    # Started together, measured one after the other: the second process finds what the first one wrote.
    plain, first, second = coldstart.in_fresh_processes([None, tmp_path, tmp_path])
    assert plain["persistent_cache_dir"] is None
    for kind in ("cold_process", "cold_function"):
        assert plain[kind]["cache_hits"] == plain[kind]["cache_misses"] == 0, "no cache, no cache events"
        assert all(plain[kind][part] > 0 for part in ("first_call_s", "trace_s", "lower_s", "compile_s"))
    assert first["cold_process"]["cache_misses"] == 1 and first["cold_process"]["cache_hits"] == 0
    assert first["cold_function"]["cache_hits"] == 1, "after clear_caches the same process loads it from disk"
    assert second["cold_process"]["cache_hits"] == 1
    assert second["cold_process"]["compile_s"] < first["cold_process"]["compile_s"], "a load, not a compile"
    assert any(tmp_path.iterdir()), "the first process wrote the cache"
    table = coldstart.table({"plain": plain, "cache": second}).splitlines()
    assert len(table) == 5 and "cache hits" in table[0]


def test_one_fresh_process_measures_a_cold_start_on_its_own():
    run = coldstart.in_fresh_process()
    assert run["persistent_cache_dir"] is None and run["import_s"] > 0
    assert run["cold_process"]["first_call_s"] > 0 and run["cold_function"]["first_call_s"] > 0
