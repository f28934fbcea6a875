"""nbgrader's Submit on the hub, its submission the student's and the course owner's alone (make hub sets it in
every student's server: perfaudit/hub/students/nbgrader_config.py).

nbgrader's own submit leaves the folder it writes in inbound/ 0777 and its files 0644, so that the instructor, who is
another account, can read and remove them: every account that learns the folder's name (its student, assignment,
time and a random part) can read the work, and replace it before it is graded. Here the folder is made in inbound/,
which is setgid to the course owner's group (perfaudit/hub/exchange.py): the submission takes that group, and its
modes give the group what nbgrader gave everyone (0770 folders, 0640 files), others nothing. The folders must keep
the setgid bit until nbgrader has written timestamp.txt and the secret: shutil.copytree copies the student's folder's
mode onto the new folder, and a chmod by the student, who is not in the owner's group, drops the bit; so while
nbgrader copies, folders keep the mode they were made with.
"""

import os
import shutil
from contextlib import contextmanager

from nbgrader.exchange.default.submit import ExchangeSubmit

FOLDER_MODE = 0o770  # the student, and the course owner's group: the service collects and removes it
FILE_MODE = 0o640


@contextmanager
def folders_keep_their_mode():
    """shutil.copystat on files only, for the time of nbgrader's copy (copytree calls it for each folder); and what
    is made meanwhile is made without other accounts' permissions."""
    copystat = shutil.copystat
    umask = os.umask(0o027)

    def files_only(src, dst, *, follow_symlinks=True):
        if not os.path.isdir(dst):
            copystat(src, dst, follow_symlinks=follow_symlinks)

    shutil.copystat = files_only
    try:
        yield
    finally:
        shutil.copystat = copystat
        os.umask(umask)


class PrivateSubmit(ExchangeSubmit):
    def copy_files(self):
        with folders_keep_their_mode():
            super().copy_files()
        for dirname, _, filenames in os.walk(self.inbound_path_of_submission()):
            for filename in filenames:
                os.chmod(os.path.join(dirname, filename), FILE_MODE)
            os.chmod(dirname, FOLDER_MODE)

    def inbound_path_of_submission(self):
        return os.path.join(self.inbound_path, self.assignment_filename)

