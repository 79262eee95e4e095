"""A RepoState's values, one normaliser each: text (a long one kept as its digest),
colours, dates, names, numbers, and the shape checks every entry goes through.

A text longer than TEXT_LIMIT characters is kept as its length and SHA-256 digest, so
that neither a snapshot nor the checker ever holds an agent's megabytes: the snapshot's
reader digests such a string as it streams in (benchkit.gitea.snapshot.reader), and
`normalise_text` digests one it is handed whole, the same way, so both give one value.
"""

from __future__ import annotations

import hashlib
import re

from benchkit.errors import BenchkitError

TEXT_LIMIT = 4096  # characters: the seed's and every task's texts are far shorter
_DIGEST = re.compile(r"\[(\d+) characters, sha256 ([0-9a-f]{64})\]")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")


class StateError(ValueError, BenchkitError):
    """A RepoState that does not have the contract's shape."""


def text_digest(length: int, sha256: str) -> str:
    """How a long text appears in a RepoState: its length and the SHA-256 of its
    UTF-16 (little-endian) code units, which a text cut anywhere hashes to as well."""
    return f"[{length} characters, sha256 {sha256}]"


def digest_of(text: str) -> str:
    """The digest form of a whole text (the reader's, for one it streamed, is equal)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return text_digest(len(data) // 2, hashlib.sha256(data).hexdigest())


def is_digest(text: str) -> bool:
    return _DIGEST.fullmatch(text) is not None


def normalise_text(text) -> str:
    """Bodies and comments: surrounding whitespace and CR line ends carry no meaning; a
    text over TEXT_LIMIT characters is its digest (of the text as sent, unnormalised)."""
    text = str(text or "")
    if len(text) > TEXT_LIMIT:
        return digest_of(text)
    if is_digest(text):
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def normalise_name(text) -> str:
    """A name or title: surrounding whitespace carries no meaning; a long one is digested."""
    text = str(text or "")
    return digest_of(text) if len(text) > TEXT_LIMIT else text.strip()


def normalise_color(color) -> str:
    return str(color or "").strip().lstrip("#").lower()


def normalise_date(value) -> str | None:
    """A due date: the day alone (Gitea stores the end of the day given, in its zone);
    anything else as it came, to be compared as it is."""
    if value in (None, ""):
        return None
    found = _DATE.match(str(value))
    return found.group() if found else normalise_name(value)


def require(item, where: str, *keys: str) -> None:
    if not isinstance(item, dict):
        raise StateError(f"{where} must be an object, got {type(item).__name__}")
    missing = [key for key in keys if key not in item]
    if missing:
        raise StateError(f"{where} lacks {', '.join(missing)}")


def as_list(container: dict, key: str, where: str) -> list:
    value = container.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise StateError(f"{where}.{key} must be a list, got {type(value).__name__}")
    return value


def names(container: dict, key: str, where: str) -> list[str]:
    """A set of names (labels, assignees, topics, events), sorted."""
    found = as_list(container, key, where)
    for name in found:
        if not isinstance(name, str):
            raise StateError(f"{where}.{key} must list names, got {name!r}")
    return sorted({normalise_name(name) for name in found})


def number(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
        raise StateError(f"{where}: number {value!r} is not a non-negative integer")
    return int(value)


def flag(value, where: str) -> bool:
    if not isinstance(value, bool):
        raise StateError(f"{where} must be true or false, got {value!r}")
    return value
