"""Regrade diffs (perfaudit/grade/regrade.py): what a grading run changed, on classes written out by hand."""

import csv
import json
import re

from class_data import CLASS, NB, make_class

from perfaudit.bookkeeping import statefolder
from perfaudit.grade import regrade
from perfaudit.grade.classdata import ClassData


def test_regrade_lists_exactly_the_students_whose_score_moved(tmp_path):
    before = make_class(CLASS, {"s2": {f"{NB}/b": "old"}})
    after = make_class({**CLASS, "s2": (1, 1, 2), "s4": (1, 1, 1)}, {"s4": {f"{NB}/c": "=HYPERLINK(\"x\")"}})
    rows = regrade.changes(before, after)
    assert [(r["student"], r["test"], r["old_score"], r["new_score"], r["direction"]) for r in rows] == [
        ("s2", "b", 0.0, 1.0, "up"), ("s4", "c", 0.0, 1.0, "up")]
    assert regrade.counts(rows) == {"up": 2, "down": 0, "same total": 0}
    path = regrade.write_csv(tmp_path, "20260101T000000.000Z", rows)
    with path.open(newline="") as handle:
        written = list(csv.DictReader(handle))
    assert written[1]["new_message"] == "'=HYPERLINK(\"x\")"  # never a formula in a spreadsheet
    assert written[0]["old_message"] == "old" and written[0]["old_score"] == "0"
    assert regrade.newest(tmp_path)[1] == written


def test_a_student_graded_in_one_run_only_or_withheld_now_is_no_change():
    before = make_class({"s1": (1, 1, 2), "s2": (1, 1, 2)})
    after = make_class({"s2": (0, 0, 0), "s3": (0, 0, 0)})
    after.withheld = {"s2": {NB: "two files claim it"}}
    assert regrade.changes(before, after) == []


def test_a_total_that_went_down_or_stayed_is_said_so():
    before = make_class({"s1": (1, 1, 2), "s2": (1, 0, 2)})
    after = make_class({"s1": (1, 0, 2), "s2": (0, 1, 2)})
    rows = regrade.changes(before, after)
    assert [(r["student"], r["test"], r["direction"]) for r in rows] == [
        ("s1", "b", "down"), ("s2", "a", "same total"), ("s2", "b", "same total")]
    assert regrade.counts(rows) == {"up": 0, "down": 1, "same total": 1}
    assert regrade.summary_line(rows, "reports/regrade-x.csv") == (
        "Regrade: 2 student(s)' scores changed: 0 up, 1 down, 1 with the same total (reports/regrade-x.csv)")
    assert regrade.summary_line(rows[:1], "p") == "Regrade: 1 student(s)' scores changed: 0 up, 1 down (p)"
    assert regrade.summary_line([], None) == "Regrade: no score changed."


def test_a_number_that_looks_like_a_formula_stays_a_number_and_the_newest_file_is_read(tmp_path):
    rows = [{**dict.fromkeys(regrade.COLUMNS, ""), "student": "s1", "old_score": -1.0, "new_score": 0.5,
             "old_message": "-1e-05", "new_message": "+cmd|' /C calc'!A0"}]
    regrade.write_csv(tmp_path, "20260101T000000.000Z", rows)
    path = regrade.write_csv(tmp_path, "20260102T000000.000Z", rows[:0])
    assert regrade.newest(tmp_path) == (path, [])
    path.unlink()
    found = regrade.newest(tmp_path)[1][0]
    assert (found["old_score"], found["new_score"], found["old_message"], found["new_message"]) == (
        "-1", "0.5", "-1e-05", "'+cmd|' /C calc'!A0")
    assert regrade.newest(tmp_path / "none") is None


def test_stamps_sort_as_text_in_time_order_to_the_millisecond():
    first, second = regrade.stamp(), regrade.stamp()
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{3}Z", first) and first <= second


def test_the_scores_before_a_run_are_kept_in_the_state_folder(tmp_path, monkeypatch):
    before = make_class({"s1": (1, 0, 2)}, {"s1": {f"{NB}/b": "AssertionError: no"}})
    asked = []
    monkeypatch.setattr(regrade.classdata, "read", lambda *args, **kw: asked.append((args, kw)) or before)
    assert regrade.snapshot("sqlite://", "course", "hw", tmp_path, ["s1"], "20260101T000000.000Z") is before
    assert asked == [(("sqlite://", "course", "hw", tmp_path), {"students": ["s1"]})]
    kept = json.loads((statefolder.folder(tmp_path) / regrade.HISTORY / "before-20260101T000000.000Z.json").read_text())
    assert kept == {"taken_at": "20260101T000000.000Z", "scores": before.scores, "messages": before.messages}
    assert regrade.snapshot("sqlite://", "course", "hw", tmp_path, [], "t") is None
    monkeypatch.setattr(regrade.classdata, "read", lambda *args, **kw: ClassData())
    assert regrade.snapshot("sqlite://", "course", "hw", tmp_path, ["s9"], "t") is None
    assert not (statefolder.folder(tmp_path) / regrade.HISTORY / "before-t.json").exists()
