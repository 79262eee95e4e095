"""The agent runtime under every sample: the Claude Code CLI and the Claude Agent SDK.

The SDK's wheel bundles the CLI, whose system prompt, tool descriptions, retries and
tool search change from release to release; a sample records both versions
(benchkit.sample.Runtime) so that samples of two runtimes are never counted together.
The CLI's version is what `claude --version` prints (the version every request's
system block names as `cc_version`); the SDK's is its installed distribution's.
Found without importing the SDK (1.5 s, measured).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from benchkit.sample import Runtime

VERSION_TIMEOUT_SECONDS = 60
SDK_DISTRIBUTION = "claude-agent-sdk"


def bundled_cli() -> str | None:
    """The CLI the SDK runs when given no cli_path: its bundled one, else `claude` on
    PATH (the SDK's own order); None when there is neither."""
    found = importlib.util.find_spec("claude_agent_sdk")
    if found is None or found.origin is None:
        return None
    bundled = Path(found.origin).parent / "_bundled" / "claude"
    return str(bundled) if bundled.is_file() else shutil.which("claude")


@functools.lru_cache(maxsize=8)
def installed_runtime(cli_path: str | None = None) -> Runtime | None:
    """The runtime a driver with this cli_path runs (None: the SDK's choice); None when
    the CLI is missing or prints no version (pre-flight has said so already)."""
    cli = cli_path or bundled_cli()
    if cli is None:
        return None
    try:
        done = subprocess.run([cli, "--version"], capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_SECONDS, env=_quiet_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    return Runtime(cli=lines[0].strip(), sdk=sdk_version())


class OnTheCli:
    """A driver that runs the agent on the Claude Code CLI at `cli_path` (None: the
    SDK's own): its `runtime`, which every sample of its runs records."""

    cli_path: str | None = None
    confine: bool = True         # its agent's shell runs in the OS sandbox
    base_url: str | None = None  # the model endpoint; None: the CLI's own credentials
    config_dir: str | os.PathLike | None = None  # the CLI's config; None: the maintainer's

    @property
    def runtime(self) -> Runtime | None:
        return installed_runtime(self.cli_path)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Its own credentials (a replay's model takes a dummy key: none)."""
        return ()

    def played(self, task: str) -> str | None:
        """A model answers: nothing played."""
        return None


def sdk_version() -> str:
    try:
        return importlib.metadata.version(SDK_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _quiet_env() -> dict[str, str]:
    """`--version` needs no login and must not update itself."""
    return {**os.environ, "DISABLE_AUTOUPDATER": "1"}
