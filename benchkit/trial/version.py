"""The tool's version as each trial runs it, asked again just before its agent starts.

    trial_version(arm, assembly, workdir, confine=...)   the version line it ran with

Pre-flight asks each arm's tool its version once (benchkit.preflight.probe); a tool upgraded
while a run goes on would otherwise be recorded at the version it had at the start.
Each trial asks again, cheaply: the version command's answer is kept for the very
executable file it came from (its real path, inode, size and modification time, one
stat), and the command runs again (as pre-flight runs it: a confined shell arm's inside
a sandbox, here with no network) only for a file not seen before in this process. A
version command costs 10 ms (a Go binary) to 0.2-0.5 s (in a sandbox, or under Node)
and up to 5 s (a Python server's imports) on a loaded machine; a stat, 0.1 ms
(benchmarks/version_probe_bench.py).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from benchkit.preflight.probe import sandboxed_version, tool_command, tool_version

# (asked inside a sandbox, the executable's identity) -> its version command's first line
_VERSIONS: dict[tuple[bool, tuple], str] = {}


def trial_version(arm, assembly, workdir: Path, *, confine: bool) -> str:
    """The version line of the arm's tool as this trial will run it (the assembly set
    up); IsolationError when its version command fails (the tool is gone)."""
    sandboxed = confine and arm.tool.kind == "shell"
    identity = _identity(arm, assembly)
    known = _VERSIONS.get((sandboxed, identity)) if identity is not None else None
    if known is not None:
        return known
    version = (sandboxed_version(arm, assembly, workdir, None) if sandboxed
               else tool_version(arm, assembly))
    if identity is not None and identity == _identity(arm, assembly):  # not swapped meanwhile
        _VERSIONS[(sandboxed, identity)] = version
    return version


def _identity(arm, assembly) -> tuple | None:
    """The arm's executable file as it is now, and how its version is asked (None: not
    found): another file, or the same one rewritten, is another identity."""
    argv, env = tool_command(arm, assembly)
    found = shutil.which(argv[0], path=env.get("PATH"))
    if found is None:
        return None
    real = os.path.realpath(found)
    try:
        status = os.stat(real)
    except OSError:
        return None
    return (arm.id, real, status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns,
            tuple(arm.tool.version))
