"""The tables of an HTML page as data: what the class report shows, read the way a test compares it."""

from html.parser import HTMLParser


class Tables(HTMLParser):
    """Every table of a page with an id: {id: [[(text, data-value or None) per cell] per body row]}."""

    def __init__(self, page):
        super().__init__()
        self.tables, self.table, self.row, self.cell, self.in_body = {}, None, None, None, False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "id" in attrs:
            self.table = self.tables.setdefault(attrs["id"], [])
        elif tag == "tbody":
            self.in_body = True
        elif tag == "tr" and self.table is not None and self.in_body:
            self.row = []
            self.table.append(self.row)
        elif tag == "td" and self.row is not None:
            self.cell = ["", attrs.get("data-value")]

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row.append((self.cell[0], self.cell[1]))
            self.cell = None
        elif tag == "table":
            self.table, self.row, self.in_body = None, None, False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[0] += data
