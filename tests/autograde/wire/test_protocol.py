"""The wire protocol between the grader and the student's kernel, both sides as they are, no kernel: each value
crosses and comes back the same, and hostile answers are refused before the grader writes anything."""

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from perfaudit.autograde.evidence import asks
from perfaudit.autograde.evidence.instruments import GraderJit
from perfaudit.autograde.wire import agent, protocol
from perfaudit.autograde.wire.channel import Exchange, RemoteRef, StudentError
from perfaudit.checks.held import SlowFunction


def kernel_answers(value, dirs=()):
    """What the kernel's side replies for value, as the grader receives it (base64 JSON, unpacked)."""
    return protocol.unpack(protocol.pack(protocol.reply(agent.encode(value), [agent.snapshot(d) for d in dirs])))


def to_kernel(exchange, value, mirrors=None):
    """value as the grader sends it, decoded by the kernel's side."""
    sent = exchange.encode(value, [] if mirrors is None else mirrors)
    return agent._decode(protocol.unpack(protocol.pack({"v": sent}))["v"], [])


def answer(value):
    return {"ok": True, "value": value, "dirs": []}


def b64(data):
    return base64.b64encode(data).decode()


def path_value(files, kind="dir", name="evidence"):
    return {"$": "path", "kind": kind, "name": name, "files": {n: b64(d) for n, d in files.items()}}


@pytest.fixture(autouse=True)
def in_a_folder_of_its_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the kernel's side makes the folders the grader sends in its working folder


@pytest.fixture
def exchange(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return Exchange(scratch)


def written(exchange):
    return sorted(str(p.relative_to(exchange.scratch)) for p in exchange.scratch.rglob("*"))


# --- round trips ---


PLAIN = [None, True, 0, -7, 2**70, 1.5, "", "text é", [1, [2, "x"]], {"a": 1, "2": [None]}, {1: "one", None: 2.5}]


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_plain_data_comes_back_the_same_both_ways(exchange, value):
    assert exchange.answer(kernel_answers(value), []) == value
    assert to_kernel(exchange, value) == value


def test_a_tuple_reaches_the_kernel_as_a_tuple_and_comes_back_as_a_list(exchange):
    assert to_kernel(exchange, (1, (2, "x"))) == (1, (2, "x"))
    assert exchange.answer(kernel_answers((1, (2, "x"))), []) == [1, [2, "x"]]


@pytest.mark.parametrize("dtype", sorted(protocol.ARRAY_DTYPES))
def test_an_array_of_every_dtype_comes_back_with_its_dtype_shape_and_bytes(exchange, dtype):
    import ml_dtypes

    array = (np.arange(24) % 2).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype).reshape(2, 3, 4)
    for back in (exchange.answer(kernel_answers(array), []), to_kernel(exchange, array)):
        assert str(back.dtype) == dtype and back.shape == (2, 3, 4) and back.tobytes() == array.tobytes()
        assert back.flags.writeable  # a copy of its own, not a view of the message


def test_a_zero_dimensional_array_comes_back_zero_dimensional(exchange):
    """A statistic JAX or NumPy returns as a 0-d array (jnp.median) reads as a scalar in the grader: float() of a
    1-element 1-d array raises."""
    import jax.numpy as jnp

    for value in (np.array(0.003, dtype=np.float32), jnp.median(jnp.asarray([0.001, 0.003, 0.005], jnp.float32))):
        back = exchange.answer(kernel_answers(value), [])
        assert back.shape == () and float(back) == float(value)


def test_a_jax_array_reaches_the_kernel_as_a_jax_array():
    import jax

    sent = Exchange(Path("/nonexistent")).encode(jax.numpy.ones((2, 2)), [])
    assert sent["jax"] is True
    assert isinstance(agent._decode(sent, []), jax.Array)


def test_an_object_crosses_as_a_reference_that_the_kernel_finds_again(exchange):
    class Thing:
        pass

    thing = Thing()
    ref = exchange.answer(kernel_answers(thing), [])
    assert isinstance(ref, RemoteRef) and repr(ref) == "<the student's Thing>"
    assert to_kernel(exchange, ref) is thing
    function = exchange.answer(kernel_answers(len), [])
    assert function._callable and not ref._callable


def test_a_reference_from_another_kernel_is_not_sent(exchange, tmp_path):
    other = Exchange(tmp_path, channel=object())
    ref = other.answer(kernel_answers(object()), [])
    with pytest.raises(ValueError, match="another kernel"):
        exchange.encode(ref, [])


def test_a_folder_comes_back_as_its_regular_files_in_a_folder_of_the_graders(exchange, tmp_path):
    folder = tmp_path / "results"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("{}")
    (folder / "sub" / "a.txt").write_bytes(b"\0\1")
    (folder / "link").symlink_to(folder / "notes.txt")
    back = exchange.answer(kernel_answers(folder), [])
    assert back.parent == exchange.scratch
    assert sorted(str(p.relative_to(back)) for p in back.rglob("*")) == ["notes.txt", "sub", "sub/a.txt"]
    assert (back / "sub" / "a.txt").read_bytes() == b"\0\1"


def test_a_file_and_a_missing_path_come_back_as_paths_of_that_name(exchange, tmp_path):
    (tmp_path / "report.json").write_text('{"a": 1}')
    back = exchange.answer(kernel_answers([tmp_path / "report.json", tmp_path / "gone.json"]), [])
    assert back[0].name == "report.json" and back[0].read_text() == '{"a": 1}'
    assert back[1].name == "gone.json" and not back[1].exists()


def test_a_test_folder_crosses_with_its_files_and_comes_back_as_the_kernel_left_it(exchange, tmp_path):
    grader_folder = exchange.scratch / "read-back-0"
    grader_folder.mkdir()
    (grader_folder / "report.json").write_text("given")
    mirrors, dirs = [], []
    sent = exchange.encode(grader_folder, mirrors)
    kernel_folder = agent._decode(protocol.unpack(protocol.pack(sent)), dirs)
    assert mirrors == [grader_folder] and dirs == [kernel_folder] and kernel_folder != grader_folder
    assert (kernel_folder / "report.json").read_text() == "given"
    (kernel_folder / "report.json").unlink()
    (kernel_folder / "new.txt").write_text("written by the student's code")
    assert exchange.answer(kernel_answers(None, dirs), mirrors) is None
    assert sorted(p.name for p in grader_folder.iterdir()) == ["new.txt"]


def test_a_folder_the_grader_did_not_make_is_never_sent(exchange, tmp_path):
    with pytest.raises(ValueError, match="only folders made by hidden.new_folder"):
        exchange.encode(tmp_path, [])


def test_a_slow_function_is_one_function_in_the_kernel_however_often_it_is_sent(exchange):
    slow = SlowFunction([0.01])
    first, again = to_kernel(exchange, slow), to_kernel(exchange, [slow])[0]
    assert callable(first) and first is again
    assert exchange.slow == {1: slow}


def test_the_graders_jit_is_numbered_for_the_prompts_that_come_back(exchange):
    jit = GraderJit(np.random.default_rng(0))
    assert exchange.encode(jit, []) == {"$": protocol.SLOWJIT, "id": 1, "new_workload": False}
    assert exchange.slow[1] is jit and jit.number == 1


def test_prompts_are_read_whatever_the_kernel_writes():
    assert protocol.read_prompt(protocol.prompt(asks.ASK_CALL, 3, "16x16", "float32")) == \
        (asks.ASK_CALL, 3, ["16x16", "float32"])
    assert protocol.read_prompt("perfaudit-ready ²") == ("perfaudit-ready", None, [])  # a digit int() refuses
    assert protocol.read_prompt("x" * 1000)[0] == "x" * protocol.MAX_PROMPT_CHARS


def test_requests_and_errors_cross_as_the_kernel_handles_them():
    expression = protocol.request_expression({"op": protocol.LOOKUP, "name": "x"})
    assert expression.startswith(f"__import__('{protocol.AGENT}'")
    reply = protocol.unpack(agent.handle(protocol.pack({"op": "nonsense"})))
    assert reply == {"ok": False, "error": {"type": "ValueError", "message": "unknown request 'nonsense'"}}


# --- hostile answers ---


def refused(exchange, reply, match, mirrors=()):
    with pytest.raises(StudentError, match=match):
        exchange.answer(reply, list(mirrors))
    assert written(exchange) == []  # nothing of a refused answer is written


def nested(depth):
    value = 1
    for _ in range(depth):
        value = {"$": "list", "v": [value]}
    return value


def test_a_value_nested_too_deep_is_refused(exchange):
    assert exchange.answer(answer(nested(protocol.MAX_DEPTH)), []) is not None
    refused(exchange, answer(nested(protocol.MAX_DEPTH + 1)), "nested more than 32")


@pytest.mark.parametrize("value, match", [
    ({"$": "pickle", "data": ""}, "unknown tag 'pickle'"),
    ({"v": []}, "not plain data"),
    ({"$": "list", "v": "abc"}, "not plain data"),
    ({"$": "dict", "v": [[{"$": "list", "v": []}, 1]]}, "keys are not plain data"),
    ({"$": "dict", "v": [[1]]}, "not plain data"),
    ({"$": "ref", "id": "1"}, "not plain data"),
    ({"$": "dirarg", "files": {}}, "unknown tag 'dirarg'"),  # the grader's own tags never come back
    ({"$": "slow", "id": 1}, "unknown tag 'slow'"),
])
def test_an_unknown_or_malformed_value_is_refused(exchange, value, match):
    refused(exchange, answer(value), match)


def array(dtype="float32", shape=(2, 2), data=bytes(16)):
    return {"$": "array", "dtype": dtype, "shape": list(shape), "data": b64(data)}


@pytest.mark.parametrize("value, match", [
    (array("object"), "dtype 'object'"),
    (array("complex64"), "dtype 'complex64'"),
    (array("float32", data=bytes(15)), "bytes do not match"),
    (array("float32", data=bytes(17)), "bytes do not match"),
    (array("float64"), "bytes do not match"),  # 16 bytes are 4 float32 but 2 float64
    (array("float32", shape=(2**30, 2**30)), "bytes do not match"),
    (array("float32", shape=(-1, 4)), "shape"),
    (array("float32", shape=(1,) * 9, data=bytes(4)), "shape"),
    (array("float32", shape=(True, 4), data=bytes(16)), "shape"),
    ({**array(), "data": "not base64!"}, "bytes do not match|not base64"),
    ({**array(), "data": "=" * 24}, "not base64"),
])
def test_an_array_whose_dtype_shape_or_bytes_are_wrong_is_refused(exchange, value, match):
    refused(exchange, answer(value), match)


@pytest.mark.parametrize("name", ["../escaped.txt", "a/../../escaped.txt", "/tmp/escaped.txt", "a//b", "./a", "",
                                  "a/", "nul\0.txt", "x" * 256, "\udcff.txt"])
def test_a_file_name_outside_its_folder_is_refused_and_nothing_written(exchange, name):
    refused(exchange, answer(path_value({"report.json": b"{}", name: b"x"})), "file name outside its folder")


def test_a_file_answer_must_be_one_plain_file(exchange):
    refused(exchange, answer(path_value({"a": b"1", "b": b"2"}, kind="file")), "not one file")
    refused(exchange, answer(path_value({"a/b": b"1"}, kind="file")), "outside its folder")
    refused(exchange, answer(path_value({"a": b"1"}, kind="missing")), "not one file")
    refused(exchange, answer(path_value({}, kind="socket")), "not a folder")


def test_a_file_that_is_also_a_folder_is_refused(exchange):
    refused(exchange, answer(path_value({"a": b"1", "a/b": b"2"})), "a file and a folder of the same name")


def test_too_many_files_in_a_folder_are_refused(exchange):
    files = {f"f{i}": b"" for i in range(protocol.MAX_FILES + 1)}
    refused(exchange, answer(path_value(files)), f"more than {protocol.MAX_FILES} files")


def test_a_file_or_folder_larger_than_the_grader_reads_is_refused(exchange):
    refused(exchange, answer(path_value({"big": bytes(protocol.MAX_FILE_BYTES + 1)})), "a file larger")
    half = bytes(protocol.MAX_SNAPSHOT_BYTES // 2)
    refused(exchange, answer(path_value({"a": half, "b": half, "c": b"1234"})), "a folder larger")


def test_too_many_folders_in_one_answer_are_refused(exchange):
    paths = [path_value({}, kind="missing")] * (protocol.MAX_PATHS + 1)
    refused(exchange, answer({"$": "list", "v": paths}), f"more than {protocol.MAX_PATHS} folders")


def test_an_answer_without_the_folders_it_was_given_is_refused(exchange):
    folder = exchange.scratch / "read-back-0"
    folder.mkdir()
    with pytest.raises(StudentError, match="does not hold the folders"):
        exchange.answer(answer(None), [folder])
    assert folder.exists()  # left as it was


def test_the_kernel_skips_what_the_grader_would_refuse(tmp_path):
    (tmp_path / "big").write_bytes(bytes(protocol.MAX_FILE_BYTES + 1))
    (tmp_path / "bad\udcff").write_bytes(b"x")
    (tmp_path / "report.json").write_text("{}")
    sent = agent.snapshot(tmp_path)
    assert list(sent["files"]) == ["report.json"]
    protocol.Snapshot(sent)  # accepted whole


# --- what the grader keeps: checked before anything is written, within the notebook's budget and the test's time ---


def test_names_nested_deeper_than_the_grader_writes_are_refused_before_any_folder_is_made(exchange):
    deepest = "/".join(["d"] * (protocol.MAX_NAME_PARTS - 1)) + "/f"
    assert exchange.answer(answer(path_value({deepest: b"1"})), []).joinpath(deepest).read_bytes() == b"1"
    exchange.scratch.joinpath("read-back-1").rename(exchange.scratch.parent / "accepted")
    # ~195 KB of nested names made the grader create 96,400 folders
    names = {"/".join(f"{i}-{level}" for level in range(400)) + "/f": b"" for i in range(1)}
    refused(exchange, answer(path_value(names)), "file name outside its folder")
    refused(exchange, answer(path_value({"d/" * protocol.MAX_NAME_PARTS + "f": b""})), "file name outside its folder")


def test_more_folders_than_the_grader_writes_are_refused_before_any_is_made(exchange):
    assert exchange.answer(answer(path_value({f"d{i}/f": b"" for i in range(protocol.MAX_FOLDERS)})), [])
    exchange.scratch.joinpath("read-back-1").rename(exchange.scratch.parent / "accepted")
    refused(exchange, answer(path_value({f"d{i}/f": b"" for i in range(protocol.MAX_FOLDERS + 1)})),
            f"more than {protocol.MAX_FOLDERS} folders")
    refused(exchange, answer(path_value({"/".join(f"{i}-{j}" for j in range(4)) + "/f": b"" for i in range(30)})),
            f"more than {protocol.MAX_FOLDERS} folders")


def test_the_kernel_sends_no_deeper_or_wider_a_folder_than_the_grader_writes(tmp_path):
    deep, wide = tmp_path / "deep", tmp_path / "wide"
    deep.joinpath(*["d"] * protocol.MAX_NAME_PARTS).mkdir(parents=True)
    for level in range(protocol.MAX_NAME_PARTS + 1):
        deep.joinpath(*["d"] * level, "f").write_text(str(level))
    for i in range(protocol.MAX_FOLDERS + 5):
        (wide / f"w{i:03}").mkdir(parents=True)
        (wide / f"w{i:03}" / "f").write_text("")
    sent_deep, sent_wide = protocol.Snapshot(agent.snapshot(deep)), protocol.Snapshot(agent.snapshot(wide))
    assert sorted(len(parts) for parts in sent_deep.files) == list(range(1, protocol.MAX_NAME_PARTS + 1))
    assert len(sent_wide.folders) == len(sent_wide.files) == protocol.MAX_FOLDERS


# --- the evidence first, whatever else is beside it ---


def write_report(folder, artifacts):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps({"timings": {}, "artifacts": artifacts}))
    for name in artifacts.values():
        if isinstance(name, str) and "/" not in name and name not in ("", ".", ".."):
            (folder / name).write_text(f"the {name} the report names")


def test_an_evidence_folder_sends_its_report_and_artifacts_whatever_is_written_beside_them(exchange, tmp_path):
    folder = tmp_path / "evidence"
    write_report(folder, {"jaxpr": "workload.jaxpr.txt", "stablehlo": "workload.stablehlo.txt"})
    for name in ("a.bin", "b.bin"):  # sorted before report.json, 32 MiB together: the whole budget of one folder
        (folder / name).write_bytes(bytes(protocol.MAX_FILE_BYTES))
    (folder / "0-profiles").mkdir()
    (folder / "0-profiles" / "trace.json").write_text("{}")
    assert list(agent.snapshot(folder)["files"]) == ["report.json", "workload.jaxpr.txt", "workload.stablehlo.txt"]
    back = exchange.answer(kernel_answers(folder), [])
    assert json.loads((back / "report.json").read_text())["artifacts"]["jaxpr"] == "workload.jaxpr.txt"
    assert (back / "workload.stablehlo.txt").read_text() == "the workload.stablehlo.txt the report names"


def test_a_file_beside_the_evidence_never_uses_up_what_the_grader_keeps_of_a_notebook(exchange, tmp_path):
    folder = tmp_path / "evidence"
    write_report(folder, {"jaxpr": "workload.jaxpr.txt"})
    (folder / "profile.bin").write_bytes(bytes(protocol.MAX_FILE_BYTES - 1))  # kept with the evidence
    # more reads than a notebook's tests make
    for _ in range(2 * protocol.MAX_NOTEBOOK_BYTES // protocol.MAX_FILE_BYTES):
        back = exchange.answer(kernel_answers(folder), [])
        assert (back / "report.json").is_file() and not (back / "profile.bin").exists()


@pytest.mark.parametrize("report, sent", [
    ("not JSON", ["report.json"]),
    ('["a list"]', ["report.json"]),
    ('{"artifacts": ["workload.jaxpr.txt"]}', ["report.json"]),
    ('{"artifacts": {"jaxpr": "../escaped", "a": "sub/x", "b": 3, "c": "report.json", "d": "kept.txt"}}',
     ["report.json", "kept.txt"]),
])
def test_a_report_that_names_no_plain_artifact_is_sent_alone(tmp_path, report, sent):
    (tmp_path / "sub").mkdir()
    for name in ("workload.jaxpr.txt", "kept.txt", "sub/x", "other.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "report.json").write_text(report)
    assert list(agent.snapshot(tmp_path)["files"]) == sent


def test_an_artifact_that_is_missing_or_a_link_is_not_sent(tmp_path):
    write_report(tmp_path, {"jaxpr": "workload.jaxpr.txt", "stablehlo": "gone.txt", "x": "link.txt"})
    (tmp_path / "a-beside.txt").write_text("not named by the report")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "link.txt").unlink()
    (tmp_path / "link.txt").symlink_to(tmp_path / "workload.jaxpr.txt")
    assert list(agent.snapshot(tmp_path)["files"]) == ["report.json", "workload.jaxpr.txt"]
