"""What of the Claude CLI's input holds the token, handed over privately: the system
prompt and the MCP servers' config as files in the run's private directory (0700,
removed after the run), never as arguments (which every user on the machine can read),
and each stdio MCP server started through a trampoline that hands it only its declared
variables, never the CLI's environment."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from claude_agent_sdk.types import SystemPromptFile

from .driver import MARKERS, MCP_PASSED, AgentRequest

# Starts an MCP server with the named variables alone (values never in any argv).
MCP_TRAMPOLINE = ("import os,sys;keep=sys.argv[1].split(',');"
                  "os.execve(sys.argv[2],sys.argv[2:],"
                  "{k:os.environ[k] for k in keep if k in os.environ})")


def private_inputs(request: AgentRequest, scratch: Path,
                   wrap) -> tuple[SystemPromptFile, str | dict]:
    """The system prompt and the MCP config as files in the run's private directory
    (0700, removed after the run), not as the CLI's arguments: both hold the token,
    and every user can read a process's arguments."""
    prompt = private_file(scratch / "system-prompt.md", request.system_prompt)
    config: str | dict = {}
    if request.mcp_servers:
        servers = {name: wrap(server) for name, server in request.mcp_servers.items()}
        config = private_file(scratch / "mcp.json", json.dumps({"mcpServers": servers}))
    return {"type": "file", "path": prompt}, config


def mcp_allowlisted(server: dict) -> dict:
    """A stdio server started through the trampoline: it sees MCP_PASSED, the run's
    markers (so the backstop finds it) and its own declared variables, not the CLI's
    environment (the API key, the harness's own)."""
    if server.get("type", "stdio") != "stdio" or "command" not in server:
        return server
    command = shutil.which(server["command"]) or server["command"]
    keep = ",".join(dict.fromkeys([*MCP_PASSED, *MARKERS, *(server.get("env") or {})]))
    return {**server, "command": sys.executable,
            "args": ["-I", "-S", "-c", MCP_TRAMPOLINE, keep, command, *server.get("args", [])]}


def private_file(path: Path, text: str) -> str:
    """Write `text` to a new file only its owner can read; its path."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w",
                   encoding="utf-8") as f:
        f.write(text)
    return str(path)
