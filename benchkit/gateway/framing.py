"""A request body read strictly, as the gateway must: it forwards only what it has read
whole, so a framing it cannot follow is refused (400) rather than guessed at, and a body
larger than it takes is refused (413) as it streams in, before more than the limit is
held: a Content-Length above it at once, a chunked body at the chunk that passes it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message
from io import BufferedIOBase

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """How much the gateway takes: one request's body, and a trial's bodies in all."""

    request_bytes: int = 10 * MB
    trial_bytes: int = 100 * MB


class BadBody(ValueError):
    """A body the gateway cannot read (a bad chunk size or Content-Length): a 400."""


class TooLarge(ValueError):
    """A body above the limit: a 413, its rest never read."""


def read_body(headers: Message, rfile: BufferedIOBase, limit: int) -> bytes:
    """The whole body of the request whose headers were just read from `rfile`, at most
    `limit` bytes of it."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return _chunked(rfile, limit)
    given = (headers.get("Content-Length") or "0").strip()
    if not re.fullmatch(r"[0-9]{1,18}", given):
        raise BadBody("a Content-Length that is not a whole number")
    length = int(given)
    if length > limit:
        raise TooLarge(f"a body of {length} bytes (at most {limit} are taken)")
    body = rfile.read(length) if length else b""
    if len(body) < length:
        raise BadBody("a body shorter than its Content-Length")
    return body


def _chunked(rfile: BufferedIOBase, limit: int) -> bytes:
    chunks: list[bytes] = []
    held = 0
    while True:
        line = rfile.readline(1024).split(b";")[0].strip()
        if not re.fullmatch(rb"[0-9a-fA-F]{1,16}", line):
            raise BadBody("a chunk size that is not hexadecimal")
        size = int(line, 16)
        if size == 0:
            while rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        held += size
        if held > limit:
            raise TooLarge(f"a chunked body of more than {limit} bytes")
        chunk = rfile.read(size)
        if len(chunk) < size:
            raise BadBody("a chunk shorter than its size")
        chunks.append(chunk)
        rfile.readline(1024)
