"""What perfaudit/hub/held_memory.py finds of the memory no resident set shows: real memfds, files in /dev/shm (a
tmpfs), SysV segments, each held the way a student's kernel can hold it."""

import os
import pwd
import secrets

from memory_holders import KERNEL_SHARED, MB, MEMFD, SEGMENT, TMPFS_FILE, remove_segments, start, stop

from perfaudit.hub import held_memory

SHARED_MEMORY = "/dev/shm"


def test_dev_shm_is_one_of_the_tmpfs_devices():
    assert os.stat(SHARED_MEMORY).st_dev in held_memory.tmpfs_devices()


def test_a_memfd_counts_whether_its_descriptor_or_only_a_mapping_of_one_page_holds_it():
    """Wherever the mapping is: maps writes a low address with leading zeros, map_files without."""
    devices = held_memory.tmpfs_devices()
    holders = [start(MEMFD, 16 * MB, how) for how in ("open", "mapped", "mapped low")]
    try:
        assert [said for _, said in holders] == ["holding"] * 3
        for process, _ in holders:
            assert list(held_memory.unnamed_files(process.pid, devices).values()) == [16 * MB], process.args
    finally:
        stop(*(process for process, _ in holders))


def test_a_file_removed_from_a_tmpfs_counts_and_a_named_one_is_left_to_the_walk():
    devices = held_memory.tmpfs_devices()
    path = f"{SHARED_MEMORY}/perfaudit-test-{secrets.token_hex(4)}"
    (removed, said), (named, also) = start(TMPFS_FILE, path, 16 * MB, "removed"), start(TMPFS_FILE, path + "n",
                                                                                          8 * MB, "named")
    try:
        assert said == also == "holding"
        assert list(held_memory.unnamed_files(removed.pid, devices).values()) == [16 * MB]
        assert held_memory.unnamed_files(named.pid, devices) == {}, "a named file would count twice: the walk has it"
    finally:
        stop(removed, named)
        os.unlink(path + "n")


def test_a_shared_anonymous_mapping_and_an_attached_segment_are_not_files_of_the_process():
    """Both are the kernel's own shared memory, with no name left, like a memfd: a segment is counted for its maker
    (segments), a shared anonymous mapping in the resident set of each process that maps it."""
    process, said = start(KERNEL_SHARED)
    try:
        assert said == "holding"
        assert held_memory.unnamed_files(process.pid, held_memory.tmpfs_devices()) == {}
    finally:
        stop(process)


def test_a_segment_is_its_maker_s_even_given_away_with_what_it_holds_and_no_process_attached(two_students):
    maker, given = two_students
    process, said = start(SEGMENT, 8 * MB, "detached", pwd.getpwnam(given).pw_uid, account=maker)
    segment = int(said)
    try:
        assert process.wait(timeout=30) == 0
        found = [seen for seen in held_memory.segments() if seen.id == segment]
        assert found == [held_memory.Segment(segment, pwd.getpwnam(maker).pw_uid, 0, 8 * MB)]
    finally:
        remove_segments(segment)


def test_a_segment_a_process_has_attached_is_not_removed_and_once_it_is_detached_it_is(two_students):
    process, said = start(SEGMENT, 4 * MB, "attached", -1, account=two_students[0])
    segment = next(seen for seen in held_memory.segments() if seen.id == int(said))
    try:
        assert segment.attached == 1
        assert not held_memory.remove_detached(segment._replace(attached=0)), "removed while attached"
        assert any(seen.id == segment.id for seen in held_memory.segments())
        stop(process)
        assert held_memory.remove_detached(segment._replace(attached=0))
        assert not any(seen.id == segment.id for seen in held_memory.segments())
    finally:
        stop(process)
        remove_segments(segment.id)
