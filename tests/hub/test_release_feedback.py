"""nbgrader's release_feedback on the hub (perfaudit/hub/release_feedback.py): each released page readable by the
student who fetches it, whatever mode the course's umask made it with."""

import stat

from perfaudit.hub import release_feedback


def test_a_released_feedback_page_is_readable_whatever_mode_it_was_made_with(tmp_path, monkeypatch):
    """nbgrader's release_feedback copies a page with its own mode: made 0660 under the course's umask, it would be
    unreadable to the student's Fetch Feedback."""
    def copy_as_nbgrader(self):
        page = tmp_path / "abc123.html"
        page.write_text("<html></html>")
        page.chmod(0o660)

    monkeypatch.setattr(release_feedback.ExchangeReleaseFeedback, "copy_files", copy_as_nbgrader)
    step = release_feedback.ReadableReleaseFeedback.__new__(release_feedback.ReadableReleaseFeedback)
    step.dest_path = str(tmp_path)
    step.copy_files()
    assert oct(stat.S_IMODE((tmp_path / "abc123.html").stat().st_mode)) == "0o644"
