"""Whether an arm's tool is installed here (with the version it reports), and how to
install it: the one place that says how, which `benchkit list arms`, pre-flight and the
tests' skip reasons show (the README's "Installing the arms' tools" table agrees,
tests/test_documents_validate.py checks it).

What is found here is the user's PATH, as the user runs the tool; pre-flight then runs
it as the agent's tool starts (benchkit.run.probe), on the curated PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotation alone: msgspec would slow bare `benchkit list`
    from benchkit.tool import ToolSpec

# The program an arm's tool starts as -> how to install it, as the README's table says.
INSTALL = {
    "curl": "`apt-get install curl`",
    "tea": "`go install code.gitea.io/tea@latest`",
    "gitea-mcp": "`go install gitea.com/gitea/gitea-mcp@latest`",
    "gitea-axi": "from its repository: `npm ci && npm run build && npm install -g .`",
}
VERSION_TIMEOUT_S = 20
TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def version_line(output: str) -> str | None:
    """The first line a version command printed, its terminal escapes (tea prints its
    version bold) and runs of blanks gone; whole: a cut mid-word would name a version
    that does not exist. None for no output."""
    text = TERMINAL_ESCAPE.sub("", output)
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    return lines[0] if lines else None


def how_to_install(executable: str) -> str:
    """The install line of a tool, or where to write one for a tool with none."""
    return INSTALL.get(executable, f"no install line for `{executable}` in benchkit/installed.py")


@dataclass(frozen=True)
class Installed:
    """What `executable` is here: its path and version line, or how to install it."""

    executable: str
    path: str | None = None
    version: str | None = None
    problem: str | None = None  # why the version is unknown although the tool is there

    @property
    def line(self) -> str:
        if self.path is None:
            return f"not installed: {how_to_install(self.executable)}"
        return f"installed: {self.version}" if self.version else f"installed ({self.problem})"


def installed(tool: ToolSpec) -> Installed:
    """The tool on the user's PATH and the first line of its version command."""
    executable = tool.executable
    if "{{" in executable:  # a template: known only when a run renders it
        return Installed(executable, executable, problem="its command is rendered per run")
    path = shutil.which(executable)
    if path is None:
        return Installed(executable)
    try:
        done = subprocess.run([path, *tool.version], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Installed(executable, path, problem=f"`{executable}` does not start: {error}")
    version = version_line(done.stdout or done.stderr)
    if done.returncode != 0 or version is None:
        return Installed(executable, path, problem=f"its version command exited "
                                                   f"{done.returncode}")
    return Installed(executable, path, version)
