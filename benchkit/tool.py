"""An arm's tool as a typed record: what `tool:` in an arms.d/ document declares.

The JSON Schema (benchkit/schemas/arm.schema.json) stays the validator of record: it
has checked the document, named file and line, and filled in its defaults before
`ToolSpec.from_data` converts the mapping. Foundation layer: benchkit.documents loads it, and
the isolation, agent and run stages read it without importing the documents' models.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

# The runtime's tool that loads deferred tool schemas (Claude Code's tool search).
TOOL_SEARCH = "ToolSearch"


class Server(msgspec.Struct, frozen=True):
    """An MCP tool's server, started over stdio (templates, rendered per run)."""

    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}


class Probe(msgspec.Struct, frozen=True):
    """The one read-only pre-flight call: `run` for a shell tool, `tool` and `input`
    for an MCP tool (templates until the assembly renders them)."""

    run: str | None = None
    tool: str | None = None
    input: dict[str, Any] = {}


class Skill(msgspec.Struct, frozen=True):
    """Where the tool's SKILL.md is: the file an environment variable names, else the
    first of `paths` that holds one."""

    paths: tuple[str, ...]
    override: str | None = None


class ToolSpec(msgspec.Struct, frozen=True):
    """The one tool of an arm: a shell binary run through Bash, or an MCP server."""

    kind: Literal["shell", "mcp"]
    probe: Probe
    binary: str | None = None  # shell only
    forbidden_subcommands: tuple[tuple[str, ...], ...] = ()  # shell only
    # shell only: the binary's options whose value is a file it writes (`-o FILE`); the
    # guard holds each such file to the trial's own places.
    writes: tuple[str, ...] = ()
    install: str | None = None  # how a user installs the tool: `benchkit list arms` says it
    skill: Skill | None = None
    version: tuple[str, ...] = ("--version",)
    server: Server | None = None  # mcp only
    # mcp only: the runtime's tool search, as Claude Code users get it: the server's
    # tools are announced by name and the agent loads their schemas with ToolSearch.
    tool_search: bool = False

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ToolSpec:
        """The record of a validated `tool:` mapping (a bare skill path is a one-place
        Skill)."""
        skill = data.get("skill")
        if isinstance(skill, str):
            data = {**data, "skill": {"paths": [skill]}}
        if not data.get("version"):  # `version: []` asks for the default, as it always did
            data = {**data, "version": ["--version"]}
        return msgspec.convert(data, cls)

    @property
    def runtime_tools(self) -> tuple[str, ...]:
        """The runtime's own tools the agent is offered beside the arm's: ToolSearch
        when the arm's tool search is on, else none."""
        return (TOOL_SEARCH,) if self.tool_search else ()

    @property
    def executable(self) -> str:
        """The program the agent's tool starts as: the binary, or the server's command
        (a template for an MCP server)."""
        if self.kind == "shell":
            assert self.binary is not None  # the schema requires it of a shell tool
            return self.binary
        assert self.server is not None  # the schema requires it of an MCP tool
        return self.server.command
