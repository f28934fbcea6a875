"""`make lab`'s working copy: made from the release in notebooks/, or left to Fetch where the exchange releases."""

from courses import make_course

from perfaudit import ASSIGNMENT, lab, paths, workcopy
from perfaudit.instructor import course


def test_the_working_copy_comes_from_the_release_unless_the_exchange_releases_the_assignment(tmp_path):
    course_dir = make_course(tmp_path)
    work = workcopy.assignment_dir(course_dir)
    _, env, _ = lab.lab_command(course_dir)

    said = lab.working_copy(course_dir, env)
    assert sorted(p.name for p in work.glob("*.ipynb")) == sorted(paths.STAGES.values()), said
    assert "Your working copy" in said

    for notebook in work.iterdir():
        notebook.unlink()
    work.rmdir()
    course.nbgrader("release_assignment", ASSIGNMENT, course_dir=course_dir)
    said = lab.working_copy(course_dir, env)
    assert not work.exists(), "make lab copied notebooks/ although the exchange releases the assignment"
    assert "Nbgrader > Assignment List > Fetch" in said
    assert lab.working_copy(course_dir, env) == said, "the advice is repeated until the student fetches"
