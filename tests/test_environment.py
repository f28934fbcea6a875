"""What a first-call audit depends on, read from this process (perfaudit/environment.py)."""

import jax
import numpy as np

from perfaudit import environment


def test_environment_records_the_cache_dispatch_flags_and_cpus(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_thunk_runtime=true")
    jax.config.update("jax_enable_compilation_cache", False)  # as the notebooks' setup does
    described = environment.describe()
    assert described["persistent_compilation_cache"] is False
    assert described["compilation_cache_dir"] is None
    assert described["cpu_async_dispatch"] is True
    assert described["xla_flags"] == "--xla_cpu_use_thunk_runtime=true"
    assert described["cpu_count"] >= 1
    assert set(described["cpu_affinity"]) <= set(range(described["cpu_count"]))


def test_reproducibility_names_the_versions_settings_and_variables_at_measuring_time(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_thunk_runtime=true")
    monkeypatch.setenv("JAX_TRACEBACK_FILTERING", "off")
    monkeypatch.setenv("NOT_JAX_SETTING", "1")
    found = environment.reproducibility()
    assert found["numpy"] == np.__version__ and found["os"] and found["timestamp_utc"].endswith("Z")
    assert found["matmul_precision"] == jax.config.jax_default_matmul_precision
    assert found["environment_variables"] == {**{k: v for k, v in found["environment_variables"].items()
                                                 if k.startswith("JAX_")},
                                              "XLA_FLAGS": "--xla_cpu_use_thunk_runtime=true"}
    assert found["environment_variables"]["JAX_TRACEBACK_FILTERING"] == "off"
