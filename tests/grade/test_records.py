"""The record behind every grade (perfaudit/grade/records.py): what graded each notebook, kept as JSON Lines."""

import hashlib
import json
import types

from perfaudit.grade import records
from perfaudit.grade.task import GradingResult

SPEC = {"files": {"nbgrader_config.py": b"c = get_config()\n", "source/hw/01.ipynb": b"one",
                  "source/hw/02.ipynb": b"two", "source/hw/data.json": b"{}", "source/hx/01.ipynb": b"x"}}


def _recorder(path):
    return records.Recorder(path, SPEC, "hw", "source", {"memory_mb": 2048}, "bubblewrap",
                            {"01": "tests of 01"}, {"01": 3.0, "02": 2.0})


def _result(student="ann", seconds=1.23456):
    return GradingResult(
        student=student, host="h", pid=1, machine={"versions": {"jax": "0.4"}, "perfaudit_sha256": "p"},
        submitted_sha256={"01.ipynb": "s1", "02.ipynb": "s2"},
        results={"timestamp": None, "notebooks": {
            "01": {"late_submission_penalty": None, "grades": {"b": 2.0, "a": None, "d": 1.0}, "comments": {}},
            "02": {"late_submission_penalty": None, "grades": {"c": 0.0}, "comments": {}}}},
        autograded={"01.ipynb": b"graded"}, notebook_seconds={"01": seconds})


def test_a_record_says_what_graded_each_graded_notebook(tmp_path):
    [found] = _recorder(tmp_path / "records.jsonl").records(_result())
    assert {key: value for key, value in found.items() if key not in records.VOLATILE} == {
        "student": "ann", "assignment": "hw", "notebook": "01", "auto_scores": {"a": None, "b": 2.0, "d": 1.0},
        "score": 3.0, "max_score": 3.0, "submitted_sha256": "s1", "source_sha256": hashlib.sha256(b"one").hexdigest(),
        "tests_sha256": "tests of 01", "config_sha256": hashlib.sha256(SPEC["files"]["nbgrader_config.py"]).hexdigest(),
        "versions": {"jax": "0.4"}, "perfaudit_sha256": "p", "limits": {"memory_mb": 2048}, "sandbox": "bubblewrap"}
    assert found["seconds"] == 1.235 and list(found["auto_scores"]) == ["a", "b", "d"]
    nothing_graded = GradingResult(student="bob", host="h", pid=1, machine={}, submitted_sha256={})
    assert _recorder(tmp_path).records(nothing_graded) == []


def test_records_are_appended_and_the_newest_of_each_grade_is_exported(tmp_path):
    path = tmp_path / "state" / "records.jsonl"
    recorder = _recorder(path)
    recorder.append(_result("ann", 1.0))
    recorder.append(_result("bob", 2.0))
    recorder.append(_result("ann", 3.0))
    assert [(r["student"], r["seconds"]) for r in records.read(path)] == [("ann", 1.0), ("bob", 2.0), ("ann", 3.0)]
    assert records.latest(records.read(path))["ann", "01"]["seconds"] == 3.0
    out = tmp_path / "exports" / "records.jsonl"
    lines = records.export(path, {("ann", "01"), ("cyd", "01")}, out)
    assert [json.loads(line)["seconds"] for line in out.read_text().splitlines()] == [3.0]
    assert lines[0] == f"records: 1 of 2 graded notebooks in {out}"
    assert lines[1].startswith("  1 graded notebook(s) without a record")
    assert records.export(path, {("bob", "01")}, out) == [f"records: 1 of 1 graded notebooks in {out}"]
    assert records.read(tmp_path / "absent.jsonl") == []


def test_the_tests_digest_changes_with_a_test_cell_and_not_with_their_order():
    def gradebook(*cells):
        notebook = types.SimpleNamespace(name="01", source_cells=[
            types.SimpleNamespace(name=name, cell_type="code", locked=True, source=source) for name, source in cells])
        return types.SimpleNamespace(find_assignment=lambda name: types.SimpleNamespace(notebooks=[notebook]))
    digest = records.tests_digests(gradebook(("a", "assert x"), ("b", "assert y")), "hw")["01"]
    assert records.tests_digests(gradebook(("b", "assert y"), ("a", "assert x")), "hw")["01"] == digest
    assert records.tests_digests(gradebook(("a", "assert x"), ("b", "assert z")), "hw")["01"] != digest


def test_the_machine_names_the_package_s_code_by_its_digest():
    found = records.machine()
    assert found["perfaudit_sha256"] == records.package_digest() and len(records.package_digest()) == 64
    assert {"platform", "hostname", "cpus"} == set(found["machine"]) and "perfaudit" in found["versions"]
