"""Where student code runs: a kernel in bubblewrap, within one submission's limits.

boundary.py    the trust boundary: what the sandbox may touch, and the one place the grader reaches in
kernel.py      the kernel manager: bubblewrap, a scratch folder in memory, raw output captured, memory limit
cgroupfs.py    where this process's cgroups are mounted, and its group in each (memory.py, the hub's person groups)
kernel_fate.py whose doing a kernel's end was, and whether its notebook runs once more (both graders)
sandbox.py     the bubblewrap command line and its refusal without a sandbox
limits.py      SandboxLimits: the one Configurable for a submission's limits
memory.py      all of a submission's processes within one memory limit (a cgroup, or a watchdog)
oomlog.py      the kernel log's OOM kills: which process the machine's OOM killer chose, and why
proctree.py    a process tree as /proc shows it, for the memory watchdog
submission.py  a submitted folder may hold regular files only; the grader reads it here and nowhere else
syscalls.py    the system calls student code may not make (the kernel's keyrings): a seccomp filter
"""
