"""The kernel log's OOM kills: the machine's own record of which process its OOM killer chose, and why (the whole
machine's memory, or a memory group's limit). perfaudit/autograde/isolation/memory.py reads it to tell a kill from
outside a submission from a death of its own."""

import os
import re
import time

KMSG = "/dev/kmsg"  # the kernel log, one record per read(2): readable by root, or where dmesg_restrict is 0
KMSG_RECORDS = 100_000  # at most this many records read: the log's ring is bounded, this bounds the time as well


def monotonic_us() -> int:
    """Now, on the kernel log's clock (microseconds since boot, not counting suspend)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def _oom_kill_fields(message: str) -> dict[str, str] | None:
    """The fields of a kernel log line about an OOM kill, or None: the 'oom-kill:' line (constraint, oom_memcg,
    task_memcg, pid, global_oom) or, on older kernels, the machine's 'Out of memory: Killed process <pid>'."""
    if message.startswith("oom-kill:"):
        fields = {}
        for item in message[len("oom-kill:"):].strip().split(","):
            key, _, value = item.partition("=")
            fields[key] = value
        return fields
    found = re.match(r"Out of memory: Killed process (\d+)", message)
    return {"pid": found[1], "global_oom": ""} if found else None


def kernel_oom_kills(since_us: int) -> list[dict[str, str]]:
    """The OOM kills the kernel logged since `since_us` (monotonic_us), each as _oom_kill_fields; [] where the log
    cannot be read (no permission, no /dev/kmsg)."""
    try:
        fd = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    found = []
    try:
        for _ in range(KMSG_RECORDS):
            try:
                record = os.read(fd, 8192).decode(errors="replace")
            except BrokenPipeError:  # the oldest records were overwritten while read: the next one is there
                continue
            except OSError:  # EAGAIN: the end of the log
                break
            head, _, message = record.partition(";")
            stamp = head.split(",")[2] if head.count(",") >= 2 else ""
            if stamp.isdigit() and int(stamp) >= since_us:
                fields = _oom_kill_fields(message.strip())
                if fields is not None:
                    found.append(fields)
    finally:
        os.close(fd)
    return found
