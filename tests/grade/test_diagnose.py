"""What is wrong with a submission before it is graded (perfaudit/grade/diagnose.py): one reason per problem."""

import json
import os

from perfaudit.grade.diagnose import diagnose

EXPECTED = {"01-timing": ["time_call", "test_time_call"], "02-tracing": ["count", "test_count"],
            "03-evidence": ["report", "test_report"]}


def _notebook(*grade_ids, nbformat=4):
    cells = [{"cell_type": "code", "source": "", "metadata": {"nbgrader": {"grade_id": g}} if g else {}}
             for g in grade_ids]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": nbformat, "nbformat_minor": 5})


def _folder(tmp_path, **notebooks):
    folder = tmp_path / "submitted" / "ann" / "performance-audit"
    folder.mkdir(parents=True)
    for name, text in notebooks.items():
        (folder / f"{name}.ipynb").write_bytes(text if isinstance(text, bytes) else text.encode())
    return folder


def test_a_whole_submission_is_gradable_with_no_reason(tmp_path):
    folder = _folder(tmp_path, **{name: _notebook(None, *ids) for name, ids in EXPECTED.items()})
    found = diagnose(folder, EXPECTED)
    assert (found.gradable, found.reasons, found.withheld) == (list(EXPECTED), {}, [])


def test_a_deleted_split_or_copied_graded_cell_is_named_and_the_notebook_still_graded(tmp_path):
    folder = _folder(tmp_path, **{"01-timing": _notebook("time_call", "time_call", "time_call"),
                                  "02-tracing": _notebook("count", "test_count", "count"),
                                  "03-evidence": _notebook("report", "test_report")})
    found = diagnose(folder, EXPECTED)
    assert found.gradable == list(EXPECTED)
    assert found.reasons == {
        "01-timing": ["cell 'test_time_call' was deleted from the notebook",
                      "cell 'time_call' was split into 3 cells: graded as the last part"],
        "02-tracing": ["cell 'count' appears 2 times: only the last copy is graded"]}


def test_a_file_that_is_no_notebook_says_what_it_is(tmp_path):
    folder = _folder(tmp_path, **{"01-timing": b"  \n", "02-tracing": b'{"cells": [}', "03-evidence": b'{"a": "\xff"}'})
    found = diagnose(folder, EXPECTED)
    assert found.gradable == []
    assert found.reasons == {
        "01-timing": ["the file is empty (0 bytes of notebook)"],
        "02-tracing": ["malformed JSON (Expecting value, line 1 column 12): not graded"],
        "03-evidence": ["malformed: not UTF-8 text (invalid start byte at byte 7)"]}
    folder = _folder(tmp_path / "again", **{"01-timing": "[1, 2]", "02-tracing": _notebook("count", nbformat=3),
                                            "03-evidence": _notebook("report", "test_report")})
    assert diagnose(folder, EXPECTED).reasons == {
        "01-timing": ["malformed: valid JSON but not a notebook (no list of cells)"],
        "02-tracing": ["malformed: notebook format 3, expected 4"]}


def test_a_notebook_saved_with_a_byte_order_mark_says_so(tmp_path):
    """A fresh attacker's notebook saved with a UTF-8 byte-order mark: JSON of bytes reads past it, nbgrader (text)
    does not, and the batch said only "NbGraderException: Please see the above traceback"."""
    folder = _folder(tmp_path, **{"01-timing": b"\xef\xbb\xbf" + _notebook("time_call", "test_time_call").encode()})
    reasons = diagnose(folder, EXPECTED).reasons["01-timing"]
    assert reasons == [reasons[0]] and "starts with a byte-order mark (bytes EF BB BF)" in reasons[0], reasons


def test_json_shaped_unlike_a_notebook_is_a_reason_never_an_error(tmp_path):
    """A notebook's JSON with cells that are numbers, metadata that is a list, a source that is no text or nesting
    deeper than Python's parser goes: each a reason for that notebook alone (one used to raise in the grading
    service's own process and stop grading for the whole class)."""
    shaped = {"01-timing": '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [1]}',
              "02-tracing": '{"nbformat": 4, "nbformat_minor": 5, "metadata": [], "cells": []}',
              "03-evidence": '{"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code", "source": 7}]}'}
    assert diagnose(_folder(tmp_path, **shaped), EXPECTED).reasons == {
        "01-timing": ["malformed: valid JSON but not a notebook (cell 0 is a number, not a cell)"],
        "02-tracing": ["malformed: valid JSON but not a notebook (its metadata is not an object)"],
        "03-evidence": ["malformed: valid JSON but not a notebook (cell 0's source is not text)"]}
    shaped = {"01-timing": '{"nbformat": 4, "cells": [{"cell_type": "code", "metadata": {"nbgrader": []}}]}',
              "02-tracing": '{"nbformat": 4, "cells": [{"cell_type": "code", "metadata": {"nbgrader": {"grade_id": '
                            '[1]}}}]}',
              "03-evidence": '{"cells": ' + "[" * 200_000 + "]" * 200_000 + "}"}
    assert diagnose(_folder(tmp_path / "again", **shaped), EXPECTED).reasons == {
        "01-timing": ["malformed: valid JSON but not a notebook (cell 0's metadata is not an object)"],
        "02-tracing": ["malformed: valid JSON but not a notebook (cell 0's grade id is not text)"],
        "03-evidence": ["malformed: JSON nested too deeply to be a notebook"]}


def test_missing_misnamed_extra_and_foreign_notebooks_each_say_so(tmp_path):
    folder = _folder(tmp_path, **{"timing (1)": _notebook("time_call", "test_time_call"),
                                  "02-tracing": _notebook("report"), "03-evidence": _notebook("other_course_cell"),
                                  "scratch": _notebook("x")})
    found = diagnose(folder, EXPECTED)
    assert found.gradable == []
    assert found.reasons == {
        "scratch.ipynb": ["extra notebook 'scratch.ipynb': not one of performance-audit's notebooks (01-timing, "
                          "02-tracing, 03-evidence), not graded"],
        "01-timing": ["misnamed: submitted as 'timing (1).ipynb'; rename it to '01-timing.ipynb', grade again"],
        "02-tracing": ["holds the cells of 03-evidence.ipynb, not 02-tracing's: the student saved one notebook under "
                       "the other's name; not graded (rename it to 03-evidence.ipynb, or ask for 02-tracing.ipynb)"],
        "03-evidence": ["a notebook of another assignment: none of 03-evidence's graded cells, but "
                        "'other_course_cell'; not graded (ask the student for this assignment's 03-evidence.ipynb)"]}
    assert diagnose(_folder(tmp_path / "b", **{"03-evidence": _notebook()}), {"03-evidence": []}).gradable == [
        "03-evidence"]


def test_an_empty_or_absent_submission_is_one_reason_per_notebook(tmp_path):
    folder = _folder(tmp_path)
    (folder / "notes.txt").write_text("no notebook")
    assert diagnose(folder, EXPECTED).reasons == {
        name: ["empty submission: no notebook in submitted/ann/performance-audit"] for name in EXPECTED}
    assert diagnose(tmp_path / "absent" / "performance-audit", EXPECTED).reasons == {
        name: ["empty submission: no notebook in submitted/absent/performance-audit"] for name in EXPECTED}


def test_a_folder_holding_a_link_is_not_read_and_a_file_name_that_is_not_text_costs_nothing(tmp_path):
    folder = _folder(tmp_path, **{"01-timing": _notebook("time_call")})
    os.symlink("/etc/passwd", folder / "02-tracing.ipynb")
    found = diagnose(folder, EXPECTED)
    assert found.gradable == [] and found.reasons == {
        name: ["not graded: '02-tracing.ipynb' is a symbolic link: submissions may hold regular files only"]
        for name in EXPECTED}
    (folder / "02-tracing.ipynb").unlink()
    (folder / "02-tracing.ipynb").write_text(_notebook("count"))
    with open(os.path.join(os.fsencode(folder), b"notes-\xff.txt"), "w") as handle:
        handle.write("x")
    found = diagnose(folder, EXPECTED)  # a file the grader does not need: graded past, as plain nbgrader does
    assert found.gradable == ["01-timing", "02-tracing"]
    assert [why for reasons in found.reasons.values() for why in reasons if "not graded" in why or "UTF-8" in why] == []
