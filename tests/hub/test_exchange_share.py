"""Each student's share of the exchange (perfaudit/hub/exchange_share.py): a student writing far past it is stopped
alone, and the exchange keeps room for a classmate. The exchange is a small file system of its own (a 128 MB tmpfs,
no loop device needed): full, it refuses everyone, as a full disk would."""

import os
import pwd
import subprocess
import tempfile
import time
from pathlib import Path

import nested_folders
import pytest

from perfaudit.hub import exchange, exchange_share

MB = 2**20
DISK = 128 * MB
SHARE = 16 * MB
PYTHON = "/usr/bin/python3.11"  # a Python every account runs
# What a student may type to look like the server the hub started: its command line is theirs to write.
NAMED_AS_SERVER = ["bash", "-c", 'exec -a "python -m jupyterhub.singleuser" "$0" "$@"']
COURSE = "course"
INBOUND = f"{COURSE}/inbound"
# Writes 20 MB a second until stopped or the disk is full; `unlink` first removes its file's name (which still
# fills the disk). Paced: what a writer adds between two looks of the watchdog is its rate times the interval, and
# the test's small disk must hold that (docs/hub.md sizes a class's exchange for it).
WRITER = """import os, sys, time
handle = open(sys.argv[1], "wb")
if sys.argv[2] == "unlink":
    os.unlink(sys.argv[1])
print("writing", flush=True)
while True:
    handle.write(b"x" * 2**20)
    handle.flush()
    time.sleep(0.05)
"""

# Writes size bytes into a file, then keeps them on disk without a descriptor open for writing: "read-only"
# reopens the file read-only, "mapped" fills it through a shared mapping whose descriptor is closed at once; both
# then remove its name ("named" keeps it, and holds it twice more: two descriptors and a mapping).
HOLDER = """import ctypes, mmap, os, sys, time
path, how, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
if how == "mapped":  # mmap(2) itself: Python's mmap keeps a copy of the descriptor, which would be a writer
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                              ctypes.c_int, ctypes.c_int, ctypes.c_long]
    with open(path, "w+b") as handle:
        handle.truncate(size)
        held = [libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, handle.fileno(), 0)]
    ctypes.memset(held[0], ord("x"), size)
else:
    with open(path, "wb") as handle:
        handle.write(b"x" * size)
    held = [open(path, "rb")]
    if how == "named":
        held += [open(path, "rb"), mmap.mmap(held[0].fileno(), size, prot=mmap.PROT_READ)]
if how != "named":
    os.unlink(path)
print("holding", flush=True)
time.sleep(120)
"""


@pytest.fixture
def small_exchange():
    """An exchange with nbgrader's modes on a 128 MB file system of its own."""
    if os.geteuid() != 0:
        pytest.fail("mounts a file system and makes Linux accounts: run it as root (CI does)")
    mount = Path(tempfile.mkdtemp(prefix="exchange-", dir="/tmp"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK},mode=0755", "tmpfs", str(mount)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        mount.rmdir()
        pytest.fail(f"cannot mount a tmpfs here (root with CAP_SYS_ADMIN is needed): {mounted.stderr.strip()}")
    try:
        exchange.prepare(mount, COURSE)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)
        mount.rmdir()


def write_as(account, path, how="keep", named=()):
    """The student's writer; named: the command line it shows instead of its own (exec -a)."""
    process = subprocess.Popen(["runuser", "-u", account, "--", *named, PYTHON, "-c", WRITER, str(path), how],
                               cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "writing", process.stderr.read()
    return process


def hold_as(account, path, how, size):
    process = subprocess.Popen(["runuser", "-u", account, "--", PYTHON, "-c", HOLDER, str(path), how, str(size)],
                               cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "holding", process.stderr.read()
    return process


def free_bytes(path):
    found = os.statvfs(path)
    return found.f_bavail * found.f_frsize


def copy_as(account, size, path):
    """A classmate's file of size bytes written as that account: (return code, what dd said)."""
    done = subprocess.run(["runuser", "-u", account, "--", "dd", "if=/dev/zero", f"of={path}", "bs=1M",
                           f"count={size // MB}", "conv=fsync"], capture_output=True, text=True)
    return done.returncode, done.stderr


def watch_until_stopped(students, root, process, hub, timeout_s=60, every_s=0.25):
    """The watchdog's loop over the exchange, as the limits service runs it, until the writer ends: what it said."""
    said, deadline = [], time.monotonic() + timeout_s
    while process.poll() is None and time.monotonic() < deadline:
        said += exchange_share.enforce(students, root, SHARE, hub)
        time.sleep(every_s)
    return said


@pytest.mark.parametrize("how", ["keep", "unlink"])
def test_a_student_writing_past_their_share_is_stopped_and_a_classmate_still_submits(small_exchange, two_students,
                                                                                     hub, how):
    greedy, classmate = two_students
    junk = small_exchange / INBOUND / f"{greedy}+performance-audit+junk"
    writer = write_as(greedy, junk, how)
    try:
        said = watch_until_stopped([greedy, classmate], small_exchange, writer, hub.hub)
    finally:
        writer.kill()
    err = writer.stderr.read()
    writer.wait()
    # The classmate's copy, four times the share, still fits: the exchange is not full.
    code, dd_said = copy_as(classmate, 64 * MB, small_exchange / INBOUND / f"{classmate}+performance-audit+work")
    assert code == 0, f"the classmate could not write into the exchange: {dd_said}"
    assert writer.returncode == 128 + 9, f"the writer was not stopped (it ended by itself: {err.strip()[-200:]})"
    assert f"stopped {greedy}'s process" in said[0] and f"over the {SHARE // MB} MB" in said[0], said
    if how == "keep":
        kept = junk.stat()
        assert kept.st_uid == pwd.getpwnam(greedy).pw_uid and kept.st_size >= SHARE, "what they wrote was changed"


def test_a_student_under_their_share_writes_on(small_exchange, two_students, hub):
    student, classmate = two_students
    code, dd_said = copy_as(classmate, 32 * MB, small_exchange / INBOUND / f"{classmate}+performance-audit+work")
    assert code == 0, dd_said  # over the share, and not writing now: nothing of theirs to stop
    writer = write_as(student, small_exchange / INBOUND / f"{student}+performance-audit+work")
    try:
        said = exchange_share.enforce(two_students, small_exchange, SHARE, hub.hub)
        assert said == [] and writer.poll() is None, f"a writer under its student's share was stopped: {said}"
    finally:
        writer.kill()
        writer.wait()


def test_folders_nested_past_what_a_path_reaches_are_counted_over_any_share_not_a_crash():
    """3000 folders one in another: os.walk (recursive in Python 3.11) raised RecursionError, which stopped the
    limits service, memory checks included; and past PATH_MAX no path reaches what they hold. Their owner now counts
    as over any share, and the look ends. (Not in tmp_path: pytest's clean-up recurses too, as shutil.rmtree does.)"""
    root = Path(tempfile.mkdtemp(prefix="deep-exchange-"))
    try:
        nested_folders.nest(root, 3000)
        owned = exchange_share.owned_blocks(root)
        assert max(owned[os.geteuid()].values()) == exchange_share.UNREADABLE
    finally:
        nested_folders.remove(root)


@pytest.mark.parametrize("how", ["read-only", "mapped"])
def test_bytes_kept_on_disk_without_a_name_or_a_writer_count_and_their_holder_is_stopped(small_exchange,
                                                                                        two_students, hub, how):
    """Written past the share, then held by a read-only descriptor or a shared mapping alone, its name removed: the
    walk cannot see the file and no descriptor is open for writing, yet the disk stays full. Counted for the
    holder, and the holder stopped: the disk gets its bytes back. The classmate's process is left alone."""
    greedy, classmate = two_students
    before = free_bytes(small_exchange)
    holder = hold_as(greedy, small_exchange / INBOUND / f"{greedy}+performance-audit+junk", how, 24 * MB)
    theirs = hold_as(classmate, small_exchange / INBOUND / f"{classmate}+performance-audit+work", how, 4 * MB)
    try:
        assert before - free_bytes(small_exchange) >= 28 * MB  # both held on disk
        told = []
        said = exchange_share.enforce(two_students, small_exchange, SHARE, hub.hub,
                                      lambda account, text: told.append((account, text)))
        assert len(said) == 1 and said[0].startswith(f"stopped {greedy}'s process "), said
        assert "has 24 MB there, over the 16 MB" in said[0], said
        assert len(told) == 1 and told[0][0] == greedy, told
        assert ("you have 24 MB there in the exchange, over the 16 MB each student may have, and while you are over "
                "it every program you start (kernels, terminals) is stopped. Ask your instructor") in told[0][1]
        assert holder.wait(timeout=30) == 128 + 9, "the holder of bytes past the share goes on"
        assert theirs.poll() is None, "a classmate under their share was stopped"
        assert before - free_bytes(small_exchange) < 8 * MB, "the held bytes are still on disk"
    finally:
        for process in (holder, theirs):
            process.kill()
            process.wait()


# A student's terminal: a loop that starts a short-lived writer again as soon as one ends (or is stopped), and a
# process that makes names alone (empty files: an inode each), holding nothing in the exchange once made.
LOOP = ["bash", "-c", 'while :; do head -c 1M /dev/zero >> "$0"; sleep 0.01; done']
NAMES = """import os, sys, time
folder = sys.argv[1]
os.mkdir(folder)
for n in range(5000):
    open(os.path.join(folder, str(n)), "w").close()
print("made", flush=True)
time.sleep(120)
"""


def test_over_the_share_a_loop_of_short_writers_and_a_maker_of_names_are_stopped_a_classmate_is_not(
        small_exchange, two_students, hub):
    """Stopping only the process that holds a file there let a terminal's loop start a new writer each time (6.3 GB
    past a 1 GB share in 40 s), and a process that made names and held nothing was never stopped. Over the share,
    every process of the student but their server is stopped; the classmate's process is left alone."""
    greedy, classmate = two_students
    folder = small_exchange / INBOUND
    loop = subprocess.Popen(["runuser", "-u", greedy, "--", *LOOP, str(folder / f"{greedy}+fill")], cwd="/")
    names = subprocess.Popen(["runuser", "-u", greedy, "--", PYTHON, "-c", NAMES, str(folder / f"{greedy}+names")],
                             cwd="/", stdout=subprocess.PIPE, text=True)
    theirs = hold_as(classmate, folder / f"{classmate}+performance-audit+work", "named", 4 * MB)
    try:
        assert names.stdout.readline().strip() == "made"
        said, deadline = [], time.monotonic() + 60
        while (loop.poll() is None or names.poll() is None) and time.monotonic() < deadline:
            said += exchange_share.enforce(two_students, small_exchange, SHARE, hub.hub)
            time.sleep(0.25)
        assert loop.returncode == 128 + 9, "the loop starting writers goes on"
        assert names.returncode == 128 + 9, "the maker of names goes on"
        assert said and all(line.startswith(f"stopped {greedy}'s process ") for line in said), said
        assert "every process of theirs but their server is stopped while they are" in said[0], said
        assert theirs.poll() is None, "a classmate under their share was stopped"
    finally:
        for process in (loop, names, theirs):
            process.kill()
            process.wait()


def test_a_file_held_many_ways_under_its_name_counts_once(small_exchange, two_students, hub):
    """12 MB in the exchange, held by two descriptors and a mapping as well: 12 MB, under the 16 MB share."""
    student, _ = two_students
    holder = hold_as(student, small_exchange / INBOUND / f"{student}+performance-audit+work", "named", 12 * MB)
    try:
        assert exchange_share.enforce(two_students, small_exchange, SHARE, hub.hub) == []
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()


def test_the_server_the_hub_started_is_spared_and_a_writer_named_like_a_server_is_not(small_exchange, two_students,
                                                                                      hub):
    """Over the share, the student's server (what the hub started) keeps its file; their own writer, whose command
    line says python -m jupyterhub.singleuser, is stopped like any other."""
    greedy, _ = two_students
    folder = small_exchange / INBOUND
    server = hub.start_server(greedy, [PYTHON, "-c", HOLDER, str(folder / f"{greedy}+held"), "read-only",
                                       str(24 * MB)])
    assert server.stdout.readline().strip() == "holding", server.stderr.read()
    named = write_as(greedy, folder / f"{greedy}+performance-audit+junk", named=NAMED_AS_SERVER)
    try:
        said = exchange_share.enforce([greedy], small_exchange, SHARE, hub.hub)
        assert len(said) == 1 and "(python -m jupyterhub.singleuser " in said[0], said
        assert named.wait(timeout=30) == 128 + 9, "a writer named like a server was spared"
        assert server.poll() is None, "the server the hub started was stopped"
    finally:
        for process in (server, named):
            process.kill()
            process.wait()


def test_empty_files_count_for_the_inode_each_takes(tmp_path):
    """An empty file takes no block of the disk but an inode: 200 000 of them filled the exchange's inodes and the
    limits service's memory while the share counted nothing. Each entry counts ENTRY bytes at least."""
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(50):
        (folder / f"{n:03}").touch()
    owned = exchange_share.owned_blocks(folder)[os.geteuid()]
    assert len(owned) == 50 and set(owned.values()) == {exchange_share.ENTRY}


def test_a_folder_swapped_for_a_link_while_it_is_walked_leads_nowhere(tmp_path):
    """A student swaps their folder for a link to a classmate's submission between the walk seeing it and entering
    it: root's walk by path followed the link and charged the classmate with what it found. The walk opens each
    folder in its opened parent without following a link, and checks it is the folder it saw."""
    classmate = tmp_path / "classmate"
    classmate.mkdir()
    (classmate / "work.bin").write_bytes(b"x" * 65536)
    mine = tmp_path / "mine"
    (mine / "d").mkdir(parents=True)
    seen = os.lstat(mine / "d")
    parent = os.open(mine, os.O_RDONLY)
    try:
        (mine / "d").rename(mine / "moved")
        (mine / "d").symlink_to(classmate)
        assert exchange_share._open_folder("d", parent, seen) is None, "a link now: not entered"
        (mine / "d").unlink()
        (mine / "d").mkdir()
        assert exchange_share._open_folder("d", parent, seen) is None, "another folder now: not the one seen"
        (mine / "d").rmdir()
        (mine / "moved").rename(mine / "d")
        inner = exchange_share._open_folder("d", parent, seen)
        assert inner is not None
        os.close(inner)
    finally:
        os.close(parent)
    (mine / "link").symlink_to(classmate)
    owned = exchange_share.owned_blocks(mine)[os.geteuid()]
    assert (os.stat(classmate / "work.bin").st_dev, os.stat(classmate / "work.bin").st_ino) not in owned
