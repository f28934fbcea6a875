"""The limits on one submission's student code (perfaudit/autograde/isolation/limits.py): set by configuration, never
above this process's own hard limits."""

import resource
import subprocess
import sys

from traitlets.config import Config

from perfaudit.autograde.isolation.limits import SandboxLimits


def test_configured_limits_become_rlimits_and_the_description():
    limits = SandboxLimits(config=Config({"SandboxLimits": {"memory_mb": 1024, "cpu_s": 60}}))
    found = dict(limits.rlimits())
    assert limits.describe().startswith("1024 MB memory for all processes together, 60 s CPU")
    hard_cpu = resource.getrlimit(resource.RLIMIT_CPU)[1]
    assert found[resource.RLIMIT_CPU] == (60 if hard_cpu == resource.RLIM_INFINITY else min(60, hard_cpu))
    assert found[resource.RLIMIT_AS] <= 1024 * 2**20


def test_a_limit_never_rises_above_this_process_s_hard_limit():
    # in a process of its own: a lowered hard limit cannot be raised again
    code = ("import resource; from traitlets.config import Config; from perfaudit.autograde.isolation.limits import "
            "SandboxLimits; resource.setrlimit(resource.RLIMIT_FSIZE, (2**20, 2**20)); "
            "print(dict(SandboxLimits(config=Config({'SandboxLimits': {'file_mb': 256}})).rlimits())"
            "[resource.RLIMIT_FSIZE])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == f"{2**20}\n"
