"""The kernel's side of the channel (perfaudit/autograde/wire/agent.py): requests answered, values sent, what it
imports."""

import collections
import pathlib
import sys

import numpy as np
import pytest

from perfaudit.autograde.wire import agent, protocol


def ask(request):
    """The kernel's reply to one request, as the grader unpacks it."""
    return protocol.unpack(agent.handle(protocol.pack(request)))


@pytest.fixture
def namespace(monkeypatch):
    """The student's names, as the kernel's IPython holds them."""
    names = {}
    monkeypatch.setattr(agent, "_user_namespace", lambda: names)
    return names


class Counter:
    def __init__(self):
        self.count = 3

    def add(self, n, times=1):
        return self.count + n * times


def test_a_name_is_looked_up_and_its_object_used_through_references(namespace):
    namespace["counter"] = Counter()
    reply = ask({"op": protocol.LOOKUP, "name": "counter"})
    ref = reply["value"]
    assert reply["ok"] and (ref["$"], ref["callable"], ref["type"]) == ("ref", False, "Counter")
    assert ask({"op": protocol.GETATTR, "ref": ref["id"], "name": "count"})["value"] == 3
    method = ask({"op": protocol.GETATTR, "ref": ref["id"], "name": "add"})["value"]
    assert method["callable"] is True
    assert ask({"op": protocol.CALL, "ref": method["id"], "args": [2], "kwargs": {"times": 5}})["value"] == 13
    assert ask({"op": protocol.VALUE, "ref": ref["id"]})["value"]["type"] == "Counter"  # still an object


def test_a_missing_name_or_a_student_s_exception_is_the_answer_not_a_crash(namespace):
    assert ask({"op": protocol.LOOKUP, "name": "gone"}) == {
        "ok": False, "error": {"type": "NameError", "message": "name 'gone' is not defined"}}
    namespace["boom"] = lambda: 1 / 0
    ref = ask({"op": protocol.LOOKUP, "name": "boom"})["value"]
    assert ask({"op": protocol.CALL, "ref": ref["id"], "args": [], "kwargs": {}})["error"]["type"] == \
        "ZeroDivisionError"


def test_a_path_is_read_later_when_a_test_uses_it(namespace, tmp_path):
    namespace["folder"] = tmp_path
    found = ask({"op": protocol.LOOKUP, "name": "folder"})["value"]
    assert found["later"] is True and found["type"] == type(tmp_path).__name__
    (tmp_path / "report.json").write_text("{}")
    sent = ask({"op": protocol.VALUE, "ref": found["id"]})["value"]
    assert (sent["$"], sent["kind"], list(sent["files"])) == ("path", "dir", ["report.json"])


def test_values_are_sent_as_plain_data_where_they_are_plain_data():
    assert agent.encode(np.float32(1.5)) == 1.5 and agent.encode(np.int64(7)) == 7
    assert agent.encode(collections.deque([1, 2])) == {"$": "list", "v": [1, 2]}
    assert agent.encode(range(2)) == {"$": "list", "v": [0, 1]}
    assert agent.encode(np.arange(2, dtype=np.float32))["$"] == "array"
    assert agent.encode(b"bytes")["$"] == "ref" and agent.encode(np.str_("x")) == "x"
    assert agent.encode(pathlib.PurePosixPath("/nonexistent"))["kind"] == "missing"


def test_the_protocol_imports_nothing_heavy_into_the_kernel():
    import subprocess

    code = "import sys, perfaudit.autograde.wire.agent; print(sorted({'numpy', 'jax', 'json'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
