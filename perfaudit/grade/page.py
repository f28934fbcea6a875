"""What the grading wing's HTML pages share (the class report, classreport.py; the similarity page,
similaritypage.py): a Content Security Policy that allows no request, one style, and the escaping of any text that
came from a submission."""

import html

from perfaudit.grade.escape import one_line

POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: .6em 0; } td, th { border: 1px solid #ddd; padding: 3px 7px;
  vertical-align: top; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; background: #f3f3f3; user-select: none; }
th[aria-sort=ascending]::after { content: " \\25B2"; } th[aria-sort=descending]::after { content: " \\25BC"; }
.plots { display: flex; flex-wrap: wrap; gap: 8px; } .plots figure { margin: 0; }
.note { color: #555; } code, .msg { font-family: ui-monospace, monospace; font-size: .92em; word-break: break-word; }
.low { background: #fde8e8; }
"""


def e(text: object) -> str:
    """Any text as HTML: one printable line (escape.one_line), then escaped."""
    return html.escape(one_line(text), quote=True)
