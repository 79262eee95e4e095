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
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from benchkit import PACKAGE_DIR

# The tree's documents: suite.yaml and these directories' files (the document loaders
# load the first three, refs.d/ holds the references: what an arm's tool cannot do;
# tests/report/test_report_command.py holds this to benchkit.documents.tree.DIRECTORIES).
TREE_DIRECTORIES = ("seeds", "arms.d", "tasks.d", "refs.d")
# The libraries whose behaviour a loaded tree depends on: parsing, validation and schema
# defaults (so the data and its fingerprints), template checks.
DOCUMENT_LIBRARIES = ("yaml", "jsonschema", "referencing", "jinja2")


def tree_stamp(root: Path) -> bytes:
    """What a value derived from the tree at root is derived from: the content of its
    every document (suite.yaml and TREE_DIRECTORIES' files), benchkit's code
    (code_stamp) and the modification time and size of the DOCUMENT_LIBRARIES' modules (an
    edit or an upgrade changes them). Raises OSError when any cannot be read (a
    checkout or an upgrade under way): then nothing is kept."""
    digest = hashlib.blake2b(str(root).encode())

    def part(data: bytes) -> None:  # length-framed: no two sequences of parts collide
        digest.update(len(data).to_bytes(8, "little") + data)
    entries = [entry for directory in TREE_DIRECTORIES if (root / directory).is_dir()
               for entry in sorted((root / directory).iterdir())]
    for path in [root / "suite.yaml", *entries]:
        part(str(path).encode())
        part(path.read_bytes() if path.is_file() else b"(not a file)")
    part(code_stamp())
    for library in DOCUMENT_LIBRARIES:
        spec = importlib.util.find_spec(library)
        origin = spec.origin if spec is not None else None
        found = os.stat(origin) if origin and os.path.isfile(origin) else None
        part(f"{library} {origin} {found and (found.st_mtime_ns, found.st_size)}".encode())
    return digest.digest()


@functools.cache
def code_stamp() -> bytes:
    """The modification time and size of each of benchkit's code, schema and template
    files (an edit or an upgrade changes it) and the interpreter's version: what every
    entry's key takes in, since the code decides what is derived. Taken once a process."""
    digest = hashlib.blake2b(sys.version.encode())
    for directory, subdirectories, names in os.walk(PACKAGE_DIR):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(n for n in names if n.endswith((".py", ".json", ".j2"))):
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
