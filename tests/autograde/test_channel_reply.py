"""How the grader reads a kernel's reply (channel._read_reply: protocol.reply_base64, then protocol.unpack). The
reply's text is the student's to choose (an IPython formatter for str), so it is read by a pattern, never evaluated,
and its JSON is counted before it is decoded: what any reply costs the grader is linear in its length."""

import base64
import json
import tracemalloc

import pytest

from perfaudit.autograde.wire import agent, protocol
from perfaudit.autograde.wire.channel import StudentError, _read_reply


def read(text):
    """The message a kernel's reply whose text/plain is text holds, as the grader reads it."""
    return _read_reply({"content": {"status": "ok", "user_expressions": {"r": {"status": "ok",
                                                                                "data": {"text/plain": text}}}}})


def shown(json_text):
    """A reply holding json_text, as the kernel shows it: repr() of its base64."""
    return repr(base64.b64encode(json_text.encode()).decode())


def with_value_items(items):
    """A reply whose value is a list of the JSON texts items."""
    return '{"ok":true,"value":[' + ",".join(items) + '],"dirs":[]}'


CAP = protocol.MAX_JSON_VALUES
FRAME = protocol.json_values(with_value_items(["0"]).encode()) - 1  # what the reply around the items counts


def test_an_honest_reply_is_read():
    sent = protocol.reply(agent.encode({"a": [1, 2.5, 'x, [y]: {"z\\}'], "b": None}), [])
    assert read(repr(protocol.pack(sent))) == sent


@pytest.mark.parametrize("text", [
    "[1, 2, 3]", "{'ok': True}", '"e30="', "b'e30='", "'e30=' 'e30='", "'e30=' + 'e30='", " 'e30='", "'e30='\n",
    "'e3 0='", "'e30=\\n'", "'''e30='''", "'e30=", "", None, 42, ["'e30='"],
])
def test_a_reply_that_is_not_one_quoted_string_of_base64_is_refused(text):
    with pytest.raises(StudentError, match="not one quoted string of base64 characters"):
        read(text)


def test_a_reply_that_is_not_base64_or_not_ascii_json_is_refused():
    with pytest.raises(StudentError, match="not base64"):
        read("'e30'")  # its padding cut
    with pytest.raises(StudentError, match="not ASCII"):
        read(shown('{"ok": true, "value": "\u00e9", "dirs": []}'))
    with pytest.raises(StudentError, match="cannot read"):
        read(shown('{"ok": true,'))


def test_a_reply_larger_than_the_grader_reads_is_refused():
    with pytest.raises(StudentError, match="larger than the grader reads"):
        read("'" + "A" * protocol.MAX_REPLY_CHARS + "'")


def at_cap(item):
    """Value items made of item ('{"k%d":[]}' numbered), as many as the cap allows, then 0s: exactly CAP values."""
    per = protocol.json_values(f"[0,{item}]".encode()) - protocol.json_values(b"[0]")
    items = [item % i if "%" in item else item for i in range((CAP - FRAME) // per)]
    items += ["0"] * (CAP - protocol.json_values(with_value_items(items).encode()))
    assert protocol.json_values(with_value_items(items).encode()) == CAP
    return items


def test_a_reply_with_more_values_than_the_cap_is_refused_naming_the_cap():
    items = at_cap("{}")
    assert len(read(shown(with_value_items(items)))["value"]) == len(items)
    with pytest.raises(StudentError, match=f"more than {CAP} values"):
        read(shown(with_value_items([*items, "0"])))


def count(value):
    """The values, keys and containers json.loads makes of value's JSON."""
    if isinstance(value, list):
        return 1 + sum(map(count, value))
    if isinstance(value, dict):
        return 1 + sum(1 + count(item) for item in value.values())
    return 1


@pytest.mark.parametrize("value", [
    0, "", None, [1, "two", 3.5], {"a": 1, "b": [True, {"c": "d"}]}, ["a,b:[{" * 1000], {"[{,:": ",,,"},
    ['quote " and backslash \\ then , [ {', "\\", "\\\\\"", '\\"', ',"'], [[["deep"]]],
])
def test_values_are_counted_outside_strings_only_exactly_for_honest_json(value):
    assert protocol.json_values(json.dumps(value).encode()) == count(value)


@pytest.mark.parametrize("value", [[], {}, [[], {}], {"a": [], "b": {}}])
def test_an_empty_container_counts_one_more_never_fewer(value):
    assert count(value) < protocol.json_values(json.dumps(value).encode()) <= 2 * count(value)


def peak_bytes(text):
    """The most memory the grader holds at once while it reads a reply (refused or not), beyond the text itself."""
    tracemalloc.start()
    try:
        read(text)
    except StudentError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


PER_VALUE = 160  # bytes: what json.loads' dearest values cost it ({"k1": []}: a key, a list and a dict's entry), ~95


def test_what_a_reply_costs_the_grader_is_linear_in_its_length_with_a_small_factor():
    # honest: a 16 MiB file (the text, the bytes, and the file's base64 as JSON text and as a str: ~3.3x)
    file = base64.b64encode(bytes(16 * 2**20)).decode()
    folder = {"$": "path", "kind": "dir", "name": "evidence", "files": {"a.bin": file}}
    honest = repr(protocol.pack(protocol.reply(agent.encode(None), [folder])))
    assert peak_bytes(honest) <= 4 * len(honest)
    # hostile, at the cap: the values that cost json.loads most for their length in the text
    for item in ("{}", '{"k%d":[]}'):
        hostile = shown(with_value_items(at_cap(item)))
        assert peak_bytes(hostile) <= 4 * len(hostile) + PER_VALUE * CAP <= 64 * 2**20
    # hostile, 8 MiB of [{}, {}, ...]: json.loads alone held ~370 MiB for it, literal_eval of such a text ~470x its
    # length; refused by its count, it costs the grader what an honest reply of its length costs
    hostile = shown(with_value_items(["{}"] * (8 * 2**20 // 3)))
    assert peak_bytes(hostile) <= 4 * len(hostile)
