"""A request body read strictly, as the gateway must: it forwards only what it has read
whole, so a framing it cannot follow is refused (400) rather than guessed at."""

from __future__ import annotations

import re
from email.message import Message
from io import BufferedIOBase


class BadBody(ValueError):
    """A body the gateway cannot read (a bad chunk size or Content-Length): a 400."""


def read_body(headers: Message, rfile: BufferedIOBase) -> bytes:
    """The whole body of the request whose headers were just read from `rfile`."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return _chunked(rfile)
    given = (headers.get("Content-Length") or "0").strip()
    if not re.fullmatch(r"[0-9]{1,18}", given):
        raise BadBody("a Content-Length that is not a whole number")
    length = int(given)
    body = rfile.read(length) if length else b""
    if len(body) < length:
        raise BadBody("a body shorter than its Content-Length")
    return body


def _chunked(rfile: BufferedIOBase) -> bytes:
    chunks: list[bytes] = []
    while True:
        line = rfile.readline().split(b";")[0].strip()
        if not re.fullmatch(rb"[0-9a-fA-F]{1,16}", line):
            raise BadBody("a chunk size that is not hexadecimal")
        size = int(line, 16)
        if size == 0:
            while rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        chunks.append(rfile.read(size))
        rfile.readline()
