"""The tables of a rendered report, read back as a reader sees them: markdown rows by
their first cell, HTML tables as rows of cell texts (each cell's text pieces apart, so
a figure and the interval under it are told from each other)."""

from __future__ import annotations

from html.parser import HTMLParser


def md_row(markdown: str, first: str, after: str = "") -> list[str]:
    """The cells of the first markdown table row whose first cell is `first`, after the
    line that starts with `after` (a heading, say)."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after)) if after else 0
    for line in lines[start:]:
        if line.startswith("| ") and line.split(" | ")[0] == f"| {first}":
            return [cell.strip() for cell in line.strip().strip("|").split(" | ")]
    raise LookupError(f"no row {first!r} after {after!r}")


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self._cell: list[str] | None = None
        self._row: list | None = None
        self._table: dict | None = None
        self._caption: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._table = {"caption": "", "rows": [], "attrs": dict(attrs)}
        elif tag == "caption":
            self._caption = []
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag in ("small", "br") and self._cell is not None:
            self._cell.append("\n")  # a piece of its own

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            pieces = [p.strip() for p in "".join(self._cell).split("\n")]
            self._row.append([p for p in pieces if p])
            self._cell = None
        elif tag == "small" and self._cell is not None:
            self._cell.append("\n")
        elif tag == "tr" and self._row is not None and self._table is not None:
            self._table["rows"].append(self._row)
            self._row = None
        elif tag == "caption" and self._caption is not None and self._table is not None:
            self._table["caption"] = "".join(self._caption).strip()
            self._caption = None
        elif tag == "table" and self._table is not None:
            self.tables.append(self._table)
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        elif self._caption is not None:
            self._caption.append(data)


def html_tables(page: str) -> list[dict]:
    """Every table: {"caption", "attrs", "rows": [[[text piece, ...] per cell] per row]}."""
    parser = _Tables()
    parser.feed(page)
    return parser.tables


def html_table(page: str, header: str) -> dict[str, list[list[str]]]:
    """The first table with a header cell `header`: first cell's text -> the row's cells."""
    for table in html_tables(page):
        if table["rows"] and any(header in piece for cell in table["rows"][0] for piece in cell):
            return {row[0][0]: row for row in table["rows"][1:] if row and row[0]}
    raise LookupError(f"no table with a header {header!r}")


def html_table_captioned(page: str, caption: str) -> dict[str, list[list[str]]]:
    """The first table whose caption starts with `caption`, as html_table gives it."""
    for table in html_tables(page):
        if table["caption"].startswith(caption):
            return {row[0][0]: row for row in table["rows"][1:] if row and row[0]}
    raise LookupError(f"no table captioned {caption!r}")
