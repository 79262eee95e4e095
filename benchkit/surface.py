"""An arm's tool surface: what the agent sees of its tool before its first call.

The version string alone cannot tell two builds apart that show the agent different
things, so a sample's arm fingerprint also takes the surface's digest: the MCP
server's `tools/list` (each tool's name, description and input schema, as canonical
JSON), the skill text its bootstrap quotes, and the bootstrap template. Samples of
two surfaces are never counted together (benchkit.counting).

An arm behind the runtime's tool search (tool_search) shows the agent its tools' names
first and a schema only once the agent searches for it: its surface also holds the
names as announced, and digests them with the rest.

The surface's ambient size is its static weight in every request: the bytes of the
skill, of the tool schemas (behind tool search: of the names announced, one a line)
and of the bootstrap (rendered, without the skill), and
tokens estimated from them at four bytes a token, the rule the replay's usage
estimates use (docs/replay.md). It is an estimate: the tokenizer is not run, and the
CLI sends schemas in its own framing. Pre-flight measures it once per run; the sample
records it; the report shows it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import msgspec

from benchkit.fingerprint import fingerprint

BYTES_PER_TOKEN = 4  # the replay's estimate (benchkit.agent.scripted), applied to bytes
PARTS = ("skill", "schemas", "bootstrap")


class AmbientSize(msgspec.Struct, frozen=True, gc=False):
    """Bytes of each part of an arm's surface the agent carries in every request."""
    skill: int = 0
    schemas: int = 0
    bootstrap: int = 0

    @property
    def total(self) -> int:
        return self.skill + self.schemas + self.bootstrap


def estimated_tokens(n_bytes: int) -> int:
    """Tokens estimated from bytes (rounded up): labelled an estimate wherever shown."""
    return (n_bytes + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def canonical_tools(tools: Iterable[Mapping]) -> list[dict]:
    """A tools/list answer as the agent sees it: name, description and input schema of
    each tool, sorted by name (the server's order carries no meaning)."""
    kept = [{"name": tool.get("name"), "description": tool.get("description") or "",
             "inputSchema": tool.get("inputSchema") or {}} for tool in tools]
    return sorted(kept, key=lambda tool: str(tool["name"]))


def _json_bytes(value) -> int:
    return len(json.dumps(value, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False).encode())


class Surface(msgspec.Struct, frozen=True):
    """What the agent sees of an arm's tool. `tools`: canonical_tools of the MCP
    server's tools/list (empty for a shell arm); `skill`: the skill text; `bootstrap`:
    the arm's bootstrap template; `shown`: that bootstrap rendered for the agent, the
    skill left out (its size only); `announced`: the tools' names as the runtime
    announces them when their schemas wait behind its tool search (empty: eager)."""
    tools: list[dict]
    skill: str
    bootstrap: str
    shown: str = ""
    announced: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        shown = {"tools": self.tools, "skill": self.skill, "bootstrap": self.bootstrap}
        if self.announced:  # an eager surface's digest is what it always was
            shown["announced"] = list(self.announced)
        return fingerprint(shown)

    @property
    def ambient_size(self) -> AmbientSize:
        schemas = (len("\n".join(self.announced).encode()) if self.announced
                   else _json_bytes(self.tools) if self.tools else 0)
        return AmbientSize(skill=len(self.skill.encode()), schemas=schemas,
                           bootstrap=len(self.shown.strip().encode()))

    def schema_bytes(self) -> dict[str, int]:
        """Tool name -> the bytes of its schema (canonical JSON): what a tool search
        that loads it adds to the prompt, estimated (the CLI frames it its own way)."""
        return {str(tool["name"]): _json_bytes(tool) for tool in self.tools}

