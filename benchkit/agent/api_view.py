"""A Messages API request as the API reads it, where the runtime's tool search is on.

The Claude Code CLI sends a tool behind its tool search in `tools` with
`defer_loading: true` (and a `DeferredToolPlaceholder` that is never called); its
ToolSearch result is a `tool_result` holding a `tool_reference` block per tool found
(`{"type": "tool_reference", "tool_name": NAME}`). The API keeps a deferred tool out
of the prompt's tool list and expands each reference, where it stands in the
conversation, into the tool's definition; from then on the model may call it. So the
model sees the tools not deferred and the deferred ones referenced, and the prompt is
cached in that order: the tools not deferred, the system prompt, the messages with
every reference expanded (shapes recorded from the CLI's requests:
tests/end_to_end/test_arm_gitea_mcp_search.py).
"""

from __future__ import annotations

from collections.abc import Iterator


def _tools(request: dict) -> list[dict]:
    return [tool for tool in request.get("tools") or [] if isinstance(tool, dict)]


def references(request: dict) -> Iterator[str]:
    """The tool names of every tool_reference block the request's messages carry."""
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if isinstance(block, dict) else None
            for item in inner if isinstance(inner, list) else []:
                if isinstance(item, dict) and item.get("type") == "tool_reference":
                    yield str(item.get("tool_name"))


def visible_tools(request: dict) -> set[str]:
    """The names of the tools the model may call: those not deferred, and the deferred
    ones a tool search has loaded (referenced in the conversation)."""
    loaded = set(references(request))
    return {str(tool.get("name")) for tool in _tools(request)
            if not tool.get("defer_loading") or tool.get("name") in loaded}


def prompt_parts(request: dict) -> tuple:
    """(tools, system, messages) as the API caches them: deferred tools out of the
    tool list, each tool_reference expanded into the referenced tool's definition (a
    request with nothing deferred as it is)."""
    tools = _tools(request)
    deferred = {tool.get("name"): tool for tool in tools if tool.get("defer_loading")}
    if not deferred:
        return request.get("tools"), request.get("system"), request.get("messages")
    eager = [tool for tool in tools if not tool.get("defer_loading")]
    return eager, request.get("system"), [_expanded(m, deferred)
                                          for m in request.get("messages") or []]


def _expanded(message, deferred: dict):
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    blocks = []
    for block in message["content"]:
        inner = block.get("content") if isinstance(block, dict) else None
        if isinstance(inner, list):
            block = {**block, "content": [_definition(item, deferred) for item in inner]}
        blocks.append(block)
    return {**message, "content": blocks}


def _definition(item, deferred: dict):
    if isinstance(item, dict) and item.get("type") == "tool_reference":
        tool = deferred.get(item.get("tool_name"))
        if tool is not None:
            return {key: value for key, value in tool.items() if key != "defer_loading"}
    return item
