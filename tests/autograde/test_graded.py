"""perfaudit/autograde/graded.py: whose notebook the grader grades, and so the variant its tests check against."""

import json
import os

from perfaudit import variants
from perfaudit.autograde import graded
from perfaudit.grade.intake import RECORD

# A Moodle participant id whose variant differs from that of the folder intake names after it (<full-name>_<id>)
MOODLE_ID = next(str(n) for n in range(700, 1000)
                 if variants.assigned(str(n)).variant != variants.assigned(f"ana-lopez_{n}").variant)


def test_grading_a_student_sets_their_id_for_the_tests_and_the_process_and_puts_back_what_was(monkeypatch):
    monkeypatch.setenv(variants.STUDENT_ENV, "whoever-ran-the-grader")
    assert graded.student() is None
    with graded.grading("jdoe"):
        assert graded.student() == "jdoe" and os.environ[variants.STUDENT_ENV] == "jdoe"
        assert graded.assignment() == variants.assigned("jdoe")
        with graded.grading("instructor"):  # the canary, graded while a student's grading is set up
            assert graded.assignment() == variants.assigned("instructor")
        assert graded.assignment() == variants.assigned("jdoe")
    assert graded.student() is None and os.environ[variants.STUDENT_ENV] == "whoever-ran-the-grader"
    monkeypatch.delenv(variants.STUDENT_ENV)
    with graded.grading("jdoe"):
        pass
    assert variants.STUDENT_ENV not in os.environ


def test_outside_grading_the_tests_take_the_notebook_s_own_variant(monkeypatch):
    monkeypatch.setenv(variants.STUDENT_ENV, "hubuser")
    assert graded.assignment() == variants.assigned("hubuser")


def test_a_student_from_an_lms_download_is_drawn_by_the_lms_s_id(tmp_path):
    assert graded.variant_id("hubuser", tmp_path) == "hubuser"  # no record: the gradebook's id
    (tmp_path / RECORD).write_text(json.dumps({"doejane_4242": {"lms": "canvas", "id": "4242"},
                                               f"ana-lopez_{MOODLE_ID}": {"lms": "moodle", "name": "Ana Lopez",
                                                                          "id": MOODLE_ID, "late": False},
                                               "broken": {"lms": "moodle", "id": ["not", "an", "id"]}}))
    assert graded.variant_id("doejane_4242", tmp_path) == "4242"
    assert graded.variant_id(f"ana-lopez_{MOODLE_ID}", tmp_path) == MOODLE_ID  # Moodle's participant id
    assert graded.variant_id("hubuser", tmp_path) == "hubuser"
    assert graded.variant_id("broken", tmp_path) == "broken"
    (tmp_path / RECORD).write_text("{not json")
    assert graded.variant_id("doejane_4242", tmp_path) == "doejane_4242"
