"""A request body read strictly, as the gateway must: it forwards only what it has read
whole, so a framing it cannot follow is refused (400) rather than guessed at, and a body
larger than it takes is refused (413) as it streams in, before more than the limit is
held: a Content-Length above it at once, a chunked body at the chunk that passes it.
The bytes of a body are reserved from the trial's budget before they are read (the
declared length at once, a chunked body chunk by chunk), so parallel bodies cannot
together pass it; a body refused as it came (too large, badly framed, too slow) gives
back what it reserved: the budget counts the bodies taken whole."""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from io import BufferedIOBase

from benchkit.errors import BenchkitError

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """How much the gateway takes: one request's body, a trial's bodies in all, a
    trial's connections at once, the seconds a started request may take to arrive
    (plus one a 64 KiB); and what a trial may cost the host: the answers' bytes sent to
    its tools, and the host's CPU time while it runs (where it can be read:
    benchkit.gateway.hostcpu)."""

    request_bytes: int = 10 * MB
    trial_bytes: int = 100 * MB
    connections: int = 32
    arrival_seconds: float = 5.0
    download_bytes: int = 256 * MB
    host_cpu_seconds: float = 60.0


class BadBody(ValueError, BenchkitError):
    """A body the gateway cannot read (a bad chunk size or Content-Length): a 400."""


class TooLarge(ValueError, BenchkitError):
    """A body above the limit: a 413, its rest never read."""


def read_body(headers: Message, rfile: BufferedIOBase, limit: int,
              reserve: Callable[[int], bool] = lambda size: True,
              release: Callable[[int], None] = lambda size: None) -> bytes:
    """The whole body of the request whose headers were just read from `rfile`, at most
    `limit` bytes of it, each byte reserved before it is read (`reserve(n)` false: the
    trial's budget is spent)."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        taken = [0]
        try:
            return _chunked(rfile, limit, reserve, taken)
        except BaseException:
            release(taken[0])
            raise
    given = (headers.get("Content-Length") or "0").strip()
    if not re.fullmatch(r"[0-9]{1,18}", given):
        raise BadBody("a Content-Length that is not a whole number")
    length = int(given)
    if length > limit:
        raise TooLarge(f"a body of {length} bytes (at most {limit} are taken)")
    if not reserve(length):
        raise TooLarge(f"a body of {length} bytes: the trial's request bodies would pass "
                       "their limit")
    try:
        body = rfile.read(length) if length else b""
        if len(body) < length:
            raise BadBody("a body shorter than its Content-Length")
    except BaseException:
        release(length)
        raise
    return body


def _chunked(rfile: BufferedIOBase, limit: int, reserve: Callable[[int], bool],
             taken: list[int]) -> bytes:
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
        if not reserve(size):
            raise TooLarge(f"a chunked body of more than {held - size} bytes: the trial's "
                           "request bodies would pass their limit")
        taken[0] += size
        chunk = rfile.read(size)
        if len(chunk) < size:
            raise BadBody("a chunk shorter than its size")
        chunks.append(chunk)
        rfile.readline(1024)


def inflate(body: bytes, encoding: str, limit: int) -> bytes:
    """A git request body as the host reads it: Gitea inflates one whose Content-Encoding
    is `gzip` (members one after another, as Go's gzip reader) before git reads it, so a
    few KiB can make gigabytes of work for the host (and a slow host is not charged to
    the arm). Inflated here instead, at most `limit` bytes (TooLarge past it, BadBody
    when it is not gzip); the host is sent it plain."""
    if encoding != "gzip":  # the host passes any other body to git as it is
        return body
    out, size, data = [], 0, body
    try:
        while data:
            member = zlib.decompressobj(16 + zlib.MAX_WBITS)
            piece = member.decompress(data, limit + 1 - size)  # never more than the limit
            size += len(piece)
            if size > limit:
                raise TooLarge(f"a gzip body of more than {limit} bytes inflated")
            if not member.eof:
                raise BadBody("a gzip body cut short")
            out.append(piece)
            data = member.unused_data
    except zlib.error as error:
        raise BadBody(f"a gzip body that is not gzip ({error})") from None
    return b"".join(out)
