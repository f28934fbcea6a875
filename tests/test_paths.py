"""Where things live (perfaudit/paths.py): the evidence folder a notebook writes to."""

from pathlib import Path

from perfaudit import ASSIGNMENT, paths


def test_the_evidence_folder_is_the_environment_s_else_runs_of_the_assignment(monkeypatch):
    monkeypatch.delenv(paths.EVIDENCE_ENV, raising=False)
    assert paths.evidence_dir() == Path("runs") / ASSIGNMENT
    monkeypatch.setenv(paths.EVIDENCE_ENV, "/tmp/graded-evidence")
    assert paths.evidence_dir() == Path("/tmp/graded-evidence")
