"""The wire protocol between the grader (channel.py) and the student's kernel (agent.py): both sides' words, limits
and codecs, in one place.

A request is one silent execute_request whose expression is `__import__(AGENT).handle('<base64 JSON>')`:
{"op": LOOKUP | VALUE | GETATTR | CALL, ...}: the grader runs no code of its own in the kernel beyond the stand-ins it
hands in as arguments. Its value is the reply, base64 JSON too (the grader reads the kernel's repr() of it by a
pattern, reply_base64, and counts its JSON before decoding it, unpack):
{"ok": true, "value": V, "dirs": [S, ...]} or {"ok": false, "error": {"type": ..., "message": ...}}.
A value V is null, a bool, a number, a string, or {"$": tag, ...}: list and tuple {"v": [V, ...]}, dict
{"v": [[V, V], ...]}, array {"dtype", "shape", "data": base64 of exactly shape x dtype's bytes, "jax"}, ref (an
object the kernel keeps, by number), path S (a folder or file as its regular files: {"kind", "name", "files":
{relative name: base64}}); from the grader only: dirarg (a folder of the grader's, as S's "files"), slow and slowjit
(the grader's instruments, which ask back on the kernel's stdin: "<prompt word> <number> ..."; a slowjit with
"new_workload" is that jit of a new tanh(x @ x)), freshjit {"fn": V} (a new jax.jit of a function, made there),
loopjit {"id", "restart"} (a jit for a training loop whose traces the grader counts: loop_jit.py), handout {"name",
"source"} (a function of the grader's handout.py, made anew there: handed_out.py). A call's function is a reference
("ref") or one of these values ("fn"): the grader calls the handed-out loop it made without the student's namespace.
The kernel runs in the student's process, so the grader checks everything it decodes against the limits below, all
of an answer before it writes anything. This module imports nothing heavy: the kernel imports it on every request.
"""

import base64
import binascii
import os
import pathlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from perfaudit.autograde.errors import WireError

if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path

    from numpy import ndarray

AGENT = "perfaudit.autograde.wire.agent"  # the kernel's side; its handle(request) is the only entry point

# Requests
# LOOKUP: a name's value at the moment the grader asks (right after the cell that binds it), a path as a reference
# the grader reads later with VALUE (the folder as it is then)
LOOKUP, VALUE, GETATTR, CALL = "lookup", "value", "getattr", "call"
CALLS = (CALL,)  # the requests that carry arguments

# Value tags
TAG = "$"
LIST, TUPLE, DICT, ARRAY, REF, PATH = "list", "tuple", "dict", "array", "ref", "path"
DIRARG, SLOW, SLOWJIT, FRESHJIT, LOOPJIT, HANDOUT = (  # the grader's only
    "dirarg", "slow", "slowjit", "freshjit", "loopjit", "handout")

MAX_PROMPT_CHARS = 200

# Limits
MAX_REPLY_CHARS = 64 * 2**20  # a reply as the kernel sends it (base64 of JSON)
# Any one part of a message from the kernel (a reply's content, a display message): ZeroMQ drops a longer one and
# the connection with it before the grader holds it in memory, so a kernel cannot make the grader read 700 MB.
MAX_MESSAGE_BYTES = MAX_REPLY_CHARS + 16 * 2**20
MAX_DEPTH = 32  # levels of nesting in a value
# Values, keys and containers in one message's JSON, counted before it is decoded (json_values): each costs
# json.loads up to ~100 bytes whatever its length in the text ({} is 2 characters), so this keeps what they cost the
# grader to ~25 MiB. An honest message holds far fewer: an array or a file crosses as one string, and the folders of
# one answer hold at most MAX_PATHS x MAX_FILES = 16384 files.
MAX_JSON_VALUES = 2**18
ARRAY_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                          "float16", "float32", "float64", "bfloat16"})
MAX_ARRAY_DIMS = 8
MAX_PATHS = 16  # folders and files one answer may hold (an evidence folder, a file or two)
MAX_FILES = 1024  # files in one folder sent
MAX_NAME_PARTS = 8  # a file in a folder sent lies at most 7 folders down
MAX_FOLDERS = 64  # folders in one folder sent
MAX_FILE_BYTES = 16 * 2**20  # one file sent; a larger one is left out (a profile written beside the evidence)
MAX_SNAPSHOT_BYTES = 32 * 2**20  # one folder sent: its base64, twice over, fits in MAX_REPLY_CHARS
# What the grader writes of all the answers of one notebook (they are kept until the notebook ends)
MAX_NOTEBOOK_BYTES = 64 * 2**20
MAX_NOTEBOOK_ENTRIES = 4096  # files and folders
MAX_ERROR_CHARS, MAX_TYPE_CHARS = 2000, 100


# --- values ---------------------------------------------------------------------------------------------------


def encode(value: Any, other: Callable[[Any, int], Any], keep_tuples: bool = True, depth: int = 0) -> Any:
    """value as tagged JSON: plain data here, anything else as other(value, depth) makes it."""
    if depth > MAX_DEPTH:
        raise ValueError(f"a value nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        tag = TUPLE if keep_tuples and isinstance(value, tuple) else LIST
        return {TAG: tag, "v": [encode(item, other, keep_tuples, depth + 1) for item in value]}
    if isinstance(value, dict):
        return {TAG: DICT, "v": [[encode(k, other, keep_tuples, depth + 1), encode(v, other, keep_tuples, depth + 1)]
                                for k, v in value.items()]}
    return other(value, depth)


def decode(value: Any, other: Callable[[str, dict[str, Any], int], Any], tick: Callable[[], None] | None = None,
           depth: int = 0) -> Any:
    """Tagged JSON as Python values, checked: lists, tuples and dicts here, every other tag as other(tag, value,
    depth) makes it. tick() is called at each value (the grader checks its deadline there)."""
    if tick is not None:
        tick()
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if not isinstance(value, dict) or not isinstance(value.get(TAG), str):
        raise WireError("an answer that is not plain data")
    tag = value[TAG]
    if tag in (LIST, TUPLE):
        items = [decode(item, other, tick, depth + 1) for item in _list(value.get("v"))]
        return items if tag == LIST else tuple(items)
    if tag == DICT:
        out = {}
        for pair in _list(value.get("v")):
            if len(_list(pair)) != 2:
                raise WireError("a dict that is not plain data")
            key = decode(pair[0], other, tick, depth + 1)
            if not (key is None or isinstance(key, (str, int, float, bool))):
                raise WireError("a dict whose keys are not plain data")
            out[key] = decode(pair[1], other, tick, depth + 1)
        return out
    return other(tag, value, depth)


def encode_array(value: Any, jax: bool = False) -> dict[str, Any] | None:
    """A NumPy array (or what converts to one) as an array value, or None when its dtype is not in ARRAY_DTYPES."""
    import numpy as np  # the kernel's import of this module loads nothing heavy (test_protocol)

    array = np.asarray(value)
    array = np.ascontiguousarray(array).reshape(array.shape)  # ascontiguousarray makes a 0-d array 1-d
    if str(array.dtype) not in ARRAY_DTYPES:
        return None
    return {TAG: ARRAY, "dtype": str(array.dtype), "shape": list(array.shape), "data": _b64(array.tobytes()),
            "jax": bool(jax)}


def decode_array(value: dict[str, Any]) -> "ndarray":
    """An array value as a NumPy array of its own, its dtype known and its bytes exactly its shape's."""
    import numpy as np  # the kernel's import of this module loads nothing heavy (test_protocol)

    dtype, shape = value.get("dtype"), _list(value.get("shape"))
    if dtype not in ARRAY_DTYPES:
        raise WireError(f"an array of dtype {str(dtype)[:40]!r}, which the grader does not read")
    if len(shape) > MAX_ARRAY_DIMS or not all(type(n) is int and 0 <= n < 2**31 for n in shape):
        raise WireError("an array whose shape is not a few sizes")
    np_dtype = np.dtype(_bfloat16() if dtype == "bfloat16" else dtype)
    count = 1
    for n in shape:
        count *= n
    data = value.get("data")
    if not isinstance(data, str) or len(data) != _b64_chars(count * np_dtype.itemsize):
        raise WireError("an array whose bytes do not match its shape and dtype")
    content = _unb64(data)
    if len(content) != count * np_dtype.itemsize:
        raise WireError("an array whose bytes do not match its shape and dtype")
    return np.frombuffer(content, dtype=np_dtype).reshape(shape).copy()


def _bfloat16():
    import ml_dtypes  # the kernel's import of this module loads nothing heavy (test_protocol)

    return ml_dtypes.bfloat16


# --- folders ---------------------------------------------------------------------------------------------------


def name_parts(name: object) -> tuple[str, ...] | None:
    """The parts of a relative file name the protocol carries ('a/b.txt'), or None: absolute names, '..', '.',
    empty parts, NUL, more than MAX_NAME_PARTS parts and names a file system cannot hold are not carried."""
    if not isinstance(name, str) or not name:
        return None
    parts = tuple(name.split("/", MAX_NAME_PARTS))
    if len(parts) > MAX_NAME_PARTS:
        return None
    for part in parts:
        if part in ("", ".", "..") or "\0" in part:
            return None
        try:
            if len(part.encode("utf-8")) > 255:
                return None
        except UnicodeEncodeError:  # a name that was not UTF-8 where it was read
            return None
    return parts


def snapshot(path: "str | PathLike[str]") -> dict[str, Any]:
    """A folder's regular files (or one file) as a path value; links and special files are left out.

    An evidence folder (one that holds report.json) sends report.json and the files its artifacts name, in that
    order, and nothing else: the only files the checks read, so that nothing written beside them can crowd them
    out or use up what the grader keeps of a notebook. Another folder sends its top-level files first, then each
    folder's, shallowest first. A file over MAX_FILE_BYTES is left out, and so is what the grader would refuse:
    files past MAX_FILES, MAX_SNAPSHOT_BYTES, MAX_FOLDERS or MAX_NAME_PARTS deep.
    """
    path = pathlib.Path(path)
    name = path.name if name_parts(path.name) is not None else "file"
    if path.is_file():
        with open(path, "rb") as handle:
            return {TAG: PATH, "kind": "file", "name": name, "files": {name: _b64(handle.read(MAX_FILE_BYTES))}}
    if not path.is_dir():
        return {TAG: PATH, "kind": "missing", "name": name, "files": {}}
    files: dict[str, str]
    folders: set[tuple[str, ...]]
    files, folders, total = {}, set(), 0
    for full in _in_order(path):
        if len(files) >= MAX_FILES:
            break
        relative = os.path.relpath(full, path)
        parts = name_parts(relative)
        if os.path.islink(full) or not os.path.isfile(full) or parts is None:
            continue
        if len(folders | _folders_of(parts)) > MAX_FOLDERS:
            continue
        if os.path.getsize(full) > MAX_FILE_BYTES:
            continue
        with open(full, "rb") as handle:
            content = handle.read(MAX_FILE_BYTES)
        if total + len(content) > MAX_SNAPSHOT_BYTES:
            continue
        total += len(content)
        folders |= _folders_of(parts)
        files[relative] = _b64(content)
    return {TAG: PATH, "kind": "dir", "name": name, "files": files}


def _in_order(folder):
    """The files of folder that snapshot() may send, in the order it sends them."""
    evidence = evidence_names(folder)
    if evidence is not None:
        return [os.path.join(folder, name) for name in evidence]
    found = []
    for root, dirs, names in os.walk(folder):
        deep = os.path.relpath(root, folder).count(os.sep) + (root != str(folder)) >= MAX_NAME_PARTS - 1
        dirs[:] = [] if deep else sorted(d for d in dirs if not os.path.islink(os.path.join(root, d)))
        found += [os.path.join(root, n) for n in sorted(names)]
    return sorted(found, key=lambda f: (os.path.relpath(f, folder).count(os.sep), f))


EVIDENCE_REPORT = "report.json"


def evidence_names(folder: "str | PathLike[str]") -> list[str] | None:
    """report.json and the plain file names its "artifacts" give, in that order, where folder holds a report.json:
    the files of an evidence folder the checks read (perfaudit/checks/evidence.py); None for another folder."""
    import json  # the kernel's import of this module loads nothing heavy (test_protocol)

    report = os.path.join(folder, EVIDENCE_REPORT)
    if os.path.islink(report) or not os.path.isfile(report):
        return None
    try:
        with open(report, "rb") as handle:
            artifacts = json.loads(handle.read(MAX_FILE_BYTES)).get("artifacts")
    except (ValueError, AttributeError, RecursionError):  # not a JSON object: the checks read it, and fail
        artifacts = None
    named = artifacts.values() if isinstance(artifacts, dict) else ()
    plain = [n for n in named if isinstance(n, str) and "/" not in n and name_parts(n) is not None]
    return list(dict.fromkeys([EVIDENCE_REPORT, *plain]))


class Snapshot:
    """A folder or file the other side sent, checked whole (names, counts, sizes) and decoded, not yet written.
    tick() is called before each file is decoded and written (the grader checks its deadline there)."""

    def __init__(self, value: object, tick: Callable[[], None] | None = None) -> None:
        if not isinstance(value, dict) or not isinstance(value.get("files"), dict):
            raise WireError("a folder answer that is not a folder")
        self.kind, sent = value.get("kind", "dir"), value["files"]
        if self.kind not in ("dir", "file", "missing"):
            raise WireError("a folder answer that is not a folder")
        if len(sent) > MAX_FILES:
            raise WireError(f"more than {MAX_FILES} files in a folder")
        if len(sent) != {"dir": len(sent), "file": 1, "missing": 0}[self.kind]:
            raise WireError("a file answer that is not one file")
        self.files, self.size, self.tick = {}, 0, tick
        for name, data in sent.items():
            if tick is not None:
                tick()
            parts = name_parts(name)
            if parts is None or (self.kind == "file" and len(parts) != 1):
                raise WireError(f"a file name outside its folder: {str(name)[:80]!r}")
            if not isinstance(data, str) or len(data) > _b64_chars(MAX_FILE_BYTES):
                raise WireError(f"a file larger than the grader reads ({MAX_FILE_BYTES // 2**20} MiB)")
            if self.size + len(data) // 4 * 3 - 2 > MAX_SNAPSHOT_BYTES:  # checked before the bytes are decoded
                raise WireError(f"a folder larger than the grader reads ({MAX_SNAPSHOT_BYTES // 2**20} MiB)")
            content = self.files[parts] = _unb64(data)
            if len(content) > MAX_FILE_BYTES:
                raise WireError(f"a file larger than the grader reads ({MAX_FILE_BYTES // 2**20} MiB)")
            self.size += len(content)
            if self.size > MAX_SNAPSHOT_BYTES:
                raise WireError(f"a folder larger than the grader reads ({MAX_SNAPSHOT_BYTES // 2**20} MiB)")
        self.folders = set().union(*map(_folders_of, self.files))
        if len(self.folders) > MAX_FOLDERS:
            raise WireError(f"more than {MAX_FOLDERS} folders in a folder")
        if any(parts in self.folders for parts in self.files):
            raise WireError("a file and a folder of the same name")
        name = value.get("name")
        self.name = next(iter(self.files))[0] if self.kind == "file" else \
            name if isinstance(name, str) and name_parts(name) is not None and "/" not in name else "file"

    @property
    def entries(self) -> int:
        """The files and folders writing it makes."""
        return 1 + len(self.files) + len(self.folders)

    def path_in(self, folder: "Path") -> "Path":
        """Where the snapshot is, written into folder: the folder itself, or the file's path in it."""
        return folder if self.kind == "dir" else folder / self.name

    def unpack_into(self, folder: "Path") -> None:
        """Write the files into folder, made now."""
        folder.mkdir(parents=True, exist_ok=True)
        for parts, content in self.files.items():
            if self.tick is not None:
                self.tick()
            target = folder.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)


# --- messages --------------------------------------------------------------------------------------------------


def request_expression(request: dict[str, Any]) -> str:
    """The user expression that asks the kernel: the agent's handle() of the request as base64 JSON."""
    return f"__import__({AGENT!r}, fromlist=['handle']).handle({pack(request)!r})"


def pack(message: dict[str, Any]) -> str:
    """A request or reply as base64 JSON text."""
    import json  # the kernel's import of this module loads nothing heavy (test_protocol)

    return _b64(json.dumps(message).encode())


def unpack(text: str | bytes) -> dict[str, Any]:
    """base64 JSON text as the message it holds (a dict), or WireError. Decoding costs time and memory linear in
    the text's length with a small factor: the JSON is ASCII (json.dumps writes no other) and holds at most
    MAX_JSON_VALUES values, both checked before json.loads builds anything."""
    import json  # the kernel's import of this module loads nothing heavy (test_protocol)

    try:
        data = binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError, TypeError):
        raise WireError("an answer the grader cannot read (not base64)") from None
    if not data.isascii():
        raise WireError("an answer the grader cannot read (its JSON is not ASCII)")
    if json_values(data) > MAX_JSON_VALUES:
        raise WireError(f"an answer with more than {MAX_JSON_VALUES} values, keys and lists in it, more than the "
                        "grader reads: return large data as a NumPy array, which crosses as one value")
    try:
        message = json.loads(data)
    except (ValueError, TypeError, MemoryError, RecursionError):
        raise WireError("an answer the grader cannot read") from None
    if not isinstance(message, dict):
        raise WireError("an answer the grader cannot read")
    return message


_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[{,:')))
_STRING = re.compile(rb'"[^"]*"')  # a JSON string once its escape pairs are gone: one quote to the next


def json_values(data: bytes) -> int:
    """At least the number of values, keys and containers json.loads makes of data (up to where it finds an error):
    every one but the first follows a '[', '{', ',' or ':' outside a string. Counted in linear time and memory."""
    if b"\\" in data:  # escape pairs gone (an escaped backslash first): every '"' left opens or closes a string
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    return len(_STRING.sub(b"", data.translate(None, _NOT_STRUCTURE))) + 1


REPLY_TEXT = re.compile(r"'[A-Za-z0-9+/]*={0,2}'")  # repr() of a reply: one quoted string of base64 characters


def reply_base64(text: object) -> str:
    """The base64 of a reply from the text/plain the kernel shows of it (repr() of pack()'s string), or WireError
    for any other text: read by a pattern, never evaluated, in time linear in its length."""
    if isinstance(text, str) and len(text) > MAX_REPLY_CHARS:
        raise WireError(f"an answer larger than the grader reads ({MAX_REPLY_CHARS // 2**20} MiB)")
    if not isinstance(text, str) or REPLY_TEXT.fullmatch(text) is None:
        raise WireError("an answer the grader cannot read (not one quoted string of base64 characters)")
    return text[1:-1]


def reply(value: Any, dirs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"ok": True, "value": value, "dirs": dirs}


def error_reply(error: BaseException) -> dict[str, Any]:
    return {"ok": False, "error": {"type": type(error).__name__[:MAX_TYPE_CHARS],
                                   "message": str(error)[:MAX_ERROR_CHARS]}}


def prompt(word: str, number: object, *details: object) -> str:
    """What an instrument asks on the kernel's stdin: '<word> <number> <details...>'."""
    return " ".join(str(part) for part in (word, number, *details))


def read_prompt(text: object) -> tuple[str, int | None, list[str]]:
    """(word, number or None, [details]) of a prompt, however the kernel wrote it."""
    parts = str(text)[:MAX_PROMPT_CHARS].split(" ")
    number = parts[1] if len(parts) > 1 else ""
    return parts[0], int(number) if number.isascii() and number.isdigit() else None, parts[2:]


# --- helpers ---------------------------------------------------------------------------------------------------


def _folders_of(parts):
    """The folders a file's name makes: ('a', 'b', 'c.txt') makes ('a',) and ('a', 'b')."""
    return {parts[:i] for i in range(1, len(parts))}


def _b64(data):
    return base64.b64encode(data).decode("ascii")


def _b64_chars(count):
    """The length of count bytes in base64."""
    return (count + 2) // 3 * 4


def _unb64(text):
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise WireError("bytes that are not base64") from None


def _list(value):
    if not isinstance(value, list):
        raise WireError("an answer that is not plain data")
    return value
