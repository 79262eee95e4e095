"""An arm's tool surface: what the agent sees of its tool before its first call.

The version string alone cannot tell two builds apart that show the agent different
things, so a sample's arm fingerprint also takes the surface's digest: the MCP
server's `tools/list` (each tool's name, description and input schema, as canonical
JSON), the skill text its bootstrap quotes, and the bootstrap template. Samples of
two surfaces are never counted together (benchkit.counting).

The surface's ambient size is its static weight in every request: the bytes of the
skill, of the tool schemas and of the bootstrap (rendered, without the skill), and
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
    skill left out (its size only)."""
    tools: list[dict]
    skill: str
    bootstrap: str
    shown: str = ""

    @property
    def digest(self) -> str:
        return fingerprint({"tools": self.tools, "skill": self.skill, "bootstrap": self.bootstrap})

    @property
    def ambient_size(self) -> AmbientSize:
        return AmbientSize(skill=len(self.skill.encode()),
                       schemas=_json_bytes(self.tools) if self.tools else 0,
                       bootstrap=len(self.shown.strip().encode()))

