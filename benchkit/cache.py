"""What benchkit keeps between runs under its cache directory (benchkit.cache_dir):
values derived from files that have not changed since (the tree's documents, a store
file's samples), each under a key naming everything it was derived from.

An entry is written whole or not at all (a reader sees the old entry or the new one),
and it is plain data (JSON or MessagePack, decoded into declared types by its reader):
a foreign, stale or corrupt entry is a miss, never code. A cache that cannot be read
or written is no cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import tempfile
from pathlib import Path

from benchkit import PACKAGE_DIR


@functools.cache
def code_stamp() -> bytes:
    """The modification time and size of each of benchkit's code and schema files (an
    edit or an upgrade changes it) and the interpreter's version: what every entry's
    key takes in, since the code decides what is derived. Taken once a process."""
    digest = hashlib.blake2b(sys.version.encode())
    for directory, subdirectories, names in os.walk(PACKAGE_DIR):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(n for n in names if n.endswith((".py", ".json"))):
            stat = os.stat(os.path.join(directory, name))
            digest.update(f"{directory}/{name} {stat.st_mtime_ns} {stat.st_size}\0".encode())
    return digest.digest()


def read(place: Path) -> bytes | None:
    """The entry kept at place, or None."""
    try:
        return place.read_bytes()
    except OSError:
        return None


def keep(place: Path, data: bytes) -> None:
    """Write data to place atomically; a cache that cannot be written is no cache."""
    with contextlib.suppress(OSError):
        place.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=place.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, place)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
