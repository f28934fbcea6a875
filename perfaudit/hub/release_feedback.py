"""nbgrader's release_feedback with each released page readable by the student who fetches it (the course's
nbgrader_config.py sets it, for Formgrader's button and `nbgrader release_feedback`).

nbgrader copies each page from feedback/ with the page's own mode. The course's processes make what they write
without other accounts' permissions (the grading service's umask, Formgrader's on the hub): a page released as it
is would be 0640 in the exchange, and the student's Fetch Feedback, another account, could not read it. The
exchange's feedback/ folder (0711) still lists nothing; each page is found by its hash.
"""

import os
import stat

from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback

PAGE_MODE = 0o644  # as the grading service releases a page (perfaudit/serve/exchange.py)


class ReadableReleaseFeedback(ExchangeReleaseFeedback):
    def copy_files(self):
        super().copy_files()
        for entry in os.scandir(self.dest_path):
            if entry.name.endswith(".html") and entry.is_file(follow_symlinks=False) and \
                    entry.stat(follow_symlinks=False).st_uid == os.geteuid():
                if stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) != PAGE_MODE:
                    os.chmod(entry.path, PAGE_MODE)
