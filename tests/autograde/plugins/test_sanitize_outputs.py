"""SanitizeOutputs: a submission's own HTML is shown as inert text or sanitized HTML, read in headless Chromium.

The same notebook is exported as nbconvert exports feedback (the classic template, which nbgrader's feedback and
formgrade templates extend), once as submitted and once after SanitizeOutputs: as submitted, every vector of
perfaudit/fixtures/catalog/student_html.py runs in the page (the probe sees script run); sanitized, none does, and
the honest parts (a table, a PNG, text, markdown) are still shown.
"""

import nbformat
from hostile_outputs import page_text, scripts_that_ran
from nbconvert import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from traitlets.config import Config

from perfaudit.autograde.plugins.sanitize_outputs import SHOWN_AS_TEXT, SanitizeOutputs
from perfaudit.fixtures.catalog import student_html
from perfaudit.fixtures.catalog.student_html import INERT_IN_NBCONVERT, MARKERS


def _notebook():
    code = new_code_cell("show()")
    code.outputs = student_html.outputs()
    instructors = new_markdown_cell("The instructor's text: `x -> y` and a < b.")
    return new_notebook(cells=[instructors, code, *student_html.cells()])


def _page(nb, path):
    html, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    path.write_text(html)
    return path.as_uri()


def test_every_vector_runs_in_a_page_of_the_notebook_as_submitted(browser, tmp_path):
    """The probe itself: without SanitizeOutputs each vector's script runs (so the test below can fail)."""
    page = browser.new_page()
    try:
        markers, _, _ = scripts_that_ran(page, _page(_notebook(), tmp_path / "raw.html"))
    finally:
        page.close()
    assert markers == MARKERS - INERT_IN_NBCONVERT


def _sanitized(course):
    """The notebook after SanitizeOutputs, as autograde runs it in `course`, whose source/ holds the instructor's
    markdown (left as it is)."""
    (course / "source" / "audit").mkdir(parents=True)
    nbformat.write(new_notebook(cells=_notebook().cells[:1]), course / "source" / "audit" / "nb.ipynb")
    config = Config({"CourseDirectory": {"root": str(course)}})
    resources = {"nbgrader": {"notebook": "nb", "assignment": "audit"}}
    return SanitizeOutputs(config=config)(_notebook(), resources)[0]


def test_no_script_a_submission_wrote_runs_once_sanitized_and_honest_output_is_kept(browser, tmp_path):
    nb = _sanitized(tmp_path / "course")
    page = browser.new_page()
    try:
        markers, dialogs, console = scripts_that_ran(page, _page(nb, tmp_path / "sanitized.html"))
        text = page_text(page)
        assert page.locator("table td", has_text="3.1e-05").count() == 1  # the pandas-like table, as a table
        assert page.locator("img[src^='data:image/png;base64,']").count() == 2  # both PNGs, neither with an onload
        assert page.locator("strong", has_text="bold answer").count() == 1  # the student's markdown still renders
    finally:
        page.close()
    assert (markers, dialogs, console) == (set(), [], [])
    assert "printed-text <script>" in text  # inert text, shown as written
    assert "markdown-js-link](javascript:" in text  # a markdown cell linking to script: shown as its source
    assert "The instructor's text: x -> y and a < b." in text  # the instructor's markdown untouched
    assert nbformat.validate(nb) is None


def test_outputs_keep_only_what_can_be_shown_safely(tmp_path):
    nb = _sanitized(tmp_path)
    outputs = nb.cells[1].outputs
    kinds = [sorted(o.get("data", {"stream": ""})) for o in outputs]
    assert kinds[0] == ["stream"]
    assert ["application/javascript"] not in kinds and all("image/svg+xml" not in k for k in kinds)
    assert all(o.get("metadata", {}) in ({}, {"image/png": {}}) for o in outputs)  # the injected width is gone
    assert nb.cells[3].source.startswith(SHOWN_AS_TEXT)
    assert "<script>" not in nb.cells[4].source  # the raw cell, escaped


def test_a_pasted_image_and_web_links_keep_a_students_markdown_as_written(tmp_path):
    """An honest answer: an image pasted into markdown (an attachment) and a web link render as the student wrote."""
    answer = new_markdown_cell("![chart](attachment:chart.png) as [JAX says](https://docs.jax.dev/), **in bold**")
    answer.attachments = {"chart.png": {"image/png": student_html.PNG}, "x.svg": {"image/svg+xml": "<svg/>"}}
    written = answer.source
    nb, _ = SanitizeOutputs()(new_notebook(cells=[answer]), {})
    assert nb.cells[0].source == written
    assert list(nb.cells[0].attachments) == ["chart.png"]


def test_a_table_keeps_pandas_class_and_no_class_that_restyles_the_page():
    """A table classed as the page's own parts (Bootstrap's navbar-fixed-top pins it over the real score) loses its
    class; pandas' `dataframe` is kept."""
    forged = '<table class="navbar-fixed-top dataframe"><tr><td>Score: 5.0 / 5.0</td></tr></table>'
    honest = '<table border="1" class="dataframe"><tbody><tr><td>1</td></tr></tbody></table>'
    cells = [new_markdown_cell(forged), new_markdown_cell(honest)]
    nb, _ = SanitizeOutputs()(new_notebook(cells=cells), {})
    assert "navbar" not in nb.cells[0].source and "Score: 5.0 / 5.0" in nb.cells[0].source
    assert nb.cells[1].source == honest
