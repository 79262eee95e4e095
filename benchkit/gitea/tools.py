"""The real tools `scripts/setup` and `scripts/test-setup` build (scripts/tools.sh): their
pins (`tools/versions`) and where each build lives (`.tools/<tool>-<version>/`), or why
there is none. The product reads it for the pinned Gitea a run starts with `--host
gitea` (benchkit.gitea.server); the tests for every tool.

Gitea is built from its Go module; tea, gitea-mcp and gitea-axi from source archives
(their pin names the archive and its sha256). The scripts write
`.tools/<tool>-<version>.absent`, one line saying why, for a tool they could not build
(Go or npm missing, no archive, a failed build); `--host gitea` says that line, and a
test that needs the tool skips (outside CI) or fails (in CI) with it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchkit import PACKAGE_DIR
from benchkit.errors import HarnessError

CHECKOUT = PACKAGE_DIR.parent
VERSIONS = CHECKOUT / "tools" / "versions"
TOOLS_DIR = CHECKOUT / ".tools"
# tool name -> (key prefix in tools/versions, the binary's path in its build directory);
# gitea-axi's build is an npm-style global prefix (bin/ links into lib/node_modules/).
TOOLS = {"gitea": ("GITEA", "gitea"), "tea": ("TEA", "tea"),
         "gitea-mcp": ("GITEA_MCP", "gitea-mcp"), "gitea-axi": ("GITEA_AXI", "bin/gitea-axi")}


class ToolUnavailable(HarnessError):
    """A pinned tool is not built here; the message says why and what to run."""


@dataclass(frozen=True)
class Pin:
    tool: str
    source: str  # the Go module (Gitea) or the source archive it is built from
    version: str  # without the leading "v"; what the build reports

    @property
    def directory(self) -> Path:
        """Where test-setup puts this version's build."""
        return TOOLS_DIR / f"{self.tool}-{self.version}"

    @property
    def binary(self) -> Path:
        return self.directory / TOOLS[self.tool][1]


def read_versions(path: Path = VERSIONS) -> dict[str, str]:
    """The KEY=VALUE lines of the pin file (comments and blank lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ToolUnavailable(f"cannot read the tool pins {path}: {exc.strerror}") from None
    values = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ToolUnavailable(f"{path}:{number}: want KEY=VALUE, got {line!r}")
        values[key.strip()] = value.strip()
    return values


def pin(tool: str, path: Path = VERSIONS) -> Pin:
    """The pinned source and version of `tool` (a key of TOOLS)."""
    prefix = TOOLS[tool][0]
    values = read_versions(path)
    try:
        source = values.get(f"{prefix}_ARCHIVE") or values[f"{prefix}_MODULE"]
        return Pin(tool, source, values[f"{prefix}_VERSION"].lstrip("v"))
    except KeyError as exc:
        raise ToolUnavailable(f"{path}: no {exc.args[0]} line") from None


def built(tool: str, env_override: str | None = None) -> Path:
    """The path of the pinned build of `tool`; ToolUnavailable naming why there is none.
    `env_override` names an environment variable that may point at another binary."""
    if env_override and os.environ.get(env_override):
        binary = Path(os.environ[env_override])
        if not os.access(binary, os.X_OK):
            raise ToolUnavailable(f"{env_override}={binary} is not an executable file")
        return binary
    wanted = pin(tool)
    if os.access(wanted.binary, os.X_OK):
        return wanted.binary
    absent = wanted.directory.with_name(wanted.directory.name + ".absent")
    why = absent.read_text(encoding="utf-8").strip() if absent.is_file() else ""
    raise ToolUnavailable(
        f"{tool} {wanted.version} ({wanted.source}) is not built at {wanted.binary}: "
        + (why or "run `bash scripts/setup --host gitea` (Gitea) or `bash scripts/test-setup` "
                  "(every tool)"))
