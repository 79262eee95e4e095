"""Arm assembly: everything one agent run of an arm gets, from its arms.d/ document.

    assembly = assemble(arm, suite, host_url=..., api_url=..., token=..., owner=...,
                        repo=..., user=..., workdir=...)
    with assembly:            # setup(): credential files, bin directory, set-up commands
        driver.run(... assembly.system_prompt, assembly.env, assembly.tools,
                   assembly.mcp_servers ...)
                              # teardown(): the harness's directory is removed

The system prompt is the suite's base prompt (byte-identical across arms) followed by
the arm's bootstrap (gitea-axi's with its skill body). Credentials go into the arm's
environment or into files in a config directory the harness owns and removes; the
user's own tool configuration is never read or written. Nothing here prints the token.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from benchkit import journal
from benchkit.documents import Arm, Suite, find_root, render
from benchkit.installed import tool_path
from benchkit.tool import Probe, ToolSpec

from .bindir import make_bin_dir, virtual_env
from .errors import IsolationError
from .guard import Guard
from .skill import skill_body

MCP_SERVER_NAME = "gitea"  # its tools reach the agent as mcp__gitea__<tool>
SETUP_TIMEOUT_SECONDS = 60


@dataclass
class Assembly:
    arm_id: str
    guard: Guard
    base_prompt: str = field(repr=False)
    system_prompt: str = field(repr=False)
    env: dict[str, str] = field(repr=False)  # overlay on the harness's environment
    harness_dir: Path                    # owned by the harness: removed by teardown()
    config_dir: Path                     # {{ config_dir }}: credential files live here
    _tool: ToolSpec = field(repr=False)
    tools: list[str] = field(default_factory=list)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    path_dir: Path | None = None         # the curated bin directory (shell arms)
    files: dict[str, str] = field(default_factory=dict, repr=False)  # config_dir-relative
    setup_commands: list[str] = field(default_factory=list, repr=False)
    probe: Probe = field(default_factory=Probe, repr=False)  # tool.probe, rendered
    search_path: str = ""                # where the real binaries are looked up
    skill: str = field(default="", repr=False)      # the skill text the bootstrap quotes
    bootstrap_shown: str = field(default="", repr=False)  # the bootstrap without the skill
    token: str = field(default="", repr=False)
    _ready: bool = field(default=False, repr=False)

    @property
    def credential_files(self) -> tuple[Path, ...]:
        """The files written into config_dir: the agent's shell may read them only."""
        return tuple(self.config_dir / relative for relative in self.files)

    @property
    def allowed_binaries(self) -> tuple[str, ...]:
        return self.guard.allowed_binaries

    def setup(self) -> Assembly:
        """Write the credential files, make the bin directory, run the set-up commands.
        Idempotent; on failure everything made so far is removed again."""
        if self._ready:
            return self
        try:
            journal.add("tempdir", path=str(self.harness_dir))  # it holds credentials
            self.harness_dir.mkdir(mode=0o700, exist_ok=True)
            self.config_dir.mkdir(mode=0o700, exist_ok=True)
            for relative, content in self.files.items():
                path = self.config_dir / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content)
                path.chmod(0o600)
            if self.path_dir is not None:
                make_bin_dir(self.arm_id, self._tool, self.path_dir, self.search_path)
            for number, command in enumerate(self.setup_commands, 1):
                self._run_setup(number, command)
        except BaseException:
            self.teardown()
            raise
        self._ready = True
        return self

    def _run_setup(self, number: int, command: str) -> None:
        env = {**os.environ, **self.env, "PATH": self.search_path}
        try:
            done = subprocess.run(command, shell=True, env=env, cwd=self.config_dir,
                                  capture_output=True, text=True, timeout=SETUP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            raise IsolationError(f"arm {self.arm_id}: set-up command {number} timed out") from None
        if done.returncode != 0:
            detail = self._redact((done.stderr or done.stdout).strip())[-500:]
            raise IsolationError(f"arm {self.arm_id}: set-up command {number} failed with exit "
                                 f"status {done.returncode}: {detail}")

    def agent_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The whole environment the arm's tool sees, as the driver builds it: the
        harness's environment (default os.environ) without its own Gitea credentials,
        under the arm's overlay (its curated PATH included). The tool probe and the
        version command run with exactly this."""
        base = dict(os.environ if environ is None else environ)
        base.update({key: "" for key in base if key.startswith("GITEA_")})
        return {**base, **self.env}

    def _redact(self, text: str) -> str:
        return text.replace(self.token, "[token]") if self.token else text

    def teardown(self) -> None:
        """Remove the harness's directory (config, bin). Idempotent."""
        shutil.rmtree(self.harness_dir, ignore_errors=True)
        journal.remove("tempdir", path=str(self.harness_dir))
        self._ready = False

    def __enter__(self) -> Assembly:
        return self.setup()

    def __exit__(self, *exc: object) -> None:
        self.teardown()


def assemble(arm: Arm, suite: Suite, *, host_url: str, api_url: str, token: str, owner: str,
             repo: str, user: str, workdir: Path, search_path: str | None = None,
             environ: Mapping[str, str] | None = None, root: Path | None = None) -> Assembly:
    """The arm's prompt, environment, tools and credential set-up for one run. Nothing
    is written until setup(). `search_path` (default PATH, then the checkout's pinned
    builds) is where the arm's real
    binary and utilities are found; `environ` (default os.environ) is `{{ env }}`;
    `root` (default: found from the working directory) is `{{ root }}`, the loaded tree's."""
    environ = dict(os.environ if environ is None else environ)
    if search_path is None:  # PATH, then the checkout's pinned builds (scripts/setup --arms)
        search_path = tool_path(environ.get("PATH", os.defpath))
    harness_dir = Path(tempfile.gettempdir()) / f"benchkit-{arm.id}-{secrets.token_hex(6)}"
    config_dir = harness_dir / "config"
    context = dict(host_url=host_url, api_url=api_url, token=token, owner=owner, repo=repo,
                   user=user, workdir=str(workdir), config_dir=str(config_dir), env=environ)
    root = root if root is not None else find_root(required=False)
    if root is not None:
        context["root"] = str(root)

    def fill(value: Any, **extra: str) -> Any:
        """Render every string in a template value (str, list or dict)."""
        if isinstance(value, str):
            try:
                return render(value, **context, **extra)
            except jinja2.TemplateError as error:
                raise IsolationError(f"arm {arm.id} ({arm.path}): template error: {error}") from None
        if isinstance(value, list):
            return [fill(item, **extra) for item in value]
        if isinstance(value, dict):
            return {key: fill(item, **extra) for key, item in value.items()}
        return value

    tool, credentials = arm.tool, arm.credentials or {}
    base_prompt = fill(suite.base_prompt)
    base_prompt += "" if base_prompt.endswith("\n") else "\n"
    skill = skill_body(arm.id, tool, fill, environ, search_path)
    bootstrap = fill(arm.bootstrap, skill=skill)
    env = fill(credentials.get("env") or {})
    assembly = Assembly(
        arm_id=arm.id, guard=Guard.for_tool(arm.id, tool), base_prompt=base_prompt,
        system_prompt=base_prompt + "\n" + bootstrap.strip("\n") + "\n",
        env=env, harness_dir=harness_dir, config_dir=config_dir,
        files={f["path"]: fill(f["content"]) for f in credentials.get("files") or []},
        setup_commands=fill(credentials.get("setup") or []),
        probe=Probe(run=fill(tool.probe.run), tool=tool.probe.tool, input=fill(tool.probe.input)),
        search_path=search_path, token=token, _tool=tool, skill=skill,
        bootstrap_shown=fill(arm.bootstrap, skill=""))
    if tool.kind == "shell":
        assembly.tools = ["Bash"]
        assembly.path_dir = harness_dir / "bin"
        env["PATH"] = str(assembly.path_dir)  # the curated directory alone
        venv = virtual_env(shutil.which(tool.executable, path=search_path))
        if venv is not None:  # an interpreter of a virtual environment runs with it active
            env["PATH"] = os.pathsep.join([os.path.join(venv, "bin"), str(assembly.path_dir)])
            env["VIRTUAL_ENV"] = venv
        shell = shutil.which("bash", path=search_path)
        if shell:  # the Bash tool's own shell, which the curated PATH does not hold
            env["SHELL"] = shell
    else:
        assert tool.server is not None  # the schema requires it of an MCP tool
        command = fill(tool.server.command)
        if "/" not in command:
            command = shutil.which(command, path=search_path) or command
        assembly.mcp_servers = {MCP_SERVER_NAME: {
            "type": "stdio", "command": command, "args": fill(list(tool.server.args)),
            "env": fill(dict(tool.server.env))}}
        # Eager (every schema in every request, as the design measures the MCP arm), or
        # the runtime's tool search as Claude Code users get it: against a base URL that
        # is not Anthropic's the CLI defers nothing unless told to, and defers only
        # when ToolSearch is on offer.
        assembly.tools = list(tool.runtime_tools)
        env["ENABLE_TOOL_SEARCH"] = "true" if tool.tool_search else "false"
    return assembly
