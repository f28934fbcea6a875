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


def test_the_grader_s_loop_jit_reports_each_trace_on_stdin_and_keeps_the_loop_s_options(namespace, monkeypatch):
    import types

    import IPython

    asked = []
    kernel = types.SimpleNamespace(raw_input=lambda prompt: asked.append(prompt) or "")
    monkeypatch.setattr(IPython, "get_ipython", lambda: types.SimpleNamespace(kernel=kernel))

    def train(sizes, jit):
        step = jit(lambda x, stage: x * stage, static_argnums=1)
        return [float(step(np.ones(n, np.float32), stage).sum()) for n, stage in sizes]

    namespace["train"] = train
    ref = ask({"op": protocol.LOOKUP, "name": "train"})["value"]
    for restart, expected in ((None, [3.0, 3.0, 6.0]), ([[1.0] * 3, [2.0] * 3], [6.0, 6.0, 12.0])):
        asked.clear()
        jit = {"$": protocol.LOOPJIT, "id": 7, "restart": restart}
        sizes = {"$": protocol.LIST, "v": [{"$": protocol.LIST, "v": pair} for pair in ([3, 1], [3, 1], [3, 2])]}
        reply = ask({"op": protocol.CALL, "ref": ref["id"], "args": [sizes, jit], "kwargs": {}})
        assert reply["ok"], reply
        # (3, stage 1) and (3, stage 2): the repeat is cached; "0": x * stage is no step's arithmetic (never summed)
        assert asked == ["perfaudit-traced 7 0 0"] * 2  # and "0": the first function made with the jit
        assert reply["value"]["v"] == expected  # restarted: the ones the loop was given are twos in the program


def test_a_watching_loop_jit_reports_the_batches_that_reached_it_once_the_call_has_returned(namespace, monkeypatch):
    """One question per loop, after it returned (so a timed loop pays one, not one a step): which of the grader's
    batches went into the functions made with the jit; none is said as "-"."""
    import types

    import IPython

    from perfaudit.autograde.evidence.loop_jit import fingerprint

    asked = []
    kernel = types.SimpleNamespace(raw_input=lambda prompt: asked.append(prompt) or "")
    monkeypatch.setattr(IPython, "get_ipython", lambda: types.SimpleNamespace(kernel=kernel))
    batches = [np.arange(6, dtype=np.float32).reshape(2, 3) + k for k in (0.5, 10.5, 20.5)]

    def train(steps, jit):
        step = jit(lambda x: (x @ np.ones(3, np.float32)).sum())
        return [float(step(x)) for x in batches[:steps]]

    namespace["train"] = train
    ref = ask({"op": protocol.LOOKUP, "name": "train"})["value"]
    for steps, said in ((2, "0,1"), (0, "-")):
        asked.clear()
        jit = {"$": protocol.LOOPJIT, "id": 9, "restart": None, "watch": [fingerprint(x) for x in batches]}
        assert ask({"op": protocol.CALL, "ref": ref["id"], "args": [steps, jit], "kwargs": {}})["ok"]
        assert asked[-1] == f"perfaudit-fed 9 {said}" and sum("perfaudit-fed" in a for a in asked) == 1


def test_a_handed_out_loop_is_made_from_the_grader_s_file_not_the_kernel_s_module(namespace, monkeypatch, tmp_path):
    """The grader's handout value, called or handed in as an argument: the kernel makes the loop anew from the text
    the grader sent, so a handout module the student patched (or an original_train rebound) is not what runs."""
    from perfaudit import handout
    from perfaudit.autograde.evidence.handed_out import HandedOut
    from perfaudit.autograde.wire.channel import Exchange

    def patched(*_):
        raise AssertionError("the kernel's patched handout loop ran")

    monkeypatch.setitem(handout._TRAIN, "A", patched)
    monkeypatch.setattr(handout, "train_a", patched)
    batches, lr0 = handout.data_for("A", np.random.default_rng(3))
    exchange, mirrors = Exchange(tmp_path), []
    loop = exchange.encode(HandedOut.loop_of("A"), mirrors)
    w0 = np.zeros(handout.FEATURES, np.float32)
    args = [exchange.encode(a, mirrors) for a in (w0, [list(b) for b in batches], lr0)]
    reply = ask({"op": protocol.CALL, "fn": loop, "args": args, "kwargs": {}})
    assert reply["ok"], reply
    w = protocol.decode_array(reply["value"]["v"][0])
    np.testing.assert_allclose(w, handout.reference_train(w0, batches, lr0)[0], rtol=1e-4, atol=1e-5)
    namespace["calls"] = lambda train, *a: train(*a)[1]  # a student's function handed the loop as an argument
    ref = ask({"op": protocol.LOOKUP, "name": "calls"})["value"]
    reply = ask({"op": protocol.CALL, "ref": ref["id"], "args": [loop, *args], "kwargs": {}})
    assert reply["ok"] and len(reply["value"]["v"]) == len(batches), reply
