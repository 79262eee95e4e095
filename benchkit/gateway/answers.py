"""The host's answer relayed to the agent as it comes, never held whole: a text body
(JSON, HTML, ...) piece by piece with the host's root URL made the door's (what may be
the start of it at a piece's end is carried over to the next piece), a gzip body
inflated piece by piece (each piece bounded), any other body (git's packs) as is. An
answer that fits one piece keeps a Content-Length; a longer text answer is sent
chunked, since its length after the rewrite is known only at its end. What the tool is
sent of a host's answer counts against its trial's downloads as it goes (Sending)."""

from __future__ import annotations

import http.client
import re
import socket
import zlib
from collections.abc import Callable, Iterator
from io import BufferedIOBase
from typing import BinaryIO, Protocol

from benchkit.errors import BenchkitError

CHUNK = 64 * 1024
SEND_SECONDS = 60.0  # how long a piece of an answer may wait for the tool to read
TEXT_TYPES = ("application/json", "text/", "application/javascript", "application/xml")
# Of an answer: hop by hop, or the host's session.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "transfer-encoding", "upgrade", "content-length", "host",
                        "authorization", "accept-encoding", "expect", "cookie", "set-cookie"})


class Spent(OSError, BenchkitError):
    """The trial's downloads passed their limit in the middle of an answer."""


class Sending:
    """The tool's side of the connection for writing: every byte sent, or an error; a
    tool that stops reading for SEND_SECONDS is given up on. While `meter` is set (a
    host's answer being relayed), each write is counted against the trial's downloads
    first, and none goes out past their limit."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self.closed = False
        self.meter: Callable[[int], bool] | None = None

    def write(self, data: bytes) -> int:
        if self.meter is not None and not self.meter(len(data)):
            raise Spent("the trial's downloads passed their limit")
        self._sock.settimeout(SEND_SECONDS)  # reads set their own (doors.Arrival)
        self._sock.sendall(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class Rewriter:
    """`root` (the host's root URL, not followed by a digit: not a longer port) made
    `own` in a body fed in pieces; the same bytes as one substitution over the whole."""

    def __init__(self, root: bytes, own: bytes):
        self._root = re.compile(re.escape(root) + rb"(?![0-9])")
        self._width, self._own = len(root), own
        self._carry = b""

    def feed(self, data: bytes) -> bytes:
        data = self._carry + data
        cut = len(data) - self._width  # a match starting before it is whole, its next byte in
        out, at = [], 0
        for match in self._root.finditer(data):
            if match.start() >= cut:
                break
            out += [data[at:match.start()], self._own]
            at = match.end()
        keep = max(at, cut)
        out.append(data[at:keep])
        self._carry = data[keep:]
        return b"".join(out)

    def end(self) -> bytes:
        rest, self._carry = self._root.sub(self._own, self._carry), b""
        return rest

    def whole(self, data: bytes) -> bytes:
        return self._root.sub(self._own, data)


def _plain(answer: http.client.HTTPResponse, gzipped: bool) -> Iterator[bytes]:
    inflate = zlib.decompressobj(wbits=31) if gzipped else None
    while chunk := answer.read1(CHUNK):
        if inflate is None:
            yield chunk
            continue
        yield inflate.decompress(chunk, CHUNK)
        while inflate.unconsumed_tail:  # a bomb inflates a piece at a time, never at once
            yield inflate.decompress(inflate.unconsumed_tail, CHUNK)
    answer.read()  # the end of a chunked body (its last chunk and trailers)
    if inflate is not None:
        yield inflate.flush()


def _text(answer: http.client.HTTPResponse, gzipped: bool, rewriter: Rewriter) -> Iterator[bytes]:
    for piece in _plain(answer, gzipped):
        if out := rewriter.feed(piece):
            yield out
    if out := rewriter.end():
        yield out


class Sink(Protocol):
    """What relays an answer: the handler's side towards the agent."""

    command: str

    @property
    def wfile(self) -> BinaryIO | BufferedIOBase: ...

    def send_response_only(self, code: int, message: str | None = None) -> None: ...
    def send_header(self, keyword: str, value: str) -> None: ...
    def end_headers(self) -> None: ...


def relay(sink: Sink, answer: http.client.HTTPResponse, rewriter: Rewriter) -> int:
    """Send the host's answer to the agent: its status, its headers (hop-by-hop ones
    dropped, the host's URLs in Location and Link rewritten), its body as it comes; the
    body's bytes sent."""
    kind = (answer.getheader("Content-Type") or "").lower()
    encoding = (answer.getheader("Content-Encoding") or "").lower()
    textual = kind.startswith(TEXT_TYPES) and encoding in ("", "identity", "gzip")
    sink.send_response_only(answer.status, answer.reason)
    for name, value in answer.getheaders():
        lower = name.lower()
        if lower in HOP_BY_HOP or (textual and lower == "content-encoding"):
            continue
        if lower in ("location", "link", "content-location"):
            value = rewriter.whole(value.encode("latin-1")).decode("latin-1")
        sink.send_header(name, value)
    length = answer.getheader("Content-Length")
    if sink.command == "HEAD" or answer.status in (204, 304):
        sink.send_header("Content-Length", length or "0")
        sink.end_headers()
        answer.read()
        return 0
    if textual:
        return _send(sink, _text(answer, encoding == "gzip", rewriter), None)
    return _send(sink, _plain(answer, False), length)


def _send(sink: Sink, pieces: Iterator[bytes], length: str | None) -> int:
    """The body: with the host's length when kept, else whole when it fits a piece,
    else chunked."""
    write = sink.wfile.write
    head, ended = b"", False
    if length is None:
        held: list[bytes] = []
        while sum(map(len, held)) < CHUNK:
            piece = next(pieces, None)
            if piece is None:
                ended = True
                break
            held.append(piece)
        head = b"".join(held)
        if ended:
            length = str(len(head))
    sink.send_header(*(("Content-Length", length) if length is not None
                       else ("Transfer-Encoding", "chunked")))
    sink.end_headers()
    chunked = length is None
    sent = 0
    for piece in (head, *()) if ended else _chain(head, pieces):
        if not piece:
            continue
        sent += len(piece)
        write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
    if chunked:
        write(b"0\r\n\r\n")
    return sent


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest
