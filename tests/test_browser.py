"""The student's flow in a real browser: JupyterLab (started as `make lab` starts it) in headless Chromium.

For each released notebook, in a temporary copy of the course:
- solved: type the instructor's solution into each solution cell through its editor (one input event, as a
  paste arrives, so the editor's auto-indent leaves the code as it is), run all cells, see every
  visible self-check print its "Self-check passed" line and every plot render, then press nbgrader's Validate
  button and read its success message;
- untouched: run all cells of the release as it is and see the error the module promises (the stub's
  NotImplementedError), then press Validate and read its failure message.
The Assignments view lists the instructor's release, and nbgrader's instructor tools are not shown to students.
A screenshot of each notebook after its run, and the time each cell took in the browser, are saved under
$PERFAUDIT_BROWSER_ARTIFACTS (default: a pytest temporary folder; the path is printed).

Needs Debian's chromium (/usr/bin/chromium, or $PERFAUDIT_CHROMIUM); .ci/run installs it. The waits are on
JupyterLab's own state (cell prompts, kernel status, dialogs), never on sleeps.
"""

import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from chromium import UI_MS, started_server

from perfaudit import ASSIGNMENT, lab, notebooks, paths, variants
from perfaudit.fixtures.samples import instructor_solution
from perfaudit.instructor import course

pytestmark = pytest.mark.slow  # minutes: the fast tier (make test-fast) leaves it out

# Generous, as chromium.STARTUP_S: a notebook run includes a kernel start and JAX compiles.
RUN_MS = 300_000
VALIDATE_MS = 300_000

SELF_CHECK_LINE = re.compile(r"""print\(\s*f?(["'])(Self-check passed.*?)\1\s*\)""")
PLOTS = re.compile(r"\bplt\.|matplotlib|\bdisplay\(\s*Image")
STUB_ERROR = "NotImplementedError"


def started_lab(course_dir, home):
    """JupyterLab as `make lab` starts it (perfaudit.lab's command, environment and working copy) on course_dir;
    its settings, workspaces and runtime files in home. A context manager: yields a Lab, stops JupyterLab after."""
    argv, env, cwd = lab.lab_command(course_dir)
    said = lab.working_copy(course_dir, env)
    env.pop(paths.EVIDENCE_ENV, None)
    return started_server(argv, env, cwd, home, Path(course_dir) / "work", said)


@pytest.fixture(scope="module")
def jupyter_lab(tmp_path_factory):
    """JupyterLab as `make lab` starts it, on a temporary course: its root work/ holds {solved,untouched}/."""
    root = tmp_path_factory.mktemp("lab-course")
    shutil.copy(paths.ROOT / "nbgrader_config.py", root)
    shutil.copytree(paths.RELEASE, root / "notebooks" / ASSIGNMENT)
    for direction in ("solved", "untouched"):
        shutil.copytree(paths.RELEASE, root / "work" / direction,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "runs"))
    variants.write_id("student-0", root)  # as `make id ID=student-0` states it: notebook 5's variant is drawn from it
    # The instructor's release into the local exchange, for the Assignments view.
    course.nbgrader("release_assignment", ASSIGNMENT, course_dir=root)
    with started_lab(root, tmp_path_factory.mktemp("lab-home")) as running:
        yield running


@pytest.fixture
def page(browser, jupyter_lab, artifacts, request):
    page = browser.new_page()
    page.set_default_timeout(UI_MS)
    failed_before = request.session.testsfailed
    yield page
    if request.session.testsfailed > failed_before:  # what the browser showed when the test failed
        name = re.sub(r"[^\w-]+", "-", request.node.name)
        page.screenshot(path=str(artifacts / f"failed-{name}.png"))
    page.close()
    for session in jupyter_lab.api("GET", "/api/sessions"):  # one kernel at a time on two cores
        jupyter_lab.api("DELETE", f"/api/sessions/{session['id']}")


# --- what the notebooks promise, read from the notebooks themselves -------------------------------------------

def solution_cells(stage):
    """{index in the release: the instructor's solution} for each solution cell, in notebook order."""
    source = {notebooks.nbgrader_meta(c)["grade_id"]: c
              for c in notebooks.read(paths.SOURCE / paths.STAGES[stage]).cells
              if notebooks.nbgrader_meta(c).get("solution")}
    release = notebooks.read(paths.RELEASE / paths.STAGES[stage])
    return {i: instructor_solution(source[notebooks.nbgrader_meta(c)["grade_id"]])
            for i, c in enumerate(release.cells) if notebooks.nbgrader_meta(c).get("solution")}


def self_check_lines(nb):
    """{cell index: the "Self-check passed" lines that cell prints}."""
    # An f-string line is matched up to its first placeholder.
    found = {i: [m[1].split("{")[0].rstrip() for m in SELF_CHECK_LINE.findall(c.source)] for i, c in enumerate(nb.cells)
             if c.cell_type == "code"}
    return {i: lines for i, lines in found.items() if lines}


def plotting_cells(nb):
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and PLOTS.search(c.source)]


# --- driving JupyterLab ------------------------------------------------------------------------------------------

CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell"

# True once no cell is queued or running, the kernel is idle, and either every code cell shows an execution
# count or a cell shows a traceback (Run All stops there).
RUN_FINISHED_JS = """(cells) => {
  const all = [...document.querySelectorAll(cells)];
  const prompts = all.filter(c => c.classList.contains('jp-CodeCell'))
                     .map(c => c.querySelector('.jp-InputPrompt').textContent.trim());
  if (prompts.some(p => p.includes('*'))) return false;
  const indicator = document.querySelector(
      '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
  if (!indicator || indicator.dataset.status !== 'idle') return false;
  const traceback = all.some(c => (c.querySelector('.jp-OutputArea')?.textContent || '').includes('Traceback'));
  return traceback || prompts.every(p => /\\[\\d+\\]/.test(p));
}"""


def open_notebook(page, running, relative_path, n_cells):
    page.goto(f"{running.url}/lab/tree/{relative_path}?reset&token={running.token}")
    wait_for_notebook(page, n_cells)


def wait_for_notebook(page, n_cells):
    """Until the notebook in view shows its n_cells cells and its kernel is idle."""
    page.wait_for_function(f"() => document.querySelectorAll('{CELLS}').length === {n_cells}", timeout=RUN_MS)
    # The kernel is started and idle: the status bar names it.
    page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle$")).wait_for(timeout=RUN_MS)


def type_into_cell(page, index, code):
    """Replace a cell's text through its editor, as a student's paste does (no auto-indent on the way)."""
    editor = page.locator(CELLS).nth(index).locator(".cm-content")
    editor.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(code)
    page.keyboard.press("Escape")  # back to command mode


def run_all(page):
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    page.wait_for_function(RUN_FINISHED_JS, arg=CELLS, timeout=RUN_MS)


def cell_output_text(page, index):
    return page.locator(CELLS).nth(index).locator(".jp-OutputArea").inner_text()


def cell_printed_text(page, index):
    """What a cell printed (stdout), without tracebacks, which quote the cell's own source."""
    outputs = page.locator(CELLS).nth(index).locator('[data-mime-type="application/vnd.jupyter.stdout"]')
    return "\n".join(outputs.all_inner_texts())


def error_cells(page):
    """Indices of cells that show a traceback."""
    texts = page.locator(CELLS).evaluate_all(
        "cells => cells.map(c => [...c.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent).join('\\n'))"
    )
    return [i for i, text in enumerate(texts) if "Traceback" in text]


def screenshot(page, path):
    """The whole notebook in one image: the viewport is made as tall as the notebook, cut below its last cell."""
    height = page.evaluate(
        "() => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer').scrollHeight"
    )
    page.set_viewport_size({"width": 1280, "height": min(200 + height, 16000)})
    # JupyterLab lays out again after the resize: scroll to the top and wait until every cell is in view.
    page.wait_for_function(
        """(cells) => {
          document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer').scrollTop = 0;
          const all = document.querySelectorAll(cells);
          return all.length && all[0].getBoundingClientRect().top >= 0
                 && all[all.length - 1].getBoundingClientRect().bottom <= window.innerHeight;
        }""",
        arg=CELLS,
    )
    bottom = page.locator(CELLS).last.evaluate("cell => cell.getBoundingClientRect().bottom")
    page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": 1280, "height": bottom + 24})
    page.set_viewport_size({"width": 1280, "height": 900})


def validate(page):
    """Press nbgrader's Validate button; return the results dialog's (class list, text)."""
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button").click()
    message = page.locator(".jp-Dialog #validation-message")
    message.wait_for(timeout=VALIDATE_MS)
    result = message.get_attribute("class").split(), message.inner_text()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    return result


def cell_timings(nb_path):
    """[(seconds, cell index, grade id or cell id)] from the timing metadata JupyterLab recorded, slowest first."""
    timings = []
    for i, cell in enumerate(notebooks.read(nb_path).cells):
        recorded = cell.get("metadata", {}).get("execution", {})
        start, end = recorded.get("iopub.execute_input"), recorded.get("shell.execute_reply")
        if start and end:
            seconds = (datetime.fromisoformat(end.replace("Z", "+00:00"))
                       - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
            timings.append((seconds, i, notebooks.nbgrader_meta(cell).get("grade_id") or cell.get("id")))
    return sorted(timings, reverse=True)


# --- the tests ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", sorted(paths.STAGES))
def test_solved_notebook_passes_its_self_checks_and_validate(stage, page, jupyter_lab, artifacts):
    name = paths.STAGES[stage]
    release = notebooks.read(paths.RELEASE / name)
    solutions = solution_cells(stage)
    assert solutions, f"{name} has no solution cells"

    open_notebook(page, jupyter_lab, f"solved/{name}", len(release.cells))
    for index, code in solutions.items():
        type_into_cell(page, index, code)
    run_all(page)

    errors = error_cells(page)
    assert not errors, (f"{name}: cell {errors[:1]} shows an error after the solution was typed in:\n"
                        f"{cell_output_text(page, errors[0]) if errors else ''}")
    lines = self_check_lines(release)
    assert lines, f"{name} has no visible self-check"
    for index, expected in lines.items():
        output = cell_printed_text(page, index)
        for line in expected:
            assert line in output, f"{name}, cell {index}: {line!r} not shown; the output was:\n{output}"
    for index in plotting_cells(release):
        images = page.locator(CELLS).nth(index).locator(".jp-OutputArea img")
        assert images.count() >= 1, f"{name}, cell {index}: no plot rendered"
        assert images.first.evaluate("img => img.complete && img.naturalWidth > 0"), f"{name}: empty plot"
    screenshot(page, artifacts / f"solved-{Path(name).stem}.png")

    classes, text = validate(page)
    assert "validation-success" in classes and "Success! Your notebook passes all the tests." in text, text

    # Validate saved the notebook first: what the editor received is exactly the solution.
    saved = notebooks.read(jupyter_lab.root / "solved" / name)
    for index, code in solutions.items():
        assert saved.cells[index].source == code, f"{name}, cell {index}: the editor changed the typed solution"
    timings = cell_timings(jupyter_lab.root / "solved" / name)
    report = "\n".join(f"{seconds:7.2f} s  cell {i:2d}  {label}" for seconds, i, label in timings)
    (artifacts / f"solved-{Path(name).stem}-cell-times.txt").write_text(report + "\n")
    print(f"\n{name}, cells by time in the browser run:\n{report}")


@pytest.mark.parametrize("stage", sorted(paths.STAGES))
def test_untouched_notebook_shows_what_to_fill_in_and_fails_validate(stage, page, jupyter_lab, artifacts):
    name = paths.STAGES[stage]
    release = notebooks.read(paths.RELEASE / name)
    first_solution = min(solution_cells(stage))

    open_notebook(page, jupyter_lab, f"untouched/{name}", len(release.cells))
    run_all(page)

    errors = error_cells(page)
    assert errors, f"{name}: the untouched notebook ran without an error"
    first = errors[0]
    assert first >= first_solution, f"{name}: cell {first}, before any solution cell, shows an error"
    output = cell_output_text(page, first)
    assert STUB_ERROR in output, f"{name}, cell {first}: expected the stub's {STUB_ERROR}; found:\n{output}"
    for index, expected in self_check_lines(release).items():
        if index >= first:
            assert not any(line in cell_printed_text(page, index) for line in expected), (
                f"{name}, cell {index}: a self-check says it passed on an untouched notebook")
    screenshot(page, artifacts / f"untouched-{Path(name).stem}.png")

    classes, text = validate(page)
    assert "validation-failed" in classes, f"{name}: Validate did not fail an untouched notebook:\n{text}"
    # nbgrader_config.py sets Validator.validate_all: the unfilled solution cell itself is named, not only the
    # NameErrors it causes further down.
    assert STUB_ERROR in text, f"{name}: Validate's message does not name the stub's {STUB_ERROR}:\n{text}"


def test_assignments_view_lists_the_release_and_no_instructor_tools(page, jupyter_lab, artifacts):
    page.goto(f"{jupyter_lab.url}/lab?reset&token={jupyter_lab.token}")
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Nbgrader", exact=True).click()
    items = page.locator(".lm-Menu-itemLabel").all_inner_texts()
    assert "Formgrader" not in items, f"students' JupyterLab shows the instructor's Formgrader: {items}"
    page.locator(".lm-Menu-itemLabel").get_by_text("Assignment List", exact=True).click()
    released = page.locator("#released_assignments_list")
    released.get_by_text(ASSIGNMENT, exact=True).wait_for()
    page.screenshot(path=str(artifacts / "assignments-view.png"))
    view = page.locator(".lm-DockPanel-widget:not(.lm-mod-hidden)").inner_text()
    assert "does not exist" not in view and "Error" not in view, view
