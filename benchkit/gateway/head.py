"""The head of a host's answer (its status line and headers) read within one budget in
all, where Python's http.client takes at most 64 KiB a line and 100 lines: Gitea copies a
list's query into its `Link` header, so an answer it sends in good order can pass both,
and an answer the gateway cannot read must never pass for a host that failed.

    conn.response_class = Answer   # what benchkit.gateway.upstream's connections read
"""

from __future__ import annotations

import email.parser
import http.client

from benchkit.errors import BenchkitError

HEAD_BYTES = 4 * 1024 * 1024  # an answer's head in all: far beyond any Gitea sends


class HeadTooLarge(http.client.HTTPException, BenchkitError):
    """A head past HEAD_BYTES: the gateway's own limit, not the host's failure."""


def read_head(fp, budget: int = HEAD_BYTES) -> list[bytes]:
    """The header lines up to and including the blank line that ends them, each read
    whole (no line limit), within `budget` bytes in all."""
    lines: list[bytes] = []
    while True:
        line = fp.readline(budget + 1)
        budget -= len(line)
        if budget < 0:
            raise HeadTooLarge(f"an answer's head of more than {HEAD_BYTES} bytes")
        lines.append(line)
        if line in (b"\r\n", b"\n", b""):
            return lines


class Answer(http.client.HTTPResponse):
    """http.client's answer, its headers read by read_head: http.client's own begin(),
    but for the one call that reads the headers (parse_headers, whose limits are module
    constants shared by every client of the process)."""

    def begin(self) -> None:
        if self.headers is not None:
            return
        while True:
            version, status, reason = self._read_status()
            if status != http.client.CONTINUE:
                break
            read_head(self.fp)  # a 100 Continue's headers, dropped
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        text = b"".join(read_head(self.fp)).decode("iso-8859-1")
        self.headers = self.msg = email.parser.Parser(
            _class=http.client.HTTPMessage).parsestr(text)
        encoding = self.headers.get("transfer-encoding")
        self.chunked = bool(encoding and encoding.lower() == "chunked")
        self.chunk_left = None
        self.will_close = self._check_close()
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            try:
                self.length = int(length)
            except ValueError:
                self.length = None
            if self.length is not None and self.length < 0:
                self.length = None
        if status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED) \
                or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True
