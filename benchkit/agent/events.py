"""Reading a recorded transcript (benchkit.agent.transcript's plain-dict events) back:
the audit, the outcome rules and the sample's counts use these, without the SDK the
recorder needs."""

from __future__ import annotations


def tool_calls(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "tool_call"]


def counts(events: list[dict]) -> tuple[int, int]:
    """(tool calls proposed, of which the guard denied)."""
    calls = tool_calls(events)
    return len(calls), sum(1 for e in calls if e.get("allowed") is False)
