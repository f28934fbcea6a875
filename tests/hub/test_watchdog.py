"""The watchdog (perfaudit/hub/watchdog.py): a student over their memory share loses their largest process alone."""

import os
import pwd
import stat
import subprocess
import time
from functools import partial

import memory_holders
import psutil

from perfaudit.hub import held_memory, watchdog
from perfaudit.serve import limits_notes

PYTHON = "/usr/bin/python3.11"  # a Python every account runs
HOLD = "import sys, time\nheld = b'x' * int(sys.argv[1])\nprint('holding', flush=True)\ntime.sleep(120)\n"
MB = 2**20


def hold(account, size):
    process = subprocess.Popen(["runuser", "-u", account, "--", PYTHON, "-c", HOLD, str(size)], cwd="/",
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "holding"
    return process


def test_a_student_over_their_share_loses_their_largest_process_and_a_classmate_keeps_theirs(two_students, hub):
    greedy, classmate = two_students
    small, large, theirs = hold(greedy, 200 * MB), hold(greedy, 300 * MB), hold(classmate, 300 * MB)
    try:
        assert watchdog.enforce([greedy, classmate], 1024 * MB, hub.hub) == []  # under the share: nothing stopped
        said = watchdog.enforce([greedy, classmate], 400 * MB, hub.hub)
        assert len(said) == 1 and said[0].startswith(f"stopped {greedy}'s process "), said
        assert "over the 400 MB each student may have" in said[0], said
        # runuser says 128 + 9 when its child was killed (SIGKILL)
        assert large.wait(timeout=30) == 128 + 9, "the largest process of the student over their share goes on"
        for process in (small, theirs):
            assert process.poll() is None, "a process under the share was stopped"
    finally:
        for process in (small, large, theirs):
            process.kill()
            process.wait()


def test_a_student_s_server_is_never_stopped_and_a_process_named_like_it_is(two_students, hub):
    """Only what the server started (kernels, terminals) is stopped: the server is what the student works in. The
    server is the process the hub started, not one whose command line says so: a student's own process named
    python -m jupyterhub.singleuser (exec -a) is stopped like any other. A zombie it left (an ended child it never
    waited for) is not said to be stopped: it has ended already and holds nothing."""
    greedy, _ = two_students
    server = hub.start_server(greedy, [PYTHON, "-c", HOLD, str(300 * MB)])
    named = subprocess.Popen(["runuser", "-u", greedy, "--", "bash", "-c",
                              '/bin/sleep 1 & exec -a "python -m jupyterhub.singleuser" "$0" "$@"', PYTHON, "-c", HOLD,
                              str(200 * MB)], cwd="/", stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "holding" and named.stdout.readline().strip() == "holding"
        uid = pwd.getpwnam(greedy).pw_uid
        # the child sleeps past the exec (had it ended before, bash would have waited for it): its end is awaited
        for _ in range(600):
            if any(p.info["uids"].real == uid and p.info["status"] == psutil.STATUS_ZOMBIE
                   for p in psutil.process_iter(["uids", "status"])):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("no zombie was left to be passed over")
        said = watchdog.enforce([greedy], 100 * MB, hub.hub)
        assert len(said) == 1 and "(python -m jupyterhub.singleuser " in said[0], said
        assert named.wait(timeout=30) == 128 + 9, "a process named like a server was spared"
        assert psutil.pid_exists(server.pid) and server.poll() is None, "the server the hub started was stopped"
    finally:
        for process in (server, named):
            process.kill()
            process.wait()


def test_a_stopped_student_is_left_a_note_and_a_classmate_none(two_students, hub, tmp_path):
    """Each stop is a note for its student (what, the figure, the limit, what to do) in the folder the grading
    service reads, the course owner's alone (tests/serve/test_service.py shows the student reading it)."""
    greedy, classmate = two_students
    folder, owner = tmp_path / "limits-notes", pwd.getpwnam("daemon").pw_uid  # daemon: the course's owner here
    limits_notes.prepare(folder, owner)
    large, theirs = hold(greedy, 300 * MB), hold(classmate, 100 * MB)
    try:
        said = watchdog.enforce([greedy, classmate], 200 * MB, hub.hub, partial(watchdog.tell_in, folder))
        assert large.wait(timeout=30) == 128 + 9 and theirs.poll() is None, said
        notes = limits_notes.read(folder)
        assert [note.student for note in notes] == [greedy], notes
        assert "MB) was stopped: your processes held 3" in notes[0].said, notes  # 300 MB and Python's own
        assert "over the 200 MB each student may have. Shut down the kernels you do not use" in notes[0].said
        kept = os.lstat(folder / notes[0].name)
        assert (kept.st_uid, stat.S_IMODE(kept.st_mode)) == (owner, 0o600), "a note others may read"
    finally:
        for process in (large, theirs):
            process.kill()
            process.wait()


def test_files_in_shared_memory_count_and_the_greedy_student_s_largest_go_first(two_students, hub, tmp_path):
    """Files in /dev/shm are memory no process holds: a student over their share with one loses it, before any
    process, and a classmate's file, and the student's link to it, are left as they are (nothing is followed)."""
    greedy, classmate = two_students
    shared = tmp_path / "shm"  # stands in for /dev/shm: the watchdog reads who owns what, and the blocks it holds
    (shared / "mine").mkdir(parents=True)
    ids = {name: (pwd.getpwnam(name).pw_uid, pwd.getpwnam(name).pw_gid) for name in (greedy, classmate)}
    for name, owner in (("big.bin", greedy), ("small.bin", greedy), ("theirs.bin", classmate)):
        (shared / name).write_bytes(b"\1" * ((40 if name != "small.bin" else 1) * MB))
        os.chown(shared / name, *ids[owner])
    (shared / "mine" / "link").symlink_to(shared / "theirs.bin")
    for path in (shared / "mine", shared / "mine" / "link"):
        os.lchown(path, *ids[greedy])
    working = hold(greedy, 10 * MB)
    try:
        said = watchdog.enforce([greedy, classmate], 48 * MB, hub.hub, shared_memory=shared)
        assert len(said) == 1 and said[0].startswith(f"removed {greedy}'s 1 file(s) in {shared} (40 MB)"), said
        assert not (shared / "big.bin").exists() and (shared / "small.bin").exists(), "not the largest, or not alone"
        assert (shared / "theirs.bin").stat().st_size == 40 * MB and (shared / "mine" / "link").is_symlink()
        assert working.poll() is None, "a process was stopped though the file alone put the student over"
        assert watchdog.enforce([greedy, classmate], 48 * MB, hub.hub, shared_memory=shared) == []
    finally:
        working.kill()
        working.wait()


def test_a_memfd_over_the_share_stops_the_process_holding_it_and_the_note_names_it(two_students, hub, tmp_path):
    """A memfd is memory no resident set shows while it is not mapped, and write() into it passes RLIMIT_AS: it
    counts, and the process holding it is stopped, which gives it back; a classmate under their share keeps theirs."""
    greedy, classmate = two_students
    folder = tmp_path / "limits-notes"
    limits_notes.prepare(folder, pwd.getpwnam("daemon").pw_uid)
    (large, said), (theirs, also) = (memory_holders.start(memory_holders.MEMFD, 64 * MB, "open", account=greedy),
                                     memory_holders.start(memory_holders.MEMFD, 16 * MB, "open", account=classmate))
    try:
        assert said == also == "holding"
        said = watchdog.enforce([greedy, classmate], 48 * MB, hub.hub, partial(watchdog.tell_in, folder))
        assert len(said) == 1 and said[0].startswith(f"stopped {greedy}'s process "), said
        assert large.wait(timeout=30) == 128 + 9 and theirs.poll() is None, said
        notes = limits_notes.read(folder)
        assert [note.student for note in notes] == [greedy], notes
        assert "64 MB in memfds and removed shared-memory files your processes hold" in notes[0].said, notes
    finally:
        memory_holders.stop(large, theirs)


def test_a_file_removed_from_dev_shm_and_held_open_counts(two_students, hub):
    """The walk of /dev/shm cannot see a file with no name left, and no resident set holds its bytes: its holder
    does, and is stopped."""
    greedy, _ = two_students
    path = f"/dev/shm/perfaudit-test-{greedy}"
    holder, said = memory_holders.start(memory_holders.TMPFS_FILE, path, 64 * MB, "removed", account=greedy)
    try:
        assert said == "holding" and not os.path.exists(path)
        said = watchdog.enforce([greedy], 48 * MB, hub.hub)
        assert len(said) == 1 and ", 64 MB in memfds and removed shared-memory files" in said[0], said
        assert holder.wait(timeout=30) == 128 + 9, said
    finally:
        memory_holders.stop(holder)


def test_a_sysv_segment_no_process_has_attached_is_removed_and_the_note_says_so(two_students, hub, tmp_path):
    """A segment outlives every process: stopping none gives it back. The student's own, over their share and
    attached by no process, is removed (their working process stays); a classmate's under theirs is left."""
    greedy, classmate = two_students
    folder = tmp_path / "limits-notes"
    limits_notes.prepare(folder, pwd.getpwnam("daemon").pw_uid)
    made = [memory_holders.start(memory_holders.SEGMENT, size, "detached", -1, account=account)
            for account, size in ((greedy, 64 * MB), (classmate, 16 * MB))]
    (mine, _), (theirs, _) = [(int(line), process.wait(timeout=30)) for process, line in made]
    working = hold(greedy, 10 * MB)
    try:
        said = watchdog.enforce([greedy, classmate], 48 * MB, hub.hub, partial(watchdog.tell_in, folder))
        assert len(said) == 1, said
        assert said[0].startswith(f"removed {greedy}'s 1 SysV shared-memory segment(s) that no process had "
                                  "attached (64 MB)"), said
        left = {segment.id for segment in held_memory.segments()}
        assert mine not in left and theirs in left, "the wrong segment removed, or none"
        assert working.poll() is None, "a process was stopped though the segment alone put the student over"
        notes = limits_notes.read(folder)
        assert [note.student for note in notes] == [greedy], notes
        assert "64 MB in your SysV shared-memory segments" in notes[0].said, notes
        assert "(shmctl IPC_RMID, or ipcrm -m)" in notes[0].said, notes
    finally:
        memory_holders.stop(working)
        memory_holders.remove_segments(mine, theirs)


def test_a_segment_given_to_a_classmate_is_counted_and_removed_as_its_maker_s(two_students, hub, tmp_path):
    """shmctl(IPC_SET) lets a segment's maker make a classmate its owner: counted for the owner, a student could put
    a classmate over their share and have the classmate told. It stays its maker's, who alone is told."""
    greedy, classmate = two_students
    folder = tmp_path / "limits-notes"
    limits_notes.prepare(folder, pwd.getpwnam("daemon").pw_uid)
    maker, line = memory_holders.start(memory_holders.SEGMENT, 64 * MB, "detached", pwd.getpwnam(classmate).pw_uid,
                                       account=greedy)
    segment = int(line)
    working = hold(classmate, 10 * MB)
    try:
        assert maker.wait(timeout=30) == 0
        said = watchdog.enforce([greedy, classmate], 48 * MB, hub.hub, partial(watchdog.tell_in, folder))
        assert [note.student for note in limits_notes.read(folder)] == [greedy], said
        assert segment not in {seen.id for seen in held_memory.segments()} and working.poll() is None, said
    finally:
        memory_holders.stop(working)
        memory_holders.remove_segments(segment)


OPEN_MANY = """import os, resource, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
first = os.open("/dev/null", os.O_RDONLY)
for _ in range(int(sys.argv[1])):
    os.dup(first)
print('holding', flush=True)
time.sleep(120)
"""


def test_a_student_whose_processes_hold_too_many_descriptors_loses_the_largest_table_first(two_students, hub):
    """A held-out attacker's processes held 8.4 million descriptors, and the looks that stat each one kept this service
    busy for minutes, while a dd wrote past the exchange's share. The descriptor tables over a student's budget lose
    their largest first, before any of that; a classmate's and the server's are kept."""
    greedy, classmate = two_students
    server = hub.start_server(greedy, [PYTHON, "-c", OPEN_MANY, "3000"])  # the hub's own child: their server
    assert server.stdout.readline().strip() == "holding"
    many = [subprocess.Popen(["runuser", "-u", account, "--", PYTHON, "-c", OPEN_MANY, str(count)], cwd="/",
                             stdout=subprocess.PIPE, text=True)
            for account, count in ((greedy, 3000), (greedy, 200), (classmate, 3000))]
    try:
        for process in many:
            assert process.stdout.readline().strip() == "holding"
        assert watchdog.enforce_descriptors([greedy, classmate], hub.hub, budget=20000) == []
        said = watchdog.enforce_descriptors([greedy, classmate], hub.hub, budget=6000)
        assert len(said) == 1 and said[0].startswith(f"stopped {greedy}'s process "), said
        assert "4096 descriptor slots" in said[0] and "over the 6000 each student may have" in said[0], said
        assert many[0].wait(timeout=30) == 128 + 9  # the largest table that is not the server's
        assert server.poll() is None and many[1].poll() is None and many[2].poll() is None
    finally:
        for process in [server, *many]:
            process.kill()
            process.wait()
