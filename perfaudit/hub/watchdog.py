"""python -m perfaudit.hub.watchdog: each student's memory in total, kept under their share (a hub service, as root).

rlimits (perfaudit/hub/server_limits.py) cap each process; a student who starts several kernels could still take several
times the limit. Where no systemd slice or cgroup counts a person's total, this service does, as a cgroup's memory
limit would: every few seconds it adds up the resident memory of each student's processes, and when a student is
over their share it stops that student's largest process (a kernel, whose JupyterLab then says it died and restarts
it), never their server's own, and never another account's. Each stop is one line of the hub's log. With --exchange,
it keeps each student's bytes in the exchange under --disk as well, where no user quota does
(perfaudit/hub/exchange_share.py).

    python -m perfaudit.hub.watchdog GROUP --memory 2G [--exchange /srv/nbgrader/exchange --disk 1G] [--every 2]
"""

import argparse
import grp
import pwd
import sys
import time
from collections.abc import Iterable

import psutil

from perfaudit.hub import exchange_share
from perfaudit.hub.server_limits import parse_bytes

SERVER = "jupyterhub.singleuser"  # a person's JupyterLab: what the hub started; their kernels are its children


def members(group: str) -> list[str]:
    try:
        return sorted(grp.getgrnam(group).gr_mem)
    except KeyError:
        return []


def processes_of(uid: int) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["uids", "cmdline", "memory_info"])
            if p.info["uids"] and p.info["uids"].real == uid and p.info["memory_info"] is not None]


def enforce(accounts: Iterable[str], budget: int) -> list[str]:
    """Stop, for each account over budget (resident bytes of all its processes), its largest process but its
    server, until it is under (or only its server is left). Returns what was done, one line each."""
    said = []
    for account in accounts:
        try:
            uid = pwd.getpwnam(account).pw_uid
        except KeyError:
            continue
        running = processes_of(uid)
        total = sum(p.info["memory_info"].rss for p in running)
        victims = sorted((p for p in running if SERVER not in " ".join(p.info["cmdline"] or [])),
                         key=lambda p: p.info["memory_info"].rss, reverse=True)
        for process in victims:
            if total <= budget:
                break
            rss = process.info["memory_info"].rss
            try:
                process.kill()
            except psutil.NoSuchProcess:
                continue
            said.append(f"stopped {account}'s process {process.pid} ({' '.join(process.info['cmdline'] or [])[:80]},"
                        f" {rss // 2**20} MB): {account}'s processes held {total // 2**20} MB, over the "
                        f"{budget // 2**20} MB each student may have")
            total -= rss
    return said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perfaudit.hub.watchdog", description=__doc__.splitlines()[0])
    parser.add_argument("group", help="the students' group (nbgrader-<course id>)")
    parser.add_argument("--memory", required=True, help="each student's share, e.g. 2G")
    parser.add_argument("--exchange", help="nbgrader's exchange: each student's bytes there kept under --disk")
    parser.add_argument("--disk", help="each student's share of the exchange, e.g. 1G (with --exchange)")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between two looks (default 2)")
    args = parser.parse_args(argv)
    budget = parse_bytes(args.memory)
    if bool(args.exchange) != bool(args.disk):
        parser.error("--exchange and --disk go together")
    share = parse_bytes(args.disk) if args.disk else 0
    while True:
        students = members(args.group)
        said = enforce(students, budget)
        if args.exchange:
            try:
                said += exchange_share.enforce(students, args.exchange, share, SERVER)
            except Exception as error:  # noqa: BLE001 - whatever a student left there, memory is still kept
                said.append(f"the exchange's shares were not looked at this time: {type(error).__name__}: "
                            f"{str(error)[:200]}")
        for line in said:
            print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}", flush=True)
        time.sleep(args.every)


if __name__ == "__main__":
    sys.exit(main())
