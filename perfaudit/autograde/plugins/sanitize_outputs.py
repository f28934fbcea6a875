"""A notebook's student output as inert text or sanitized HTML: the autograded notebook (Formgrader) and feedback.

A submission's outputs and markdown are HTML the student wrote. Copied raw, a `<script>`, an `onerror` attribute, an
SVG's `onload` or a `javascript:` link would run in the student's feedback page and, worse, in Formgrader's
manual-grading view, which renders the autograded notebook inside the instructor's Jupyter session. This
preprocessor runs last in autograde (so `autograded/`, and whatever Formgrader and generate_feedback render from it,
is clean) and again in generate_feedback (notebooks graded before it existed):

- every output is rebuilt from what it may hold: text, error text, PNG and JPEG images (base64 only), and HTML
  sanitized by nbconvert's SanitizeHTML (bleach) with a small allowlist (tables as pandas writes them, text markup,
  http/https/mailto links). JavaScript, SVG, LaTeX, widget views and every other type are dropped, with a note;
  output metadata keeps only an image's numeric width and height (the templates write it unquoted);
- markdown and raw cells the instructor did not write are cleaned by bleach; a markdown cell whose rendered links
  still lead anywhere but http, https or mailto (a `[link](javascript:...)`) is shown as its source, as text;
- the notebook's widget state (which nbconvert would load and render) is dropped.
Configured in nbgrader_config.py, for plain `nbgrader autograde` and `python -m perfaudit.grade` alike.
"""

import html.parser
import re
from pathlib import Path
from typing import Any

import nbformat
from bleach import ALLOWED_ATTRIBUTES, ALLOWED_TAGS
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors.sanitize import SanitizeHTML
from nbformat.notebooknode import NotebookNode
from nbformat.v4 import new_output
from nbgrader.coursedir import CourseDirectory
from traitlets import Bool, default

# Markup an honest output uses (pandas' to_html: a table with border and class), never style or script.
TAGS = sorted(set(ALLOWED_TAGS) | {"table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption", "p", "div",
                                   "span", "pre", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "sub", "sup",
                                   "dl", "dt", "dd", "small", "kbd", "samp", "var", "del", "ins", "s", "u"})
TABLE_CLASSES = {"dataframe"}  # pandas' own; any other class could borrow the page's styles (Bootstrap's navbar)


def _table_attribute(tag: str, name: str, value: str) -> bool:
    """A table keeps its border, and its class only where every class in it is pandas' own."""
    return name == "border" or (name == "class" and set(value.split()) <= TABLE_CLASSES)


ATTRIBUTES = {**ALLOWED_ATTRIBUTES, "table": _table_attribute, "th": ["colspan", "rowspan"],
              "td": ["colspan", "rowspan"]}
SAFE_SCHEMES = {"http", "https", "mailto"}
IMAGE_URLS = ("data:image/png;base64,", "data:image/jpeg;base64,")  # a markdown cell's attachments, as rendered
IMAGES = ("image/png", "image/jpeg")
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*\Z")
STYLE_ELEMENT = re.compile(r"<style\b.*?</style\s*>", re.IGNORECASE | re.DOTALL)  # pandas' scoped CSS: dropped whole
SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):")
NOT_SHOWN = "[not shown here: {what}; feedback and Formgrader show text, PNG or JPEG images and sanitized HTML]"
SHOWN_AS_TEXT = "*[shown as text: this cell links somewhere other than a web or mail address]*\n\n"


class SanitizeOutputs(SanitizeHTML):
    """nbconvert's SanitizeHTML, applied to every output, to the student's markdown and raw cells, and to the
    notebook's metadata (see the module docstring)."""

    enabled = Bool(True, help="Whether to sanitize (nbconvert's preprocessors are off unless enabled).").tag(
        config=True)

    @default("tags")
    def _tags_default(self):
        return TAGS

    @default("attributes")
    def _attributes_default(self):
        return ATTRIBUTES

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        nb.metadata.pop("widgets", None)
        self._instructors = _instructor_texts(self.config, resources)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any],
                        index: int) -> tuple[NotebookNode, dict[str, Any]]:
        if cell.cell_type == "code":
            cell.outputs = [out for out in (self._output(o) for o in cell.get("outputs", [])) if out is not None]
            return cell, resources
        if cell.source in self._instructors:  # the instructor's own text, unchanged
            return cell, resources
        _keep_images(cell)
        written = cell.source
        cell.source = self.sanitize_html_tags(written)
        if cell.cell_type == "markdown" and not _links_are_safe(cell.source, cell.get("attachments")):
            cell.source = SHOWN_AS_TEXT + _fenced(written)
        return cell, resources

    def sanitize_html_tags(self, html_str: str) -> str:
        return super().sanitize_html_tags(STYLE_ELEMENT.sub("", html_str))

    def _output(self, output):
        """The output rebuilt from what it may hold, or None."""
        kind = output.get("output_type")
        if kind == "stream":
            return new_output("stream", name="stderr" if output.get("name") == "stderr" else "stdout",
                              text=_text(output.get("text")))
        if kind == "error":
            return new_output("error", ename=_text(output.get("ename")), evalue=_text(output.get("evalue")),
                              traceback=[_text(line) for line in output.get("traceback") or []])
        if kind not in ("display_data", "execute_result"):
            return None
        data, dropped = {}, []
        for mime, value in (output.get("data") or {}).items():
            text = _text(value)
            if mime == "text/plain":
                data[mime] = text
            elif mime in IMAGES and BASE64.match(text):
                data[mime] = text
            elif mime == "text/html":
                data[mime] = self.sanitize_html_tags(text)
            else:
                dropped.append(str(mime)[:60])
        if not data:
            data["text/plain"] = NOT_SHOWN.format(what="an output of type " + ", ".join(dropped or ["none"]))
        metadata = {mime: {key: size for key, size in (output.get("metadata") or {}).get(mime, {}).items()
                           if key in ("width", "height") and type(size) is int}
                    for mime in IMAGES if mime in data and isinstance((output.get("metadata") or {}).get(mime), dict)}
        if kind == "execute_result":
            count = output.get("execution_count")
            return new_output(kind, data=data, metadata=metadata, execution_count=count if type(count) is int else None)
        return new_output(kind, data=data, metadata=metadata)


def _text(value):
    if isinstance(value, list):
        value = "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _keep_images(cell):
    """A cell's attachments, PNG and JPEG only (nbconvert renders them as data: URLs in an <img>)."""
    kept = {}
    for name, bundle in (cell.get("attachments") or {}).items():
        images = {m: _text(v) for m, v in (bundle or {}).items() if m in IMAGES and BASE64.match(_text(v))}
        if images:
            kept[str(name)] = images
    if kept:
        cell.attachments = kept
    else:
        cell.pop("attachments", None)


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value or "" for name, value in attrs if name in ("href", "src", "action", "formaction")]


def _links_are_safe(markdown, attachments=None):
    """Whether every link and image the markdown renders to (as nbconvert renders it, attachments as data: URLs) is
    relative, http(s), mailto or a PNG or JPEG attachment, read as a browser reads a URL (tabs and newlines removed,
    control characters and spaces trimmed)."""
    try:
        renderer = IPythonRenderer(escape=False, attachments=attachments or {})
        rendered = MarkdownWithMath(renderer=renderer).render(markdown)
    except Exception:  # noqa: BLE001 - what nbconvert cannot render safely here is shown as text
        return False
    links = _Links()
    links.feed(rendered)
    for url in links.urls:
        url = re.sub(r"[\t\n\r]", "", url).strip("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12"
                                                 "\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ").lower()
        scheme = SCHEME.match(url)
        if url.startswith(IMAGE_URLS):
            continue
        if scheme and scheme.group(1) not in SAFE_SCHEMES:
            return False
    return True


def _fenced(source):
    fence = "~" * max(3, 1 + max((len(run) for run in re.findall(r"~+", source)), default=0))
    return f"{fence}\n{source}\n{fence}"


def _instructor_texts(config, resources):
    """Markdown and raw sources of the instructor's notebook in source/ (left as they are), or none."""
    info = (resources or {}).get("nbgrader", {})
    if not info.get("notebook") or not info.get("assignment"):
        return set()
    coursedir = CourseDirectory(config=config)
    folder = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"]))
    path = folder / f"{info['notebook']}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return set()
    return {cell.source for cell in nb.cells if cell.cell_type in ("markdown", "raw")}
