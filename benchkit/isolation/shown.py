"""What of an arm's tool a sandbox shows beside the system (system.py): the curated
PATH's directories and what each of their entries runs (a real file, an npm package's
directory, a Python virtual environment, the parts of an installation its interpreter
reads: its binary, its standard library, its shared library), the links on the way to
them, and nothing else of the directory that holds them (a benchkit checkout's .tools/,
/usr/local, /opt, a HOME); and the test of whether a path lies in a directory the agent
writes."""

from __future__ import annotations

import glob
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .system import in_system

LINK_HOPS = 40  # as the kernel follows them (ELOOP)
# Directories that hold unrelated installations side by side: never shown whole.
GATHERING = ("/usr/local", "/usr/local/lib", "/usr/local/share", "/var/lib", "/var/cache")


@dataclass(frozen=True)
class ToolView:
    """An arm's tool as its sandbox shows it: paths bound read-only at themselves, and
    links recreated on the way to them (a virtual environment's `python3` names its
    base interpreter by a link that lies beside unrelated programs)."""

    binds: tuple[str, ...]
    links: tuple[tuple[str, str], ...]  # (where, its target as the host writes it)


def tool_view(path: str, programs: Iterable[str] = ()) -> ToolView:
    """What the curated PATH needs visible, and nothing more: each of its directories
    outside the system, and what each of their entries (and each of `programs`) runs,
    when the system does not show it already."""
    found: list[str] = []
    entries: list[str] = [os.path.abspath(p) for p in programs]
    for entry in path.split(os.pathsep):
        real = os.path.realpath(entry) if entry else ""
        if not (real and os.path.isdir(real)):
            continue
        venv = _venv_root(real)
        if not in_system(real):
            found.append(venv or real)
        if venv:  # its interpreter, a copy or a link, runs the base installation's
            entries += _venv_base(venv)
        entries += [os.path.join(real, name) for name in sorted(os.listdir(real))]
    chains = []  # the entries whose links may pass outside the system
    for entry in entries:
        target = os.path.realpath(entry)
        if not in_system(target):
            chains.append(entry)
            if os.path.exists(target):
                package = _package_root(target)
                found += [package] if package else _interpreter_parts(target)
        elif not in_system(os.path.dirname(entry)):
            chains.append(entry)
    binds = _outermost(found)
    links = {hop: target for entry in chains for hop, target in _hops(entry)
             if not in_system(hop) and not _under(hop, binds)}
    return ToolView(tuple(binds), tuple(sorted(links.items())))


def _hops(entry: str) -> Iterator[tuple[str, str]]:
    """(link, its target as written) for each link followed from `entry` to a real
    file, the directories above each link resolved (where the sandbox recreates it)."""
    path = entry
    for _ in range(LINK_HOPS):
        where = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if not os.path.islink(where):
            return
        target = os.readlink(where)
        yield where, target
        path = os.path.join(os.path.dirname(where), target)


def _venv_root(bin_dir: str) -> str | None:
    """A Python virtual environment whose bin/ is on PATH: the whole environment (its
    pyvenv.cfg, by which Python activates it, and its site-packages)."""
    venv = os.path.dirname(bin_dir)
    return venv if os.path.basename(bin_dir) == "bin" and os.path.isfile(
        os.path.join(venv, "pyvenv.cfg")) else None


def _venv_base(venv: str) -> list[str]:
    """The interpreter a virtual environment was made from, as its pyvenv.cfg names it
    (`executable`, else `home`'s python3): what its bin/python3 runs with."""
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as file:
            settings = dict(line.partition("=")[::2] for line in file if "=" in line)
    except OSError:
        return []
    values = {key.strip(): value.strip() for key, value in settings.items()}
    if values.get("executable"):
        return [values["executable"]]
    return [os.path.join(values["home"], "python3")] if values.get("home") else []


def _interpreter_parts(path: str) -> list[str]:
    """What an interpreter at PREFIX/bin/NAME reads of its installation: the binary,
    PREFIX/lib/NAME (Python's standard library: pyenv's `~/.pyenv/versions/X/bin/python3.11`
    needs `.../X/lib/python3.11`) and PREFIX/lib's shared libraries of its name
    (libpython3.11.so.1.0); nothing else of PREFIX, which may be /usr/local. Any other
    file: itself alone."""
    bin_dir, name = os.path.split(path)
    lib = os.path.join(os.path.dirname(bin_dir), "lib")
    if os.path.basename(bin_dir) != "bin" or not os.path.isdir(os.path.join(lib, name)):
        return [path]
    stem = name.rstrip("0123456789.")
    return [path, os.path.join(lib, name),
            *sorted(glob.glob(os.path.join(glob.escape(lib), f"lib{glob.escape(stem)}*.so*")))]


def inside(path: str, directories: Iterable[str]) -> bool:
    """Whether `path` is one of `directories` or lies below one (real paths)."""
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d.rstrip("/") + "/") for d in directories)


def _too_wide(directory: str) -> bool:
    """A directory that holds more than one tool's files: the root and the directories
    right in it, a home (right below /home, the harness's own, or above it), the
    harness's temporary directory or one above it, /usr/local and the like."""
    if directory.count("/") <= 1 or directory in GATHERING or os.path.dirname(directory) == "/home":
        return True
    return any(mine == directory or mine.startswith(directory + "/") for mine in (
        os.path.realpath(os.path.expanduser("~")), os.path.realpath(tempfile.gettempdir())))


def _package_root(path: str) -> str | None:
    """The npm package a file belongs to, where node resolves its imports from: the
    `node_modules/NAME` (or `node_modules/@SCOPE/NAME`) directory it lies in, or, for a
    linked checkout (`npm link`, `npm install -g .`), the directory above it whose
    package.json names it as a `bin`. Nothing for any other file (a Go binary), never
    a directory that holds more than one tool's files (a whole HOME with a package.json)."""
    parts = path.split("/")
    if "node_modules" in parts:
        at = parts.index("node_modules")
        end = at + (3 if parts[at + 1:at + 2] and parts[at + 1].startswith("@") else 2)
        candidates = ["/".join(parts[:end])] if end < len(parts) else []
    else:
        candidates = []
        directory = os.path.dirname(path)
        while not _too_wide(directory):
            candidates.append(directory)
            directory = os.path.dirname(directory)
    for directory in candidates:
        manifest = _manifest(directory)
        if _too_wide(directory) or not manifest.get("name"):
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


def _under(path: str, directories: list[str]) -> bool:
    """Whether `path`, as written (a link not followed), is or lies in one of them."""
    return any(path == d or path.startswith(d + "/") for d in directories)


def _outermost(paths: list[str]) -> list[str]:
    """Each path once, without those inside another (one mount shows them already)."""
    chosen: list[str] = []
    for path in sorted(set(paths), key=len):
        if not _under(path, chosen):
            chosen.append(path)
    return chosen
