"""The grader's side of the channel (perfaudit/autograde/wire/channel.py): what it keeps of answers, and its
deadline."""

import base64

import pytest

from perfaudit.autograde.wire import protocol
from perfaudit.autograde.wire.channel import Exchange, StudentError, Timeout


def answer(value):
    return {"ok": True, "value": value, "dirs": []}


def b64(data):
    return base64.b64encode(data).decode()


def path_value(files, kind="dir", name="evidence"):
    return {"$": "path", "kind": kind, "name": name, "files": {n: b64(d) for n, d in files.items()}}


@pytest.fixture
def exchange(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return Exchange(scratch)


def written(exchange):
    return sorted(str(p.relative_to(exchange.scratch)) for p in exchange.scratch.rglob("*"))


def test_the_bytes_a_notebook_keeps_are_capped_across_its_answers(exchange):
    each = {"a.bin": bytes(12 * 2**20), "b.bin": bytes(12 * 2**20)}  # 24 MiB: under every limit of one answer
    kept = [exchange.answer(answer(path_value(each)), []) for _ in range(2)]
    assert all((folder / "b.bin").stat().st_size == 12 * 2**20 for folder in kept)
    before = written(exchange)
    for _ in range(2):  # the third answer and any after it
        with pytest.raises(StudentError, match="more files than the grader keeps for one notebook"):
            exchange.answer(answer(path_value(each)), [])
    assert written(exchange) == before
    assert exchange.answer(answer(path_value({"small": b"1"})), [])  # what still fits is read


def test_the_files_and_folders_a_notebook_keeps_are_capped_across_its_answers(exchange):
    many = {f"d{i // 16}/f{i}": b"" for i in range(protocol.MAX_FILES)}  # 64 folders, 1024 files: under every limit
    for _ in range(protocol.MAX_NOTEBOOK_ENTRIES // (1 + 64 + protocol.MAX_FILES)):
        exchange.answer(answer(path_value(many)), [])
    before = written(exchange)
    with pytest.raises(StudentError, match="more files than the grader keeps for one notebook"):
        exchange.answer(answer(path_value(many)), [])
    assert written(exchange) == before


def test_folders_handed_back_count_toward_the_notebook_too(exchange):
    folder = exchange.scratch / "read-back-0"
    folder.mkdir()
    each = {"a.bin": bytes(12 * 2**20), "b.bin": bytes(12 * 2**20)}
    for _ in range(2):
        exchange.answer({"ok": True, "value": None, "dirs": [path_value(each)]}, [folder])
    with pytest.raises(StudentError, match="more files than the grader keeps"):
        exchange.answer({"ok": True, "value": None, "dirs": [path_value(each)]}, [folder])


class Clock:
    """A clock that moves one second each time it is read: the deadline passes at a known point of the work."""

    def __init__(self):
        self.now = 0

    def __call__(self):
        self.now += 1
        return self.now


def test_an_answer_read_past_the_tests_deadline_is_a_timeout_and_nothing_of_it_is_written(tmp_path):
    exchange = Exchange(tmp_path, clock=Clock())
    exchange.deadline, exchange.timeout = 50, 50
    long_list = {"$": "list", "v": list(range(100))}
    with pytest.raises(Timeout, match="did not finish within 50 s"):
        exchange.answer(answer({"$": "list", "v": [path_value({"report.json": b"{}"}), long_list]}), [])
    assert list(tmp_path.iterdir()) == []
    exchange.deadline = exchange.clock.now + 1000
    assert exchange.answer(answer(long_list), []) == list(range(100))  # read within its time


def test_a_deadline_that_passes_while_files_are_written_stops_the_writing(tmp_path):
    exchange = Exchange(tmp_path, clock=Clock())
    exchange.deadline, exchange.timeout = 200, 200
    with pytest.raises(Timeout):
        exchange.answer(answer(path_value({f"f{i}": b"" for i in range(150)})), [])
    assert 0 < len(list((tmp_path / "read-back-1").iterdir())) < 150
