"""Every submission the service has seen and what became of it: one JSON file beside the gradebook.

Keyed by the submission's folder name in the exchange's inbound (`<student>+<assignment>+<timestamp>+<random>`),
which nbgrader makes unique per submission. Each change is written at once, to a temporary file then moved over
the old one (os.replace), so a service killed at any moment leaves either the old ledger or the new one. A
submission is written as graded only after its scores are in the gradebook and its feedback released: a restart
grades again only what was grading when the service stopped, and never one whose result was written.
"""

import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfaudit.bookkeeping import statefolder

FILE_SUFFIX = ".serve.json"  # beside a sqlite gradebook: gradebook.db.serve.json
STATES = ("queued", "grading", "graded", "limited", "failed", "refused", "skipped")


def path_for(db_url: str, autograded_dir: str | Path) -> Path:
    """Beside a sqlite gradebook file; for another database, in the batch state folder with the batch's records."""
    return statefolder.beside_gradebook(db_url, autograded_dir, FILE_SUFFIX, f"serve{FILE_SUFFIX}")


class Ledger:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        data = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.submissions: dict[str, dict[str, Any]] = data.get("submissions", {})  # {inbound folder name: record}
        self.paused: str | None = data.get("paused")  # why grading stopped (an environment fault), or None
        self.paused_for_disk: bool = data.get("paused_for_disk", False)  # a full disk: it goes on once there is room
        # What the hub's limits service did to a student (perfaudit/serve/limits_notes.py), told on their next page:
        # {note's name: {"student", "said", "at", "told"}}
        self.notes: dict[str, dict[str, Any]] = data.get("notes", {})

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        # The course owner's alone (0600), whatever the umask: it names every submission's inbound folder, whose
        # random part is all that keeps a classmate from reading it.
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
            os.fchmod(handle.fileno(), 0o600)
            json.dump({"submissions": self.submissions, "paused": self.paused, "paused_for_disk": self.paused_for_disk,
                       "notes": self.notes}, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)

    def update(self, name: str, **fields: Any) -> None:
        self.submissions[name].update(fields)
        self.save()

    def of_student(self, student: str) -> list[dict[str, Any]]:
        return [r for r in self.submissions.values() if r["student"] == student]

    def fairly_queued(self, now: float, window_s: float) -> list[str]:
        """The queued submissions, those of students whose gradings took the least time in the last window_s first,
        then oldest first: a student whose submissions sleep or loop until their time limits goes behind the
        classmates waiting, not before them (a grading still running counts until now)."""
        since, used = now - window_s, dict[str, float]()
        for record in self.submissions.values():
            if record.get("started_at") is not None:
                # one graded again (after a restart) keeps its earlier released_at: while grading, it counts till now
                ended = now if record["status"] == "grading" else min(record.get("released_at") or now, now)
                used[record["student"]] = used.get(record["student"], 0.0) + max(
                    0.0, ended - max(record["started_at"], since))
        return sorted(self.in_state("queued"), key=lambda name: used.get(self.submissions[name]["student"], 0.0))

    def in_state(self, *states: str) -> list[str]:
        return sorted((name for name, r in self.submissions.items() if r["status"] in states),
                      key=lambda name: (self.submissions[name]["seen_at"], name))


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of values (sorted or not): the smallest value with that fraction at or below it."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))  # ceil without float drift for small lists
    return ordered[int(rank) - 1]


def status_lines(ledger: Ledger, now: float | None = None) -> list[str]:
    """What `python -m perfaudit.serve --status` prints: counts, what is in hand, submit-to-feedback times."""
    now = time.time() if now is None else now
    records = list(ledger.submissions.values())
    counts = {state: sum(1 for r in records if r["status"] == state) for state in STATES}
    lines = ["submissions: " + ", ".join(f"{state} {counts[state]}" for state in STATES)]
    if ledger.paused:
        lines.append(f"GRADING STOPPED (an environment fault; students are told 'not graded yet: the grader is being "
                     f"repaired'): {ledger.paused}. Repair it and restart the service: it grades them then.")
    for name in sorted(n for n, r in ledger.submissions.items() if r["status"] in ("queued", "grading")):
        record = ledger.submissions[name]
        lines.append(f"  {record['status']:<8} {record['student']} waiting {now - record['seen_at']:.0f} s ({name})")
    for name in ledger.in_state("skipped"):
        record = ledger.submissions[name]
        lines.append(f"  skipped  {record['student']}: {record['why']} ({name!r})")
    waits = [r["released_at"] - r["submitted_at_s"] for r in records if r.get("released_at")]
    graded = [r["released_at"] - r["submitted_at_s"] for r in records if r.get("released_at") and
              r["status"] == "graded"]
    for label, values in (("all feedback", waits), ("graded", graded)):
        if values:
            lines.append(f"submit -> feedback, {label} ({len(values)}): median {statistics.median(values):.1f} s, "
                         f"95th percentile {percentile(values, 0.95):.1f} s")
        else:
            lines.append(f"submit -> feedback, {label}: none released yet")
    return lines
