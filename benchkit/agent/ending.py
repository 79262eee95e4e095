"""How an agent run ends, besides the agent's own end: the CLI's error results
classified, and the watch on the model request in flight.

The CLI has an idle timeout of its own on a model stream, but never below 300 s (its
bundled code takes max(CLAUDE_STREAM_IDLE_TIMEOUT_MS, 300000)), the length of the
suite's default backstop; and it retries a 401 or 403 for minutes with a growing
delay. The watch ends the run sooner, from what the CLI emits (benchkit.agent.service):
a model request that makes no progress for the suite's `model_idle_seconds` (the wait
a retry announced excluded) is a stall, and a retried 401/403 refused credentials.
Progress is what moves the answer on (benchkit.agent.transcript.progress): keep-alive
pings or a trickle of empty deltas keep a connection open, and the request stalled
all the same.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from claude_agent_sdk import ResultError, SystemMessage

from benchkit.evidence import API_RETRY, Event

from .transcript import Recorder

_API_STATUS = re.compile(r"API Error: ([1-5][0-9][0-9])\b")
# How often the watch looks, as a share of the idle limit (and at most every second).
_LOOKS_PER_LIMIT = 8


async def watch_model(recorder: Recorder, idle_limit: float | None,
                      end: Callable[[str, str], None]) -> None:
    """Call end(stop, error) once, when the outstanding model request stalls past
    `idle_limit` seconds or the service refused the credentials; never returns
    otherwise (cancel it)."""
    pause = min(1.0, (idle_limit or 8.0) / _LOOKS_PER_LIMIT)
    while True:
        await asyncio.sleep(pause)
        status = refused_status(recorder.events)
        if status is not None:
            end("api-error", f"the model service refused the credentials (HTTP {status})")
            return
        idle = recorder.idle()
        if idle_limit is not None and idle is not None and idle > idle_limit:
            recorder.model_stalled(idle)
            end("model-stall", f"model stream stalled {idle:.0f} s (no progress within "
                               f"the idle limit of {idle_limit:g} s)")
            return


def refused_status(events: list[Event]) -> int | None:
    """401 or 403, once the CLI retries a request the service refused with it."""
    for event in reversed(events):
        if event["event"] == API_RETRY:
            status = event.get("error_status")
            return status if status in (401, 403) else None
    return None


def classify_result(subtype, terminal_reason, status, detail) -> tuple[str, str, int | None]:
    """(stop, error, status) of an error result of the CLI."""
    text = detail if isinstance(detail, str) else "; ".join(map(str, detail or []))
    if subtype == "error_max_turns" or terminal_reason == "max_turns":
        return "turn-cap", text or "turn cap reached", None
    if terminal_reason == "api_error" or status is not None:
        said = _API_STATUS.search(text or "")  # the CLI names a status it did not retry
        return "api-error", text or "API error", status or (int(said[1]) if said else None)
    return "crash", text or f"error result: {subtype}", status


def classify_result_error(exc: ResultError) -> tuple[str, str, int | None]:
    return classify_result(exc.subtype, exc.terminal_reason, exc.api_error_status,
                           exc.result or exc.errors or str(exc))


def unstarted_mcp_servers(message) -> list[str]:
    """A server that did not start leaves the agent without tools: stop before the
    model spends a token on it. "name (status)" of each: failed, or still pending (the
    CLI starts the agent without a server that is slow to connect, unless told to wait:
    MCP_CONNECTION_NONBLOCKING, which the Claude driver sets)."""
    if not (isinstance(message, SystemMessage) and message.subtype == "init"):
        return []
    return [f"{s.get('name', '?')} ({s.get('status')})" for s in message.data.get("mcp_servers", [])
            if s.get("status") != "connected"]


def tail(lines) -> str:
    """The CLI's last lines of stderr, after an error's own text."""
    return ("\n" + "\n".join(lines)) if lines else ""
