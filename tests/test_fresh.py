"""Fresh processes beside an accelerator (perfaudit/fresh.py): they measure the CPU explicitly and say so.

CI has no accelerator: the parent's backend is given by name, with the values a TPU v5e showed (one process at a
time may hold it: a second one stopped with a libtpu lockfile error), and the fresh process really runs."""

import json
import subprocess
import sys

import pytest

from perfaudit import fresh, sweep


@pytest.mark.parametrize("parent, platform", [(None, None), ("cpu", None), ("tpu", "cpu"), ("gpu", "cpu"),
                                              ("cuda", "cpu"), ("rocm", "cpu"), ("some-new-backend", "cpu")])
def test_beside_an_accelerator_a_fresh_process_is_sent_to_the_cpu(parent, platform):
    assert fresh.platform_for_fresh_process(parent) == platform
    env = fresh.environment(parent, JAX_ENABLE_COMPILATION_CACHE="false")
    assert env["JAX_ENABLE_COMPILATION_CACHE"] == "false"
    if platform is None:
        assert env.get("JAX_PLATFORMS") == fresh.os.environ.get("JAX_PLATFORMS"), "the parent's own choice, untouched"
    else:
        assert env["JAX_PLATFORMS"] == "cpu"


def test_the_words_name_the_backend_measured_and_why_it_is_not_the_parents():
    assert fresh.measured_on("cpu", "cpu") == fresh.measured_on("cpu", None)
    assert fresh.measured_on("cpu", None) == "a fresh Python process on the cpu backend"
    words = fresh.measured_on("cpu", "tpu")
    assert words.startswith("a fresh Python process on the cpu backend, not the tpu: this process holds the tpu")


def test_a_fresh_process_beside_a_tpu_measures_the_cpu_and_reports_it():
    done = subprocess.run([sys.executable, "-m", "perfaudit.decompose"], capture_output=True, text=True, check=True,
                          env=fresh.environment("tpu"))
    warm_up = json.loads(done.stdout)
    assert warm_up["backend"] == "cpu" and warm_up["first_lower_s"] > 0


def test_the_sweeps_table_and_chart_name_a_backend_other_than_the_rows():
    rows = [{"n": 16, "backend": "tpu", "flops": 8192, "synchronized_s": 5e-4, "unsynchronized_s": 1.3e-4,
             "in_loop_s": 1e-5, "calls": 50, "loop_length": 1220, "ready_on_return": 0.0}]
    off = [{**rows[0], "backend": "cpu", "synchronized_s": 2e-5}]
    assert "sync, async off us (cpu)" in sweep.table(rows, off).splitlines()[0]
    same = [{**off[0], "backend": "tpu"}]
    assert sweep.table(rows, same).splitlines()[0].endswith("sync, async off us")
