"""Evidence made up at grading time and the folders made for it (perfaudit/autograde/evidence/made_up.py)."""

import tempfile

import numpy as np

from perfaudit.answer_key import answers
from perfaudit.autograde.evidence import made_up


def test_a_new_folder_holds_only_its_files_and_goes_when_the_grader_removes_them(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "link"))  # the folders are named by their real path
    made_up.remove_test_folders()
    first = made_up.new_folder({"report.json": "{}", "workload.jaxpr.txt": "tanh"})
    second = made_up.new_folder()
    try:
        assert sorted(p.name for p in first.iterdir()) == ["report.json", "workload.jaxpr.txt"]
        assert (first / "report.json").read_text() == "{}" and list(second.iterdir()) == []
        assert made_up.test_folders() == [tmp_path / "real" / first.name, tmp_path / "real" / second.name]
    finally:
        made_up.remove_test_folders()
    assert not first.exists() and not second.exists() and made_up.test_folders() == []


def test_the_made_up_evidence_report_and_first_call_are_the_answer_key_s_for_the_same_draw():
    def rng():
        return np.random.default_rng(7)
    evidence = made_up.made_up_evidence(rng(), 6)
    assert evidence == answers.evidence_of(rng(), 6) and len(evidence["steady_s"]) == 6
    assert made_up.made_up_report(evidence, rng()) == answers.report_of(evidence, rng())
    assert made_up.made_up_first_call(rng()) == answers.first_call_of(rng())
    assert made_up.made_up_evidence()["jaxpr_text"] != made_up.made_up_evidence()["jaxpr_text"]  # a fresh token
