"""A submission may hold regular files only: anything else is refused with its reason, and never read."""

import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from courses import FULL, NB1, make_course

from perfaudit import ASSIGNMENT
from perfaudit.autograde.isolation import submission
from perfaudit.fixtures import samples
from perfaudit.grade import diagnose, run, task
from perfaudit.instructor import course

EXPECTED = {"01-first-call-vs-steady": ["workload"]}


def _folder(tmp_path):
    folder = tmp_path / "submitted" / "someone" / "performance-audit"
    folder.mkdir(parents=True)
    (folder / "01-first-call-vs-steady.ipynb").write_text('{"cells": [], "nbformat": 4}')
    return folder


def _linked_from_another_account(path, link):
    """A hard link to a file another account owns (here as root: the file given to nobody)."""
    os.chown(path, NOBODY, -1)
    os.link(path, link)


NOBODY = 65534


@pytest.mark.parametrize("make, kind", [
    (lambda f: os.symlink("/etc/passwd", f / "notes.txt"), "a symbolic link"),
    (lambda f: os.symlink("/dev/zero", f / "data.bin"), "a symbolic link"),
    (lambda f: os.mkfifo(f / "pipe"), "a FIFO"),
    (lambda f: _linked_from_another_account(f / "01-first-call-vs-steady.ipynb", f / "copy.ipynb"), "a hard link"),
])
def test_anything_but_a_regular_file_is_refused_with_its_name_and_kind(tmp_path, make, kind):
    folder = _folder(tmp_path)
    make(folder)
    found = submission.problems(folder)
    assert found and kind in submission.describe(found)
    with pytest.raises(submission.UnsafeSubmission, match=kind):
        submission.stage(folder, tmp_path / "staged")
    assert not (tmp_path / "staged").exists() or not any((tmp_path / "staged").iterdir())
    result = diagnose.diagnose(folder, EXPECTED)
    assert result.gradable == [] and kind in result.reasons["01-first-call-vs-steady"][0]
    run.fingerprint(folder)  # reads no link and opens no FIFO: returns at once


def test_a_file_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    monkeypatch.setattr(submission, "MAX_FILE_BYTES", 10)
    assert "over the" in submission.describe(submission.problems(folder))


def test_folders_nested_past_the_depth_limit_are_refused_not_a_recursion_error():
    """990 folders one in another (under the 1000 entries a submission may hold): os.walk recursed into them until
    RecursionError, which the grading service met before any refusal. (Not in tmp_path: pytest's clean-up, through
    shutil.rmtree, recurses as well.)"""
    root = Path(tempfile.mkdtemp(prefix="deep-submission-"))
    try:
        folder = _folder(root)
        inner = os.open(folder, os.O_RDONLY)
        for _ in range(990):  # Path.mkdir(parents=True) recurses as well
            os.mkdir("d", dir_fd=inner)
            inner, outer = os.open("d", os.O_RDONLY, dir_fd=inner), inner
            os.close(outer)
        os.close(inner)
        found = submission.problems(folder)
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=True)  # GNU rm takes any depth
    assert found == [("/".join(["d"] * submission.MAX_DEPTH),
                      f"a folder nested {submission.MAX_DEPTH} deep, over the {submission.MAX_DEPTH} a submission "
                      "may have")]


def test_regular_files_are_staged_and_ignored_names_left_out(tmp_path):
    folder = _folder(tmp_path)
    (folder / "runs").mkdir()
    (folder / "runs" / "report.json").write_text("{}")
    (folder / "data").mkdir()
    (folder / "data" / "x.txt").write_text("x")
    submission.stage(folder, tmp_path / "staged", ignore=["runs"])
    staged = sorted(str(p.relative_to(tmp_path / "staged")) for p in (tmp_path / "staged").rglob("*"))
    assert staged == ["01-first-call-vs-steady.ipynb", "data", "data/x.txt"]


COURSE_IGNORE = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "runs", ".git"]  # nbgrader_config.py's


def _kept_in_git(folder, entries=submission.MAX_ENTRIES + 1):
    """An honest folder kept in git (more entries under .git than a submission may hold) with a large file in the
    output folder the notebooks write (runs/), sparse: it reads as over the file limit without taking the space."""
    for n in range(entries):
        (folder / ".git" / "objects" / f"{n % 16:02x}").mkdir(parents=True, exist_ok=True)
        (folder / ".git" / "objects" / f"{n % 16:02x}" / f"object-{n}").write_text("x")
    (folder / "runs" / "performance-audit").mkdir(parents=True)
    with open(folder / "runs" / "performance-audit" / "profile.bin", "wb") as handle:
        handle.truncate(submission.MAX_FILE_BYTES + 1)
    return folder


def test_the_course_s_ignored_names_are_neither_counted_nor_refused(tmp_path):
    folder = _kept_in_git(_folder(tmp_path))
    os.symlink("/etc/passwd", folder / "runs" / "link")  # never copied nor staged: nothing reads it
    assert submission.problems(folder, COURSE_IGNORE) == []
    reasons = diagnose.diagnose(folder, EXPECTED, COURSE_IGNORE).reasons
    assert reasons == diagnose.diagnose(_folder(tmp_path / "clean"), EXPECTED).reasons  # as without .git and runs/
    submission.stage(folder, tmp_path / "staged", COURSE_IGNORE)
    assert sorted(p.name for p in (tmp_path / "staged").iterdir()) == ["01-first-call-vs-steady.ipynb"]
    [(where, why)] = submission.problems(folder)  # without the course's list, .git counts and passes the limit
    assert where.startswith(".git/") and f"over the {submission.MAX_ENTRIES} entries" in why
    assert "over the" in submission.describe(submission.problems(folder, [".git"]))  # and runs/ holds a large file


def test_the_entry_limit_counts_what_is_graded_and_a_refusal_names_the_count_and_the_folder(tmp_path):
    folder = _folder(tmp_path)
    (folder / "data").mkdir()
    for n in range(submission.MAX_ENTRIES - 2):
        (folder / "data" / f"{n}.txt").write_text("x")
    assert submission.problems(folder, COURSE_IGNORE) == []  # the notebook, data/ and its files: exactly the limit
    (folder / "data" / "one-more.txt").write_text("x")
    [(where, why)] = submission.problems(folder, COURSE_IGNORE)
    assert where == "data" and f"{submission.MAX_ENTRIES + 1} files and folders" in why and ".git" in why


def _ignored_by_name_but_copied_by_autograde(folder):
    """Entries whose names match the course's patterns that plain autograde copies all the same (its glob skips a
    name starting with '.' for '*.pyc', and reads a folder's '[1]' as a pattern): a link and a folder over the
    entry limit."""
    os.symlink("/etc/hostname", folder / ".notes.pyc")
    for n in range(submission.MAX_ENTRIES + 1):
        (folder / "data[1]" / "runs").mkdir(parents=True, exist_ok=True)
        (folder / "data[1]" / "runs" / f"{n}.txt").write_text("x")
    return folder


def test_what_autograde_copies_is_checked_though_its_name_matches_an_ignore_pattern(tmp_path):
    """Plain autograde's copy of a submission's other files follows links and runs before any plug-in: whatever it
    copies must be counted and checked, whatever the names say (a fresh attack on the ignore list found both)."""
    from nbgrader.utils import find_all_files, is_ignored

    folder = _ignored_by_name_but_copied_by_autograde(_kept_in_git(_folder(tmp_path)))
    (folder / "x.pyc").write_text("ignored by both")
    entries = [str(path) for path in folder.rglob("*")]
    assert [p for p in entries if submission.ignored_by_autograde(p, COURSE_IGNORE) != is_ignored(p, COURSE_IGNORE)] \
        == []
    copied = {os.path.relpath(p, folder) for p in find_all_files(str(folder), COURSE_IGNORE + ["*.ipynb"])}
    assert {".notes.pyc", "data[1]/runs/0.txt"} <= copied and not any(p.startswith((".git", "runs")) for p in copied)
    found = dict(submission.problems(folder, COURSE_IGNORE))
    assert found[".notes.pyc"] == "a symbolic link: submissions may hold regular files only"
    assert f"over the {submission.MAX_ENTRIES} entries" in found["data[1]/runs"]


def test_the_course_ignores_git_and_its_output_folder():
    from traitlets.config.loader import PyFileConfigLoader

    from perfaudit import paths

    config = PyFileConfigLoader("nbgrader_config.py", path=str(paths.ROOT)).load_config()
    assert {".git", "runs"} <= set(submission.course_ignore(config))


@pytest.mark.slow  # a minute or two: one notebook graded
@pytest.mark.parametrize("grader", ["plain", "batch"])
def test_an_honest_folder_kept_in_git_with_a_large_output_file_is_graded(tmp_path, grader):
    """What the course ignores (.git, runs/) neither counts toward a submission's limits nor refuses it, with plain
    nbgrader (RefuseUnsafeSubmission) and the batch command (diagnose) alike."""
    root = make_course(tmp_path / "course")
    _kept_in_git(samples.write_submission("correct", root / "submitted", stages={1}))
    if grader == "plain":
        course.nbgrader("autograde", ASSIGNMENT, "--notebook", NB1, course_dir=root)
    else:
        run.run(run.Options(course_dir=root, workers=1, canary=False, progress=False), out=io.StringIO())
    assert course.scores(root)["correct"][NB1] == (FULL[NB1], FULL[NB1])


def _tree_without_ignored_names(folder):
    """Nested folders, bytes of every value, a link: a submission the fingerprint digested before it left ignored
    names out, every mode set so the digest is this machine's and any other's."""
    folder.mkdir(parents=True)
    (folder / "01-first-call-vs-steady.ipynb").write_text('{"cells": [], "nbformat": 4}')
    (folder / "data" / "deeper").mkdir(parents=True)
    (folder / "data" / "x.txt").write_text("x")
    (folder / "data" / "deeper" / "y.bin").write_bytes(bytes(range(256)))
    (folder / "a-link").symlink_to("data/x.txt")
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


# run.fingerprint of that tree as the batch computed it before ignored names were left out: the batch skips a
# student whose fingerprint it kept, so a digest that changed would regrade the whole class at the upgrade.
DIGEST_BEFORE = "0aa4c7cbe9ed53c6933d4a11928eb501a62d014d16be98fd85e7601dc04dbe7e"


def test_the_fingerprint_keeps_its_digest_where_nothing_is_ignored(tmp_path):
    folder = _tree_without_ignored_names(tmp_path / "someone" / ASSIGNMENT)
    assert run.fingerprint(folder) == run.fingerprint(folder, COURSE_IGNORE) == DIGEST_BEFORE


def test_the_fingerprint_leaves_out_what_the_course_ignores_at_any_depth(tmp_path):
    folder = _tree_without_ignored_names(tmp_path / "someone" / ASSIGNMENT)
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / ".git" / "objects" / "ab").write_text("a commit")
    (folder / "runs").mkdir()
    (folder / "runs" / "report.json").write_text("{}")
    (folder / "data" / "__pycache__").mkdir()
    (folder / "data" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    (folder / "data" / "runs").write_text("a file named as an ignored folder, deeper")
    (folder / "data" / "deeper" / ".git").symlink_to("/etc")  # a link under an ignored name: not even its kind
    assert run.fingerprint(folder, COURSE_IGNORE) == DIGEST_BEFORE
    assert run.fingerprint(folder) != DIGEST_BEFORE  # without the list: every entry counts, as it did
    (folder / "data" / "x.txt").write_text("y")  # a graded file changed: the digest does
    assert run.fingerprint(folder, COURSE_IGNORE) != DIGEST_BEFORE


@pytest.mark.slow  # seconds: the submission is refused before any kernel starts
@pytest.mark.parametrize("grader", ["plain", "batch"])
def test_a_link_autograde_would_follow_under_an_ignored_looking_name_is_refused(tmp_path, grader):
    """`.notes.pyc` matches '*.pyc' by name, but plain autograde's glob copies it, following the link: both graders
    refuse the submission (0), and no copy of what it links to is left in autograded/."""
    root = make_course(tmp_path / "course")
    folder = samples.write_submission("correct", root / "submitted", stages={1})
    (tmp_path / "outside.txt").write_text("the grader's own file")
    os.symlink(tmp_path / "outside.txt", folder / ".notes.pyc")
    if grader == "plain":  # nbgrader exits with an error for a refused student: its scores say what happened
        # the whole assignment: with --notebook, nbgrader keeps the copy it made of a refused submission
        subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT], cwd=root,
                       env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"},
                       capture_output=True, text=True, timeout=600)
    else:
        run.run(run.Options(course_dir=root, workers=1, canary=False, progress=False), out=io.StringIO())
    assert course.scores(root)["correct"][NB1] == (0, FULL[NB1])
    assert [p for p in (root / "autograded").rglob("*") if p.name == ".notes.pyc"] == []


def test_the_fingerprint_digests_what_autograde_copies_though_its_name_looks_ignored(tmp_path):
    """`.notes.pyc` and everything under `a[1]/` match the ignore list by name, yet plain autograde copies them
    (submission.ignored_by_autograde): a change there must regrade, as it would change what is graded."""
    folder = _tree_without_ignored_names(tmp_path / "someone" / ASSIGNMENT)
    (folder / ".notes.pyc").write_text("one")
    (folder / "a[1]" / "runs").mkdir(parents=True)
    (folder / "a[1]" / "runs" / "kept.txt").write_text("one")
    before = run.fingerprint(folder, COURSE_IGNORE)
    assert before != DIGEST_BEFORE
    for changed in (folder / ".notes.pyc", folder / "a[1]" / "runs" / "kept.txt"):
        changed.write_text("two")
        assert run.fingerprint(folder, COURSE_IGNORE) != before
        before = run.fingerprint(folder, COURSE_IGNORE)


def test_a_folder_that_is_not_there_holds_nothing_to_refuse(tmp_path):
    """What the grader cannot open is refused (tests/serve/test_service.py, as an ordinary account); a folder that
    is gone, or never was, is not a folder it may not open."""
    assert submission.problems(tmp_path / "absent") == []


def _stars(folder, depth):
    """depth folders named '*', one in another, each beside a link 'a' to it, and x.pyc at the bottom: globbed as a
    pattern, the folder's path matches 2**depth paths."""
    for _ in range(depth):
        (folder / "*").mkdir()
        os.symlink("*", folder / "a")
        folder = folder / "*"
    (folder / "x.pyc").write_text("ignored")
    return folder / "x.pyc"


def test_a_folder_named_like_a_pattern_is_ignored_as_nbgrader_ignores_it(tmp_path):
    from nbgrader.utils import is_ignored

    folder = _folder(tmp_path)
    _stars(folder, 3)
    for ignore in (COURSE_IGNORE, ["*"], ["[*]"]):
        entries = [str(path) for path in folder.rglob("*")]
        assert [p for p in entries if submission.ignored_by_autograde(p, ignore) != is_ignored(p, ignore)] == []


def test_folders_named_like_patterns_do_not_hold_the_grader(tmp_path):
    """A hand-made submission in the hub's exchange held the grading service for hours: nbgrader's way of globbing
    the folder's path as a pattern. Checked in a process of its own, so that the test ends either way."""
    folder = _folder(tmp_path)
    bottom = _stars(folder, 26)
    script = ("from perfaudit.autograde.isolation import submission; "
              f"print(submission.left_out({str(bottom)!r}, ['*.pyc']), "
              f"len(submission.problems({str(folder)!r}, ['*.pyc'])))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "26"], done.stderr  # the x.pyc left out; each link refused


def test_a_path_longer_than_the_graders_can_copy_is_refused(tmp_path):
    """Fifteen folders of 250 characters: a path the exchange holds, which a grader's copy under its own longer
    folder could not write (the service read that as its own fault and stopped grading for everyone)."""
    folder = _folder(tmp_path)
    deep = folder
    for n in range(15):
        deep = deep / (str(n) * 250)[:250]
    os.makedirs(deep)
    (deep / "notes.txt").write_text("x")
    found = submission.problems(folder)
    assert len(found) == 1 and f"over the {submission.MAX_PATH_CHARS} a submission's paths may have" in found[0][1]
    assert found[0][0].startswith("0" * 80)


@pytest.mark.parametrize("limit, value, make, why", [
    ("MAX_ENTRIES", 3, lambda f: [(f / f"n{i}.txt").write_text("x") for i in range(4)], "passed its limits: 5 files"),
    ("MAX_TOTAL_BYTES", 10, lambda f: [(f / f"n{i}.txt").write_text("x" * 6) for i in range(2)], "and 0 MB counted"),
    ("MAX_FILE_BYTES", 5, lambda f: (f / "big.txt").write_text("x" * 6), "6 bytes, over the 0 MB a file may have"),
    ("MAX_DEPTH", 2, lambda f: (f / "a" / "b" / "c").mkdir(parents=True), "'a/b' is a folder nested 2 deep"),
    ("MAX_PATH_CHARS", 60, lambda f: (f / ("x" * 61)).write_text("x"), "a path of 61 characters, over the 60"),
    ("MAX_ENTRIES", 1000, lambda f: _linked_from_another_account(f / "n.txt", f / "m.txt"),
     "'m.txt' is a hard link to a file another account owns"),
])
def test_the_check_and_the_read_refuse_by_one_count(tmp_path, monkeypatch, limit, value, make, why):
    """submission.problems looks before a read, task.read_tree(within_limits=True) reads (a student can change the
    folder between the two): both feed one Tally, so each limit refuses in both, in the same words."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "n.txt").write_text("")
    monkeypatch.setattr(submission, limit, value)
    make(folder)
    found = submission.problems(folder)
    assert why in submission.describe(found)
    with pytest.raises(submission.OverLimits) as refused:
        task.read_tree(folder, within_limits=True)
    assert why in str(refused.value)
    assert task.read_tree(folder)  # a trusted read (the course's own files) counts, and refuses nothing


def test_files_of_the_submission_s_owner_with_other_links_are_read_as_any_file(tmp_path):
    """An instructor's backup of submitted/ made with hard links (`cp -al`): every file of every submission has two
    names. A fresh attacker's classmate was zeroed by a refusal of any linked file; the owner's files are read."""
    folder = _folder(tmp_path)
    (folder / "evidence.json").write_text("{}")
    shutil.copytree(folder, tmp_path / "backup", copy_function=os.link)
    assert submission.problems(folder) == []
    submission.stage(folder, tmp_path / "staged")
    assert (tmp_path / "staged" / "evidence.json").read_text() == "{}"
    assert sorted(task.read_tree(folder, within_limits=True)) == ["01-first-call-vs-steady.ipynb", "evidence.json"]
