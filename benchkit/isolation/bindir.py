"""The curated bin directory: an arm's one binary and the permitted utilities, as
symlinks to the real programs found on the harness's PATH. The agent's PATH is this
directory alone: defence in depth behind the guard, which stays the authority."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .guard import UTILITIES


class IsolationError(RuntimeError):
    """The harness cannot isolate an arm (a binary or file missing): a harness error."""


def make_bin_dir(arm, dest: Path, search_path: str | None = None) -> Path:
    """Fill `dest` with links to the arm's binary and the utilities found on
    `search_path` (default: this process's PATH). The MCP arm gets an empty directory.
    A missing arm binary is an IsolationError; a missing utility is left out."""
    dest = Path(dest)
    search_path = os.environ.get("PATH", os.defpath) if search_path is None else search_path
    # Never resolve a name to one of our own links.
    search_path = os.pathsep.join(
        d for d in search_path.split(os.pathsep) if d and _resolved(d) != _resolved(dest))
    dest.mkdir(parents=True, exist_ok=True)
    for entry in dest.iterdir():
        if not entry.is_symlink():
            raise IsolationError(f"{dest} holds {entry.name}, which is not a link: "
                                 "not a bin directory benchkit made")
        entry.unlink()
    tool = arm.tool
    if tool["kind"] != "shell":
        return dest
    binary = tool["binary"]
    found = shutil.which(binary, path=search_path)
    if found is None:
        raise IsolationError(f"arm {arm.id}: its binary `{binary}` is not installed "
                             f"(not found on PATH={search_path})")
    (dest / binary).symlink_to(os.path.abspath(found))
    for name in UTILITIES:
        target = shutil.which(name, path=search_path)
        if target and name != binary:
            (dest / name).symlink_to(os.path.abspath(target))
    return dest


def _resolved(path) -> str:
    return os.path.realpath(os.path.abspath(path))
