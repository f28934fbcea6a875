"""Where grading keeps its own files: the batch state folder, and the records kept beside a sqlite gradebook.

The batch state folder is autograded/.batch-grading/: a dot folder, so nbgrader's globs (autograded/*/<assignment>)
skip it. It holds each student's state (the fingerprint of the submitted files and the reasons, <student>.json),
the record behind every grade (records.jsonl), the kept scores before a regrade (history/), the workers' logs.
Records that belong with the gradebook (the environment check, the versions, the service's ledger) sit beside a
sqlite gradebook file (gradebook.db.versions.json); for another database, in the batch state folder. This module
alone knows these places: the batch command, the service, the class report and plain nbgrader's canary ask it.
"""

import json
import os
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

NAME = ".batch-grading"  # under autograded/


def folder(autograded_dir: str | Path) -> Path:
    """The batch state folder of a course whose autograded folder is autograded_dir."""
    return Path(autograded_dir) / NAME


def sqlite_file(db_url: str) -> Path | None:
    """The gradebook's file when db_url names a sqlite file, else None (another database, or sqlite in memory)."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return Path(url.database)
    return None


def beside_gradebook(db_url: str, autograded_dir: str | Path | None, suffix: str, name: str) -> Path:
    """<gradebook file><suffix> beside a sqlite gradebook; for another database, <name> in the batch state folder."""
    database = sqlite_file(db_url)
    if database is not None:
        return database.with_name(database.name + suffix)
    return folder(autograded_dir) / name  # type: ignore[arg-type]  # None only with a sqlite gradebook file


class State:
    """Each student's state in the batch state folder: what was graded (a fingerprint of the files) and why not."""

    def __init__(self, autograded_dir: str | Path) -> None:
        self.dir = folder(autograded_dir)
        self.dir.mkdir(parents=True, exist_ok=True)  # the workers' logs go here from the start

    def path(self, student: str) -> Path:
        return self.dir / f"{student}.json"

    def record(self, student: str) -> dict[str, Any] | None:
        path = self.path(student)
        return json.loads(path.read_text()) if path.exists() else None

    def save(self, student: str, record: dict[str, Any]) -> None:
        path = self.path(student)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
        tmp.replace(path)
