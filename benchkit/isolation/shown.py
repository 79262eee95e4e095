"""What of the directories a sandbox hides it still shows: the tools its curated PATH
links to (a real file, or an npm package's directory), and the test of whether a path
lies in a directory the agent writes."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

# Host directories hidden behind an empty tmpfs: other trials' files, the maintainer's
# and root's homes (their tool logins, ~/.claude), sockets of services.
HIDDEN = ("/tmp", "/var/tmp", "/run", "/root", "/home", "/dev/shm")


def hidden_dirs() -> list[str]:
    """HIDDEN plus the harness's HOME and temporary directory, parents first, each
    only once (a directory under one already hidden needs no mount of its own)."""
    candidates = [*HIDDEN, os.path.expanduser("~"), tempfile.gettempdir()]
    chosen: list[str] = []
    for path in sorted({os.path.realpath(p) for p in candidates}, key=len):
        if path != "/" and os.path.isdir(path) and not any(
                path == c or path.startswith(c + "/") for c in chosen):
            chosen.append(path)
    return chosen


def path_dirs(path: str) -> list[str]:
    """What of the hidden directories the curated PATH needs visible, and nothing more:
    a curated directory itself, and what each of its entries runs (a tool installed
    under /root, /home or /tmp, linked from the curated bin): the real file, or, for a
    file inside an npm package, the package's directory (its node_modules/ with it)."""
    hidden = hidden_dirs()

    def covered(real: str) -> bool:
        return any(real == h or real.startswith(h + "/") for h in hidden)

    found: list[str] = []
    for entry in path.split(os.pathsep):
        real = os.path.realpath(entry) if entry else ""
        if not (real and os.path.isdir(real)):
            continue
        if covered(real):
            found.append(real)
        for name in sorted(os.listdir(real)):
            target = os.path.realpath(os.path.join(real, name))
            if os.path.exists(target) and covered(target):
                found.append(_package_root(target, hidden) or target)
    return _outermost(found)


def inside(path: str, directories: list[str]) -> bool:
    """Whether `path` is one of `directories` or lies below one (real paths)."""
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d.rstrip("/") + "/") for d in directories)


def _package_root(path: str, hidden: list[str]) -> str | None:
    """The npm package a file belongs to: its nearest directory (below the hidden one)
    holding a package.json with a name, where node resolves the package's imports from.
    A package.json without one (a `{"type": "module"}` marker in dist/) is not a root."""
    directory = os.path.dirname(path)
    while directory not in hidden and directory != "/":
        manifest = os.path.join(directory, "package.json")
        if os.path.isfile(manifest) and _names_package(manifest):
            return directory
        directory = os.path.dirname(directory)
    return None


def _names_package(manifest: str) -> bool:
    try:
        with open(manifest, encoding="utf-8") as file:
            return bool(json.load(file).get("name"))
    except (OSError, ValueError, AttributeError):
        return False


def outermost_kept(paths: tuple[Path, ...]) -> list[str]:
    """The writable directories in their order, without those inside another: a bind
    of one inside would take its source from a directory the agent writes."""
    real = {str(p): os.path.realpath(p) for p in paths}
    return [str(p) for p in dict.fromkeys(paths) if not any(
        real[str(p)].startswith(real[str(q)].rstrip("/") + "/") for q in paths)]


def _outermost(paths: list[str]) -> list[str]:
    """Each path once, without those inside another (one mount shows them already)."""
    chosen: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == c or path.startswith(c + "/") for c in chosen):
            chosen.append(path)
    return chosen
