"""nbgrader's exchange as the service reads and writes it (perfaudit/serve/exchange.py): submissions in, pages out."""

import getpass
import os
import shutil
import tempfile
from datetime import datetime
from pathlib import Path

import nested_folders
import pytest
from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import notebook_hash
from traitlets.config import Config

from perfaudit import paths
from perfaudit.autograde.isolation import submission
from perfaudit.bookkeeping.coursedir import course_config
from perfaudit.grade import run, task
from perfaudit.serve import exchange

A = "performance-audit"


def _submitted(inbound, name, secret="s3cret", files=("01-timing.ipynb",)):
    folder = inbound / name
    folder.mkdir(parents=True)
    for file in files:
        (folder / file).write_text("{}")
    if secret is not None:
        (folder / exchange.SECRET).write_text(secret)
    return folder


def _unsafe(folder, *ignore):
    with exchange.opened(folder.parent, folder.name) as entry:
        return exchange.unsafe(entry, *ignore)


def _collect(folder, target, *ignore):
    with exchange.opened(folder.parent, folder.name) as entry:
        exchange.collect(entry, target, *ignore)


def test_the_course_s_folder_is_under_the_exchange_root_the_config_names(tmp_path):
    config = Config()
    config.Exchange.root = str(tmp_path / "exchange")
    config.CourseDirectory.course_id = "a-course"
    assert exchange.course_path(config, CourseDirectory(config=config)) == tmp_path / "exchange" / "a-course"


def test_complete_new_submissions_arrive_oldest_first_with_their_student_and_time(tmp_path):
    _submitted(tmp_path, f"ada+{A}+2026-01-02 10:00:00.000000 UTC+r1")
    _submitted(tmp_path, f"bob+{A}+2026-01-01 10:00:00.000000 UTC+r2")
    _submitted(tmp_path, f"eve+{A}+2026-01-01 09:00:00.000000 UTC+r0")  # known already
    _submitted(tmp_path, f"cyd+{A}+2026-01-01 08:00:00.000000 UTC+r3", secret=None)  # still being written
    _submitted(tmp_path, f"dan+{A}+2026-01-01 08:00:00.000000 UTC+r4", secret="")
    _submitted(tmp_path, "fay+other+2026-01-01 08:00:00.000000 UTC+r5")  # another assignment
    _submitted(tmp_path, f"gus+{A}+not a time+r6")
    _submitted(tmp_path, f"guy+{A}+2026-01-01 00:00:00 ..+r9")  # a zone python-dateutil raises its own warning for
    (tmp_path / f"hal+{A}+2026-01-01 08:00:00.000000 UTC+r7").symlink_to(tmp_path / f"ada+{A}+2026-01-02 10:00:00"
                                                                         f".000000 UTC+r1")
    (tmp_path / f"ivy+{A}+2026-01-01 08:00:00.000000 UTC+r8").write_text("a file")
    assert exchange.arrivals(tmp_path, A, {f"eve+{A}+2026-01-01 09:00:00.000000 UTC+r0"}) == [
        (f"bob+{A}+2026-01-01 10:00:00.000000 UTC+r2", "bob", datetime(2026, 1, 1, 10)),
        (f"ada+{A}+2026-01-02 10:00:00.000000 UTC+r1", "ada", datetime(2026, 1, 2, 10))]
    assert exchange.arrivals(tmp_path / "absent", A, set()) == []
    # what is no submission, the link, the file and the name with no time, is its maker's: skipped, with why
    _, odd = exchange.scan(tmp_path, A, set())
    assert {entry.name.split("+")[0]: (entry.account, entry.why) for entry in odd} == {
        "hal": (getpass.getuser(), "a symbolic link, not a submission's folder"),
        "ivy": (getpass.getuser(), "a file, not a submission's folder"),
        "gus": (getpass.getuser(), "a name nbgrader's submit does not write (its time cannot be read)"),
        "guy": (getpass.getuser(), "a name nbgrader's submit does not write (its time cannot be read)")}


def test_a_folder_without_its_secret_is_looked_at_again_only_once_it_changes(tmp_path):
    """Thousands of folders named like submissions, none with a secret (a flood in seconds): each is opened once, then
    only lstat'ed until it changes; its secret written, it arrives."""
    names = [f"eve+{A}+2026-01-01 10:00:00.{n:06d} UTC+r{n}" for n in range(3000)]
    for name in names:
        _submitted(tmp_path, name, secret=None)
    unfinished = {}
    assert exchange.scan(tmp_path, A, set(), 0.0, unfinished) == ([], []) and set(unfinished) == set(names)
    opened = []
    real_open = os.open
    try:
        os.open = lambda *a, **k: opened.append(a[0]) or real_open(*a, **k)
        assert exchange.scan(tmp_path, A, set(), 0.0, unfinished) == ([], [])
        assert opened == []  # nothing opened again: none changed
        (tmp_path / names[7] / exchange.SECRET).write_text("s3cret")  # finished: the folder changed
        found, _ = exchange.scan(tmp_path, A, set(), 0.0, unfinished)
    finally:
        os.open = real_open
    assert [name for name, *_ in found] == [names[7]] and len(opened) == 2  # that folder and its secret
    shutil.rmtree(tmp_path / names[0])
    exchange.scan(tmp_path, A, set(), 0.0, unfinished)
    assert names[0] not in unfinished and names[7] not in unfinished  # gone, and arrived


def test_a_submission_s_owner_notebooks_and_secret(tmp_path):
    folder = _submitted(tmp_path, "ada", files=("02-tracing.ipynb", "01-timing.ipynb", "notes.txt", "n1.ipynb"))
    (folder / "03-evidence.ipynb").symlink_to(folder / "01-timing.ipynb")
    with exchange.opened(tmp_path, "ada") as entry:
        assert exchange.owner(entry) == getpass.getuser()
        # the assignment's notebooks that are regular files: no page for n1.ipynb, nor through a link
        assert exchange.notebooks(entry, {"01-timing", "02-tracing", "03-evidence"}) == ["01-timing", "02-tracing"]
        assert exchange.secret(entry) == "s3cret"
    linked = _submitted(tmp_path, "bob", secret=None)
    (linked / exchange.SECRET).symlink_to(folder / exchange.SECRET)
    with exchange.opened(tmp_path, "bob") as entry, pytest.raises(OSError):
        exchange.secret(entry)


def test_a_submission_is_read_only_as_the_folder_noticed(tmp_path):
    """A student swaps their own queued submission's name for a link (to a classmate's folder, to inbound/ itself,
    to a folder the service may not search) or for another folder: the service reads nothing through the name
    (a hub's attacker had it list inbound/ and send a classmate's pages through such a link)."""
    classmate = _submitted(tmp_path, "bea", secret="classmate's")
    mine = _submitted(tmp_path, "ada")
    with exchange.opened(tmp_path, "ada") as entry:
        noticed = entry.identity
        mine.rename(tmp_path / "ada-moved")
        (tmp_path / "ada").symlink_to(classmate)
        assert exchange.secret(entry) == "s3cret", "the folder opened is read, whatever its name leads to now"
    for target in (classmate, tmp_path, Path("/root")):
        (tmp_path / "ada").unlink()
        (tmp_path / "ada").symlink_to(target)
        with pytest.raises(exchange.UnreadableSubmission, match="no longer a folder the grader may open"):
            with exchange.opened(tmp_path, "ada", noticed):
                pass
    (tmp_path / "ada").unlink()
    _submitted(tmp_path, "ada")
    with pytest.raises(exchange.UnreadableSubmission, match="replaced by another"):
        with exchange.opened(tmp_path, "ada", noticed):
            pass
    with pytest.raises(FileNotFoundError):
        with exchange.opened(tmp_path, "gone", noticed):
            pass


def test_an_unsafe_submission_says_why_and_collect_copies_regular_files_byte_for_byte(tmp_path):
    folder = _submitted(tmp_path / "inbound", "ada")
    (folder / "evidence").mkdir()
    (folder / "evidence" / "report.json").write_bytes(b"\x00\xff")
    assert _unsafe(folder) is None
    target = tmp_path / "submitted" / "ada" / A
    target.mkdir(parents=True)
    (target / "old.ipynb").write_text("an earlier submission")
    _collect(folder, target)
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == [
        "01-timing.ipynb", "evidence", "evidence/report.json", exchange.SECRET]
    assert (target / "evidence" / "report.json").read_bytes() == b"\x00\xff"
    (folder / "link").symlink_to("/etc/passwd")
    assert _unsafe(folder) == "'link' is a symbolic link: submissions may hold regular files only"


def test_a_submission_nested_too_deep_since_it_was_looked_at_is_refused_not_the_service_s_error(tmp_path,
                                                                                              monkeypatch):
    """Folders nested 1500 deep, made between unsafe()'s look and the read (unsafe() passed: the student's moment):
    the walk recurses in Python 3.11, and its RecursionError would pause the service for the class; the read stops at
    a submission's depth, the submission's own refusal, and submitted/ stays as it was."""
    inbound = Path(tempfile.mkdtemp(prefix="deep-inbound-"))  # not tmp_path: its clean-up recurses
    try:
        folder = _submitted(inbound, "ada")
        nested_folders.nest(folder, 1500)
        monkeypatch.setattr(exchange, "unsafe", lambda *_: None)
        target = tmp_path / "submitted" / "ada" / A
        target.mkdir(parents=True)
        (target / "old.ipynb").write_text("an earlier submission")
        refusal = "passed a submission's limits.*a folder nested 64 deep"
        with pytest.raises(exchange.UnreadableSubmission, match=refusal):
            _collect(folder, target)
        assert os.listdir(target) == ["old.ipynb"]
    finally:
        nested_folders.remove(inbound)


def test_a_page_is_released_where_fetch_feedback_looks_for_it(tmp_path):
    course = tmp_path / "exchange" / "a-course"
    umask = os.umask(0o077)  # the modes are set, whatever the service's umask
    try:
        target = exchange.release(course, "s3cret", "01-timing", b"<html>page</html>")
    finally:
        os.umask(umask)
    assert target == course / "feedback" / f"{notebook_hash(secret='s3cret', notebook_id='01-timing')}.html"
    assert target.read_bytes() == b"<html>page</html>"
    assert oct(target.stat().st_mode & 0o777) == "0o644" and oct(target.parent.stat().st_mode & 0o777) == "0o711"
    assert exchange.release(course, "s3cret", "01-timing", b"again") == target and target.read_bytes() == b"again"
    assert os.listdir(target.parent) == [target.name]  # no temporary file left


IGNORED = submission.course_ignore(course_config(paths.ROOT))  # the course's: .git, runs, __pycache__, ...


def test_what_the_course_ignores_is_neither_counted_nor_refused_nor_collected(tmp_path, monkeypatch):
    """As plain nbgrader's refusal, the batch's diagnosis and nbgrader's own collect treat them: a folder kept in
    git (its objects hard-linked by a local clone, more entries than a submission may hold), a large file in the
    course's runs/, a link and a FIFO under ignored names, at the top and deeper."""
    monkeypatch.setattr(submission, "MAX_FILE_BYTES", 1000)
    folder = _submitted(tmp_path / "inbound", "ada")
    objects = folder / ".git" / "objects"
    objects.mkdir(parents=True)
    for n in range(submission.MAX_ENTRIES + 1):
        (objects / f"{n:04x}").write_text("an object")
    os.chown(objects / "0000", 65534, -1)  # a file another account owns: its link is refused where counted
    os.link(objects / "0000", objects / "linked")
    (folder / "runs").mkdir()
    (folder / "runs" / "trace.bin").write_bytes(bytes(2000))
    (folder / "evidence" / "runs").mkdir(parents=True)
    (folder / "evidence" / "runs" / "old.bin").write_bytes(bytes(2000))
    (folder / "evidence" / "report.json").write_text("{}")
    (folder / "evidence" / ".git").symlink_to("/etc")
    os.mkfifo(folder / "evidence" / "__pycache__")
    assert _unsafe(folder, IGNORED) is None
    refused = _unsafe(folder)  # without the list, each of them is refused, as it was
    assert "'.git/objects/linked' is a hard link" in refused and "over the 1000 entries" in refused
    shutil.rmtree(folder / ".git")
    refused = _unsafe(folder)
    assert "'evidence/.git' is a symbolic link" in refused and "'evidence/__pycache__' is a FIFO" in refused
    assert _unsafe(folder, IGNORED) is None
    target = tmp_path / "submitted" / "ada" / A
    _collect(folder, target, IGNORED)
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == [
        "01-timing.ipynb", "evidence", "evidence/report.json", exchange.SECRET]
    # what the service grades and keeps the fingerprint of is what it collected
    assert task.submitted_files(target, IGNORED) == task.submitted_files(folder, IGNORED)
    assert run.fingerprint(target, IGNORED) == run.fingerprint(folder, IGNORED)


@pytest.mark.parametrize("swapped_in", ["hard links", "long names"])
def test_a_folder_swapped_in_while_the_service_reads_is_refused_as_its_maker_s(tmp_path, monkeypatch, swapped_in):
    """A held-out attacker's race: after the service checked a submission (sizes, paths), at the moment it opened a
    file of it, a folder was renamed into it: 16 hard links to one 64 MiB file (1 GB of a 256 MB submission, read
    into the service's memory and written to the course's disk), or a chain of 253-character names (its copy failed
    with "File name too long", the service's own fault, and grading stopped for the class). What is read past a
    submission's limits refuses that submission, its maker's doing, and submitted/ is left as it was."""
    folder = _submitted(tmp_path / "inbound", f"ada+{A}+2026-01-01 10:00:00.000000 UTC+r1",
                        files=("01-timing.ipynb", "a1.txt"))
    stash = tmp_path / "stash"
    stash.mkdir()
    if swapped_in == "hard links":
        (stash / "big").write_bytes(b"x" * (32 * 2**20))
        for n in range(10):
            os.link(stash / "big", stash / f"link{n}")
    else:
        deep = stash
        for n in range(6):
            deep = deep / (f"{n}" * 250)
            deep.mkdir()
        (deep / "end.txt").write_text("end")
    ignored = task.submission.ignored

    def swapping(name, ignore):  # the walk's look at each name: the student's moment, once checked, mid-read
        if name == "a1.txt" and stash.exists():
            stash.rename(folder / "zzz")
        return ignored(name, ignore)

    target = tmp_path / "submitted" / "ada" / A
    target.mkdir(parents=True)
    (target / "earlier.ipynb").write_text("{}")
    assert _unsafe(folder) is None  # checked before the swap: within every limit
    monkeypatch.setattr(task.submission, "ignored", swapping)
    with pytest.raises(exchange.UnreadableSubmission, match="changed while it was read and passed a submission's"):
        _collect(folder, target)
    assert (folder / "zzz").exists()  # the swap happened during the read
    assert sorted(p.name for p in target.iterdir()) == ["earlier.ipynb"]
