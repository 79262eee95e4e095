"""Reading a recorded transcript (benchkit.agent.transcript's plain-dict events) back:
the audit, the outcome rules and the sample's counts use these, without the SDK the
recorder needs."""

from __future__ import annotations

from benchkit.evidence import TOOL_CALL, Event, ToolCallEvent


def tool_calls(events: list[Event]) -> list[ToolCallEvent]:
    return [e for e in events if e["event"] == TOOL_CALL]


def counts(events: list[Event]) -> tuple[int, int]:
    """(tool calls proposed, of which the guard denied)."""
    calls = tool_calls(events)
    return len(calls), sum(1 for e in calls if e.get("allowed") is False)
