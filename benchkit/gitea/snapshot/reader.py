"""A host's JSON answers read in bounded memory: a page of a list is streamed in and its
items come out one at a time, any text longer than TEXT_LIMIT characters replaced by
its digest (benchkit.state.values) as it streams past, so an issue that carries a
hundred megabytes of label descriptions costs the snapshot a window, not the page.

Each value whose text fits in the window (1 MiB) is decoded by the json module (C);
only a larger one is walked here, container by container, and only a string larger
than the window is hashed piecewise: cut between escapes, decoded, and fed to SHA-256
as UTF-16 (where a surrogate pair cut in two hashes as the whole), so the digest does
not depend on where the chunks fell.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Iterable, Iterator

from benchkit.errors import HostError
from benchkit.gitea.client import Client, has_next
from benchkit.state.values import TEXT_LIMIT, digest_of, text_digest

WINDOW = 1 << 20  # characters decoded by the json module in one go, at most
CHUNK = 1 << 16
MAX_DEPTH = 64  # Gitea's answers nest a handful deep
_SPACE = " \t\r\n"
_SCALAR_END = ",]}" + _SPACE
_DECODER = json.JSONDecoder()
_NONE = object()


class JsonStream:
    """One JSON document read from chunks of bytes."""

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks = iter(chunks)
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self.buf, self.pos, self.eof = "", 0, False

    def items(self) -> Iterator:
        """The elements of a top-level array, one at a time (none for a null, which
        Gitea sends for an empty list of reactions)."""
        if self._peek() == "n" and self._scalar() is None:
            return
        if self._peek() != "[":
            raise ValueError("expected a JSON list")
        self.pos += 1
        if self._peek() == "]":
            self.pos += 1
            return
        while True:
            yield self.value(1)
            separator = self._peek()
            self.pos += 1
            if separator == "]":
                return
            if separator != ",":
                raise ValueError(f"expected , or ] in a list, got {separator!r}")

    def value(self, depth: int = 0):
        if depth > MAX_DEPTH:
            raise ValueError("JSON nested too deep")
        first = self._peek()
        if first == '"':
            return self._string()
        if first in "{[":
            whole = self._whole()
            if whole is not _NONE:
                return whole
            return self._object(depth) if first == "{" else self._array(depth)
        return self._scalar()

    # -- the buffer ---------------------------------------------------------------------

    def _more(self) -> bool:
        """Append the next chunk's text, dropping what was read; False at the end."""
        if self.eof:
            return False
        text = ""
        for chunk in self._chunks:
            text = self._utf8.decode(chunk)
            if text:
                break
        else:
            text, self.eof = self._utf8.decode(b"", final=True), True
        self.buf, self.pos = self.buf[self.pos:] + text, 0
        return bool(text) or not self.eof

    def _peek(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                raise ValueError("the JSON ends early")

    # -- values ---------------------------------------------------------------------------

    def _whole(self):
        """The container at pos, if it fits in the window (json's own decoder)."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if self.eof or len(self.buf) - self.pos >= WINDOW:
                    return _NONE
                want = min(WINDOW, 2 * (len(self.buf) - self.pos) + CHUNK)
                while len(self.buf) - self.pos < want and self._more():
                    pass
                continue
            size, self.pos = end - self.pos, end
            return _digested(value) if size > TEXT_LIMIT else value

    def _object(self, depth: int) -> dict:
        self.pos += 1
        found: dict = {}
        if self._peek() == "}":
            self.pos += 1
            return found
        while True:
            if self._peek() != '"':
                raise ValueError("expected a key in a JSON object")
            key = self._string()
            if self._peek() != ":":
                raise ValueError("expected : after a key in a JSON object")
            self.pos += 1
            found[key] = self.value(depth + 1)
            separator = self._peek()
            self.pos += 1
            if separator == "}":
                return found
            if separator != ",":
                raise ValueError(f"expected , or }} in an object, got {separator!r}")

    def _array(self, depth: int) -> list:
        self.pos += 1
        found: list = []
        if self._peek() == "]":
            self.pos += 1
            return found
        while True:
            found.append(self.value(depth + 1))
            separator = self._peek()
            self.pos += 1
            if separator == "]":
                return found
            if separator != ",":
                raise ValueError(f"expected , or ] in a list, got {separator!r}")

    def _scalar(self):
        end = self.pos
        while True:
            while end < len(self.buf) and self.buf[end] not in _SCALAR_END:
                end += 1
            if end < len(self.buf) or self.eof:
                break
            end -= self.pos
            self._more()
            end += self.pos
        token, self.pos = self.buf[self.pos:end], end
        return json.loads(token)

    def _string(self) -> str:
        """The string at pos: whole when it fits in the window, else its digest."""
        scan = 1  # from pos, past the opening quote
        while True:
            close = _closing_quote(self.buf, self.pos + 1, self.pos + scan)
            if close >= 0:
                text = json.loads(self.buf[self.pos:close + 1])
                self.pos = close + 1
                return digest_of(text) if len(text) > TEXT_LIMIT else text
            if len(self.buf) - self.pos > WINDOW:
                return self._hashed()
            scan = len(self.buf) - self.pos
            if not self._more():
                raise ValueError("a JSON string does not end")

    def _hashed(self) -> str:
        """A string longer than the window, hashed as it streams: pos is at its quote."""
        digest, units = hashlib.sha256(), 0
        self.pos += 1  # past the quote: from here on pos is the start of what is unhashed
        scan = 0
        while True:
            close = _closing_quote(self.buf, self.pos, self.pos + scan)
            end = close if close >= 0 else _safe_cut(self.buf, self.pos, len(self.buf))
            piece = json.loads('"' + self.buf[self.pos:end] + '"').encode("utf-16-le", "surrogatepass")
            digest.update(piece)
            units += len(piece) // 2
            if close >= 0:
                self.pos = close + 1
                return text_digest(units, digest.hexdigest())
            self.pos = end
            scan = len(self.buf) - self.pos
            if not self._more():
                raise ValueError("a JSON string does not end")


def _closing_quote(text: str, start: int, scan: int) -> int:
    """The index of the first unescaped quote at or after `scan` (a string's text
    begins at `start`), or -1."""
    while True:
        quote = text.find('"', scan)
        if quote < 0:
            return -1
        slashes = quote
        while slashes > start and text[slashes - 1] == "\\":
            slashes -= 1
        if (quote - slashes) % 2 == 0:
            return quote
        scan = quote + 1


def _safe_cut(text: str, start: int, end: int) -> int:
    """Where the escaped text[start:end] may be cut without cutting an escape: before a
    trailing backslash that starts one (an escape is at most six characters)."""
    last = text.rfind("\\", max(start, end - 6), end)
    if last < 0:
        return end
    first = last
    while first > start and text[first - 1] == "\\":
        first -= 1
    return end if (last - first) % 2 else last


def _digested(value):
    """A decoded value with every long text in it replaced by its digest."""
    if isinstance(value, str):
        return digest_of(value) if len(value) > TEXT_LIMIT else value
    if isinstance(value, list):
        return [_digested(item) for item in value]
    if isinstance(value, dict):
        return {key: _digested(item) for key, item in value.items()}
    return value


def read(client: Client, path: str, params: dict | None = None):
    """One answer, streamed."""
    with client.request("GET", path, params=params, stream=True) as response:
        if response.status_code == 204:
            return None
        stream = JsonStream(response.iter_content(CHUNK))
        try:
            return stream.value()
        except ValueError as exc:
            raise HostError(f"GET {path}: the host's JSON is unreadable: {exc}") from None


def pages(client: Client, path: str, params: dict | None = None, *,
          limit: int = 50, max_pages: int = 1000) -> Iterator:
    """Every item of a paged list, streamed page by page, one item at a time."""
    seen = 0
    for page in range(1, max_pages + 1):
        count = 0
        with client.request("GET", path, params={**(params or {}), "page": page, "limit": limit},
                            stream=True) as response:
            stream = JsonStream(response.iter_content(CHUNK))
            try:
                for item in stream.items():
                    count += 1
                    yield item
            except ValueError as exc:
                raise HostError(f"GET {path}: the host's JSON is unreadable: {exc}") from None
        seen += count
        if not count or not has_next(response, seen, count, limit):
            return
    raise HostError(f"GET {path}: more than {max_pages} pages")
