"""A sandbox's mount list, in bubblewrap's order, with no destination's path left to the
agent. bwrap follows links in a destination on the harness's side: a directory the
agent renamed and replaced by a link (`/oldroot/...`) would have it create directories
and files on the host, or mount elsewhere. So before each mount, every directory above
its destination that lies in a directory the agent writes becomes a mount point itself,
in every command: a mount point cannot be renamed or removed from inside.

    mounts = Mounts()
    mounts.bind("/trial/tmp", "/tmp")                  # a writable view of another path
    mounts.bind(config, config)                         # a writable directory, at itself
    mounts.ro_bind(copy, config / "tea" / "config.yml") # tea/ made a mount point first
    bwrap_args = mounts.args
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

FRESH, READ_ONLY, AT_ITSELF, ELSEWHERE = "fresh", "read-only", "at-itself", "elsewhere"


@dataclass
class Mounts:
    args: list[str] = field(default_factory=list)
    _mounted: list[tuple[str, str]] = field(default_factory=list)  # (destination, kind)

    def fresh(self, dest: str, option: str = "--tmpfs") -> None:
        """An empty filesystem of bwrap's own (--tmpfs, --dev, --proc)."""
        self._add([option, dest], dest, FRESH)

    def ro_bind(self, source: str, dest: str) -> None:
        self._add(["--ro-bind", source, dest], dest, READ_ONLY)

    def symlink(self, target: str, dest: str) -> None:
        """A link at `dest` to `target`, made in the sandbox's own root."""
        self._add(["--symlink", target, dest], dest, READ_ONLY)

    def bind(self, source: str, dest: str) -> None:
        """A writable bind: the agent's writes there outlive the command."""
        self._add(["--bind", source, dest], dest, AT_ITSELF if source == dest else ELSEWHERE)

    def _add(self, args: list[str], dest: str, kind: str) -> None:
        dest = os.path.normpath(dest)
        self._secure(dest)
        self.args += args
        self._mounted.append((dest, kind))

    def _secure(self, dest: str) -> None:
        """Make each directory above `dest` that the agent could have replaced a mount
        point: the same directory bound at itself (its files kept), or, in a view of
        another path (/tmp), an empty tmpfs (what bwrap creates there, the agent never
        sees otherwise)."""
        parts = dest.strip("/").split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            above = "/" + "/".join(parts[:depth])
            enclosing = self._enclosing(above)
            if enclosing is None or enclosing[0] == above:
                continue
            if enclosing[1] == AT_ITSELF:
                self.args += ["--bind", above, above]
                self._mounted.append((above, AT_ITSELF))
            elif enclosing[1] == ELSEWHERE:
                self.args += ["--tmpfs", above]
                self._mounted.append((above, FRESH))

    def _enclosing(self, path: str) -> tuple[str, str] | None:
        """The last mount whose destination holds `path` (the one in force there)."""
        for dest, kind in reversed(self._mounted):
            if path == dest or path.startswith(dest.rstrip("/") + "/"):
                return dest, kind
        return None
