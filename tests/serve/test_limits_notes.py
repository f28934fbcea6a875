"""perfaudit/serve/limits_notes.py: the notes the hub's limits service leaves for the grading service to tell."""

import os
import stat

from perfaudit.serve import limits_notes


def test_notes_are_left_as_new_private_files_read_oldest_first_and_removed(tmp_path):
    folder = tmp_path / "limits-notes"
    limits_notes.prepare(folder, os.getuid())
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    limits_notes.leave(folder, "alice", "your process 12 was stopped: 3000 MB, over 2048 MB")
    limits_notes.leave(folder, "bob", "your writer in the exchange was stopped")
    (folder / "not-a-note.json").write_text("{broken")
    os.mkfifo(folder / "a-fifo.json")  # skipped without blocking the reader
    notes = limits_notes.read(folder)
    assert [(n.student, n.said) for n in notes] == [
        ("alice", "your process 12 was stopped: 3000 MB, over 2048 MB"),
        ("bob", "your writer in the exchange was stopped")]
    assert all(stat.S_IMODE((folder / n.name).stat().st_mode) == 0o600 for n in notes)
    limits_notes.remove(folder, notes[0])
    limits_notes.remove(folder, notes[0])  # removed twice: no error
    assert [n.student for n in limits_notes.read(folder)] == ["bob"]
    assert limits_notes.read(tmp_path / "never-made") == []
