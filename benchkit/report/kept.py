"""Each store file's summary (benchkit.report.summary), kept between reports while the
file is as it was.

The store only ever appends, so a file's device, inode, size and modification time
say whether it changed: a report after a run reads the files the run appended to, and
a report of a store unchanged since the last one (another format, other weights,
another baseline) reads none. A summary is also derived from the trials whose failure
replay leaked (they count as invalid) and from benchkit's code, so its key takes them
in. A store's summaries are one entry under the cache directory (benchkit.cache),
MessagePack decoded into the types declared here: a foreign or corrupt entry is a
miss, never code.

A file written within RACY_NS of its reading is not kept: it may be written again
within its modification time's granularity, unseen ("racily clean", as git says); a
later report keeps it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

from benchkit import cache, cache_dir, counting
from benchkit.report.columns import Block

FORMAT = 1
DIRECTORY = "summaries"  # under the cache directory
RACY_NS = 2_000_000_000  # coarser than any file system's modification times
Identity = tuple[int, int, int, int]  # device, inode, size, modification time (ns)


class KeptFile(msgspec.Struct, array_like=True, gc=False):
    """A store file's summary as kept, under the key of what it was derived from: its
    counts, unreadable lines and groups (key, position of the last, newest started_at,
    count, the Blocks)."""
    key: bytes
    samples: int
    unconfined: int
    gateway_only: int
    problems: list[str]
    groups: list[tuple[counting.GroupKey, int, str, int, list[Block]]]


_DECODER = msgspec.msgpack.Decoder(dict[str, KeptFile])  # the store's file -> its summary


def read(directory: Path) -> dict[str, KeptFile]:
    """The summaries kept for the store at directory, by file ({} when none)."""
    data = cache.read(_place(directory))
    try:
        return _DECODER.decode(data) if data is not None else {}
    except msgspec.DecodeError:
        return {}


def keep(directory: Path, files: dict[str, KeptFile]) -> None:
    """Keep these summaries for the store at directory, in place of those kept."""
    cache.keep(_place(directory), msgspec.msgpack.encode(files))


def current(path: Path, entry: KeptFile, leaked: frozenset[str]) -> bool:
    """Whether a kept summary is the file's as it stands."""
    found = identity(path)
    return found is not None and entry.key == key(path, found, leaked)


def identity(path: Path) -> Identity | None:
    """What changes when the file does (None: there is no file)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def settled(path: Path, before: Identity | None, started: int,
            leaked: frozenset[str]) -> bytes | None:
    """The key to keep a file's summary under, read from `started` (time.time_ns) on
    with the file at `before`: None when it changed meanwhile, or is racily clean."""
    if before is None or identity(path) != before or before[3] >= started - RACY_NS:
        return None
    return key(path, before, leaked)


def key(path: Path, found: Identity, leaked: frozenset[str]) -> bytes:
    """What a file's summary is derived from: the file as found, the leaked trials, the
    code."""
    try:
        code = cache.code_stamp()
    except OSError:  # the code is being replaced: nothing matches
        code = os.urandom(16)
    return hashlib.blake2b(repr((FORMAT, str(path), found, sorted(leaked))).encode()
                           + code).digest()


def _place(directory: Path) -> Path:
    name = hashlib.blake2b(os.path.abspath(directory).encode(), digest_size=16).hexdigest()
    return cache_dir() / DIRECTORY / f"{name}.msgpack"
