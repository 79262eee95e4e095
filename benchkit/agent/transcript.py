"""The transcript of one agent run: what the model proposed and what came of it.

Events (plain dicts, JSON-ready: benchkit.evidence types each kind), in stream order:
  init         the tools and MCP servers the agent was offered, its model
  text         assistant text (model named)
  tool_call    every call the model proposed: id, name, input, and the guard's
               decision (allowed, reason); None where no decision was asked for
  tool_result  size in bytes, error flag and an excerpt of what the tool returned
  request      one request of the agent's model: its usage as the API reported it
               (input and cache figures at its start, output at its end), the
               tool results that came since the request before (count, bytes), the
               tool searches among them apart (count, the tools they loaded), its
               stop reason and whether its stream completed; `usage_missing` names
               the figures its stream did not report (benchkit.agent.accounting)
  api_retry    the CLI retried a model request (status, error, delay: service.py)
  model_stall  no progress of an outstanding model request within the idle limit
  model_outstanding  a model request still outstanding when a cap ended the run
  result       the runtime's own final figures (turns, cost, usage, stop reason)
  stop         how the run ended, with any error text
What the tool returned is scrubbed of the run's secrets (every encoding) before it is
cut to an excerpt, so no cut leaves a recognisable part of one; the store scrubs the
whole transcript again when it writes it. Reading a recorded transcript back is
events.py's (it needs no SDK).
"""

from __future__ import annotations

import json
import time

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from benchkit.evidence import (
    INIT,
    MODEL_OUTSTANDING,
    MODEL_STALL,
    REQUEST,
    RESULT,
    STOP,
    TEXT,
    TOOL_CALL,
    TOOL_RESULT,
    Event,
    RequestEvent,
)
from benchkit.scrub import scrub

from .service import retry_event
from .usage import from_api_usage as usage_of

EXCERPT_CHARS = 2000
SYNTHETIC = "<synthetic>"


class Recorder:
    """Turns the SDK's message stream and the guard's decisions into events."""

    def __init__(self, secrets=()):
        self.secrets = tuple(s for s in secrets if s)
        self.events: list[Event] = []
        self.decisions: dict[str, tuple[bool, str]] = {}
        self.tools_offered: list[str] = []
        self.result: ResultMessage | None = None
        self.message_usage: dict[str, tuple[str, dict]] = {}  # message id -> (model, usage)
        self.main_messages: set[str] = set()
        self.last_text: str | None = None
        self.requests: list[RequestEvent] = []
        self._since = [0, 0]  # tool results (count, bytes) since the last request
        # The model request in flight: since when the CLI waits on it (None: it does
        # not), and when the service last gave a sign of life (a retry's wait counts).
        self._clock = time.monotonic()
        self.waiting_since: float | None = None
        self.last_sign = 0.0
        # The agent's tool calls that have no result yet: while one runs, the time is
        # the agent's, whatever the CLI says of its model requests.
        self.tools_running: set[str] = set()
        self._loaded: list[list[str]] = []  # each tool search's loaded tools, since then

    def now(self) -> float:
        """Seconds since the run started (the events' `at`)."""
        return time.monotonic() - self._clock

    def idle(self) -> float | None:
        """Seconds the outstanding model request has gone without a sign of life;
        None when no model request is outstanding."""
        if self.waiting_since is None or self.tools_running:
            return None
        return self.now() - self.last_sign

    def _asked(self) -> None:
        now = self.now()
        if self.waiting_since is None:
            self.waiting_since = now
        self.last_sign = max(self.last_sign, now)

    def model_stalled(self, idle_s: float) -> None:
        """The idle limit ended the outstanding request."""
        last = self.requests[-1] if self.requests else None
        streaming = last is not None and not last.get("complete") and \
            last.get("at", 0) >= (self.waiting_since or 0)
        self.events.append({"event": MODEL_STALL, "at": round(self.now(), 3),
                            "request": len(self.requests) + (0 if streaming else 1),
                            "idle_s": round(idle_s, 1), "streaming": streaming})

    def model_outstanding(self, by: str) -> None:
        """A cap ended the run: note the model request it cut short, if any."""
        if self.waiting_since is not None and not self.tools_running:
            last = self.requests[-1] if self.requests else None
            streaming = last is not None and not last.get("complete")
            self.events.append({"event": MODEL_OUTSTANDING, "at": round(self.now(), 3),
                                "by": by, "for_s": round(self.now() - self.waiting_since, 1),
                                "request": len(self.requests) + (0 if streaming else 1)})

    def decided(self, tool_use_id: str | None, allowed: bool, reason: str) -> None:
        # The first decision stands: the hook decides before any permission callback.
        if tool_use_id and tool_use_id not in self.decisions:
            self.decisions[tool_use_id] = (allowed, reason)

    def add(self, message) -> None:
        if isinstance(message, SystemMessage) and message.subtype == "init":
            self.tools_offered = list(message.data.get("tools", []))
            self.events.append({"event": INIT, "tools": self.tools_offered,
                                "mcp_servers": message.data.get("mcp_servers", []),
                                "model": message.data.get("model")})
        elif isinstance(message, SystemMessage) and message.subtype == "api_retry":
            event = retry_event(message.data, self.now())
            self.events.append(event)
            self._asked()  # the wait before the next attempt is a sign of life
            self.last_sign = self.now() + (event.get("retry_delay_ms") or 0) / 1000
        elif isinstance(message, SystemMessage) and message.data.get("status") == "requesting":
            self._asked()
        elif isinstance(message, StreamEvent):
            self._stream(message)
        elif isinstance(message, AssistantMessage):
            self._assistant(message)
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    text = _text_of(block.content)
                    loaded = loaded_tools(block.content)
                    if loaded is not None:  # a tool search: what it loads is not output
                        self._loaded.append(loaded)
                    else:
                        self._since[0] += 1
                        self._since[1] += len(text.encode())
                    self.events.append({"event": TOOL_RESULT, "id": block.tool_use_id,
                                        "bytes": len(text.encode()), "is_error": bool(block.is_error),
                                        "excerpt": scrub(text, self.secrets)[:EXCERPT_CHARS]})
                    if block.tool_use_id in self.tools_running:
                        self.tools_running.discard(block.tool_use_id)
                        if not self.tools_running:  # the model is asked from now on
                            self.waiting_since = self.last_sign = self.now()
        elif isinstance(message, ResultMessage):
            self.result = message
            self.waiting_since = None
            self.events.append({"event": RESULT, "subtype": message.subtype,
                                "num_turns": message.num_turns, "duration_ms": message.duration_ms,
                                "total_cost_usd": message.total_cost_usd, "usage": message.usage,
                                "model_usage": message.model_usage,
                                "terminal_reason": message.terminal_reason,
                                "api_error_status": message.api_error_status,
                                "errors": message.errors})

    def _stream(self, message: StreamEvent) -> None:
        """The agent's own requests (not a subagent's), one event each: the CLI takes
        input and cache figures from message_start and output from message_delta."""
        if message.parent_tool_use_id is not None:
            return
        event = message.event
        if self.waiting_since is not None and progress(event):  # the request in flight moves
            self.last_sign = max(self.last_sign, self.now())
        if event.get("type") == "message_start":
            self._asked()
            start = event.get("message") or {}
            given = start.get("usage")
            raw: dict = given if isinstance(given, dict) else {}
            figures = usage_of(raw)
            request: RequestEvent = {"event": REQUEST, "id": start.get("id"), "model": start.get("model"),
                       "at": round(self.now(), 3), "usage": figures,
                       "tool_results": self._since[0], "tool_result_bytes": self._since[1],
                       "stop_reason": None, "complete": False}
            if self._loaded:
                request["searches"] = len(self._loaded)
                request["loaded"] = [name for names in self._loaded for name in names]
            if raw.get("input_tokens") is None:  # what the API always reports
                request["usage_missing"] = ["input_tokens"]
            self._since, self._loaded = [0, 0], []
            self.requests.append(request)
            self.events.append(request)
        elif event.get("type") == "message_delta" and self.requests:
            output = (event.get("usage") or {}).get("output_tokens")
            if output is not None:  # as reported: checked, not trusted (accounting)
                self.requests[-1]["usage"]["output"] = output
            else:
                self.requests[-1].setdefault("usage_missing", []).append("output_tokens")
            self.requests[-1]["stop_reason"] = (event.get("delta") or {}).get("stop_reason")
        elif event.get("type") == "message_stop" and self.requests:
            # The CLI closes a broken stream with a message_stop of its own: only one
            # that said why it stopped is whole, and a broken one will be retried.
            if self.requests[-1]["stop_reason"] is not None:
                self.requests[-1]["complete"] = True
                self.waiting_since = None

    def _assistant(self, message: AssistantMessage) -> None:
        key = message.message_id or message.uuid or str(len(self.events))
        # The CLI voices its own errors as "<synthetic>" assistant messages: no model
        # answered them, so they are neither turns nor answers.
        turn = message.parent_tool_use_id is None and message.model != SYNTHETIC
        if message.usage and message.model != SYNTHETIC:
            self.message_usage[key] = (message.model, message.usage)
        if turn:
            self.main_messages.add(key)
        for block in message.content:
            if isinstance(block, TextBlock):
                self.events.append({"event": TEXT, "model": message.model, "text": block.text})
                if turn and block.text.strip():
                    self.last_text = block.text
            elif isinstance(block, ToolUseBlock):
                self.events.append({"event": TOOL_CALL, "id": block.id, "name": block.name,
                                    "input": block.input, "model": message.model})
                if turn:
                    self.tools_running.add(block.id)

    def stopped(self, stop: str, error: str | None) -> None:
        self.events.append({"event": STOP, "stop": stop, "error": error})

    def finish(self) -> list[Event]:
        """The events, each proposed call annotated with the guard's decision."""
        for event in self.events:
            if event["event"] == TOOL_CALL:
                allowed, reason = self.decisions.get(event["id"], (None, None))
                event["allowed"], event["reason"] = allowed, reason
        return self.events


def progress(event: dict) -> bool:
    """Whether a stream event moves the answer on. A ping, a delta that adds nothing
    (an empty text), an empty block opened, or an event of a kind unknown here say only
    that the connection lives: a stream of nothing else is a stall all the same."""
    kind = event.get("type")
    if kind in ("message_start", "message_delta", "message_stop", "content_block_stop"):
        return True
    if kind == "content_block_delta":
        delta = event.get("delta") or {}
        return any(value for key, value in delta.items() if key != "type")
    if kind == "content_block_start":
        block = event.get("content_block") or {}
        return block.get("type") not in ("text", "thinking") or bool(
            block.get("text") or block.get("thinking"))
    return False


def loaded_tools(content) -> list[str] | None:
    """The tools a tool search's result loads (its tool_reference blocks:
    benchkit.agent.api_view); None for any other tool's result."""
    if not isinstance(content, list):
        return None
    found = [item.get("tool_name") for item in content
             if isinstance(item, dict) and item.get("type") == "tool_reference"]
    return [str(name) for name in found] if found else None


def _text_of(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for item in content:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append(item.get("text", ""))
        else:
            parts.append(json.dumps(item))
    return "\n".join(parts)
