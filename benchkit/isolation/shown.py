"""What of the directories a sandbox hides it still shows: the tools its curated PATH
links to (a real file, an npm package's directory, a Python virtual environment and the
installation its interpreter comes from), and the test of whether a path lies in a
directory the agent writes."""

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
            found.append(_venv_root(real) or real)
        for name in sorted(os.listdir(real)):
            target = os.path.realpath(os.path.join(real, name))
            if os.path.exists(target) and covered(target):
                found.append(_package_root(target, hidden) or _interpreter_prefix(target, hidden)
                             or target)
    return _outermost(found)


def _venv_root(bin_dir: str) -> str | None:
    """A Python virtual environment whose bin/ is on PATH: the whole environment (its
    pyvenv.cfg, by which Python activates it, and its site-packages)."""
    venv = os.path.dirname(bin_dir)
    return venv if os.path.basename(bin_dir) == "bin" and os.path.isfile(
        os.path.join(venv, "pyvenv.cfg")) else None


def _interpreter_prefix(path: str, hidden: list[str]) -> str | None:
    """The installation an interpreter reads its standard library from (pyenv's
    `~/.pyenv/versions/X/bin/python3.11` needs `.../X/lib/python3.11`): PREFIX for a
    PREFIX/bin/NAME with a PREFIX/lib/NAME directory, never a directory right below a
    hidden one."""
    bin_dir = os.path.dirname(path)
    prefix = os.path.dirname(bin_dir)
    if (os.path.basename(bin_dir) == "bin" and prefix not in hidden
            and os.path.dirname(prefix) not in hidden
            and os.path.isdir(os.path.join(prefix, "lib", os.path.basename(path)))):
        return prefix
    return None


def inside(path: str, directories: list[str]) -> bool:
    """Whether `path` is one of `directories` or lies below one (real paths)."""
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d.rstrip("/") + "/") for d in directories)


def _package_root(path: str, hidden: list[str]) -> str | None:
    """The npm package a file belongs to, where node resolves its imports from: the
    `node_modules/NAME` (or `node_modules/@SCOPE/NAME`) directory it lies in, or, for a
    linked checkout (`npm link`, `npm install -g .`), the directory above it whose
    package.json names it as a `bin`. Nothing for any other file (a Go binary), never
    a directory right below a hidden one (a whole HOME with a package.json)."""
    parts = path.split("/")
    if "node_modules" in parts:
        at = parts.index("node_modules")
        end = at + (3 if parts[at + 1:at + 2] and parts[at + 1].startswith("@") else 2)
        candidates = ["/".join(parts[:end])] if end < len(parts) else []
    else:
        candidates = []
        directory = os.path.dirname(path)
        while directory not in hidden and directory != "/":
            candidates.append(directory)
            directory = os.path.dirname(directory)
    for directory in candidates:
        manifest = _manifest(directory)
        if os.path.dirname(directory) in hidden or not manifest.get("name"):
            continue
        if "node_modules" in parts or path in _bins(directory, manifest):
            return directory
    return None


def _manifest(directory: str) -> dict:
    """A directory's package.json, {} when there is none or it is not an object."""
    try:
        with open(os.path.join(directory, "package.json"), encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _bins(directory: str, manifest: dict) -> list[str]:
    """The real paths of the files a package.json declares as its binaries."""
    declared = manifest.get("bin")
    files = [declared] if isinstance(declared, str) else list(
        declared.values()) if isinstance(declared, dict) else []
    return [os.path.realpath(os.path.join(directory, f)) for f in files if isinstance(f, str)]


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
