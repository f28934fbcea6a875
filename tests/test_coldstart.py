"""The first call made precise (perfaudit/coldstart.py): what needs a fresh process, and how runs are shown."""

import subprocess
import sys

import pytest

from perfaudit import coldstart


def test_a_process_waiting_for_its_turn_measures_nothing_when_no_turn_comes():
    done = subprocess.run([sys.executable, "-m", "perfaudit.coldstart", "--wait"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout.split() == [coldstart.READY], done.stderr


def test_measuring_a_cold_start_needs_a_process_without_jax():
    with pytest.raises(RuntimeError, match="has not imported JAX"):
        coldstart.measure()


def _part(first, hits, misses):
    return {"first_call_s": first, "trace_s": first / 10, "lower_s": first / 5, "compile_s": first / 2,
            "cache_hits": hits, "cache_misses": misses}


def test_each_run_s_cold_starts_are_a_line_in_milliseconds():
    lines = coldstart.table({"plain": {"cold_process": _part(0.5, 0, 0), "cold_function": _part(0.25, 0, 0)},
                             "cache": {"cold_process": _part(0.125, 1, 0)}}).splitlines()
    assert lines[0].split() == ["milliseconds", "first", "call", "trace", "lower", "compile", "cache", "hits,",
                                "misses"]
    assert [line.split() for line in lines[1:]] == [
        ["plain,", "cold", "process", "500.0", "50.0", "100.0", "250.0", "0,", "0"],
        ["plain,", "cold", "function", "250.0", "25.0", "50.0", "125.0", "0,", "0"],
        ["cache,", "cold", "process", "125.0", "12.5", "25.0", "62.5", "1,", "0"]]
