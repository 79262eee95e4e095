"""Whether an arm's tool is installed here (with the version it reports), and how to
install it: the arm file's own `tool.install` line, which `benchkit list arms`,
pre-flight and `run --only-installed` show (docs/arms.md's "Installing the arms' tools"
table agrees, tests/documents/test_documents_validate.py checks it).

Where a tool is looked for: the user's PATH first, as the user runs the tool, then the
builds `bash scripts/setup --arms ...` puts in the checkout's `.tools/<tool>-<version>/`
(the versions tools/versions pins), so a tool installed so needs no PATH change.
Pre-flight then runs it as the agent's tool starts (benchkit.preflight.probe).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchkit import PACKAGE_DIR

if TYPE_CHECKING:  # for the annotation alone: msgspec would slow bare `benchkit list`
    from benchkit.tool import ToolSpec

VERSION_TIMEOUT_S = 20
TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CHECKOUT = PACKAGE_DIR.parent
PINS = CHECKOUT / "tools" / "versions"
BUILDS = CHECKOUT / ".tools"
BUILDS_OVERRIDE = "BENCHKIT_TOOLS_DIR"  # another directory of builds (a test's empty one)


def version_line(output: str) -> str | None:
    """The first line a version command printed, its terminal escapes (tea prints its
    version bold) and runs of blanks gone; whole: a cut mid-word would name a version
    that does not exist. None for no output."""
    text = TERMINAL_ESCAPE.sub("", output)
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    return lines[0] if lines else None


def how_to_install(tool: ToolSpec, arm_path: Path | str | None = None) -> str:
    """The arm's install line, or where to write one for an arm with none."""
    if tool.install:
        return tool.install
    where = f" of {arm_path}" if arm_path else ""
    return f"no install line for `{tool.executable}`: add `install:` to the `tool:`{where}"


def pinned_builds(pins: Path = PINS, builds: Path | None = None) -> list[str]:
    """The directories of the pinned builds present in the checkout's .tools/ (each
    `<tool>-<version>/`, or its `bin/` for an npm-style prefix), in the pin file's order:
    where scripts/setup --arms installs the arms' tools. $BENCHKIT_TOOLS_DIR names
    another directory of builds."""
    builds = builds or Path(os.environ.get(BUILDS_OVERRIDE) or BUILDS)
    try:
        lines = pins.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    values = dict(line.strip().split("=", 1) for line in lines
                  if "=" in line and not line.lstrip().startswith("#"))
    found = []
    for key in values:
        prefix = key.removesuffix("_ARCHIVE")
        if prefix == key or f"{prefix}_VERSION" not in values:
            continue  # only the arms' tools, built from archives (not Gitea itself)
        directory = builds / f"{prefix.lower().replace('_', '-')}-{values[prefix + '_VERSION']}"
        found += [str(d) for d in (directory / "bin", directory) if d.is_dir()]
    return found


def tool_path(path: str | None = None) -> str:
    """A search path for the arms' tools: `path` (default: PATH), then the checkout's
    pinned builds not on it already."""
    path = os.environ.get("PATH", os.defpath) if path is None else path
    have = set(path.split(os.pathsep))
    extra = [d for d in pinned_builds() if d not in have]
    return os.pathsep.join([path, *extra]) if extra else path


@dataclass(frozen=True)
class Installed:
    """What `executable` is here: its path and version line, or how to install it."""

    executable: str
    install: str
    path: str | None = None
    version: str | None = None
    problem: str | None = None  # why the version is unknown although the tool is there

    @property
    def line(self) -> str:
        if self.path is None:
            return f"not installed: {self.install}"
        return f"installed: {self.version}" if self.version else f"installed ({self.problem})"


def installed(tool: ToolSpec, arm_path: Path | str | None = None) -> Installed:
    """The tool on the user's PATH (or among the checkout's pinned builds) and the first
    line of its version command."""
    executable, install = tool.executable, how_to_install(tool, arm_path)
    if "{{" in executable:  # a template: known only when a run renders it
        return Installed(executable, install, executable,
                         problem="its command is rendered per run")
    path = shutil.which(executable, path=tool_path())
    if path is None:
        return Installed(executable, install)
    try:
        done = subprocess.run([path, *tool.version], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Installed(executable, install, path,
                         problem=f"`{executable}` does not start: {error}")
    version = version_line(done.stdout or done.stderr)
    if done.returncode != 0 or version is None:
        return Installed(executable, install, path,
                         problem=f"its version command exited {done.returncode}")
    return Installed(executable, install, path, version)
