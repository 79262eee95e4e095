"""Replaying a failed trial's own tool calls: the driver that plays them back, in
order and with the same inputs, through the scripted model and the real CLI.

The calls were made on the trial's own repository with its own token; the replay runs
on a freshly seeded one, so each input has the old coordinates (token, repository,
owner, URLs) replaced by the new ones, literally, longest first. The final answer is
the trial's own. Usage is estimated from bytes, as any replay's (no token is spent).
"""

from __future__ import annotations

from benchkit.agent.driver import AgentRequest, AgentRun, Coordinates
from benchkit.agent.replay import NULL_ANSWER, ReplayModel, tool_results
from benchkit.agent.runtime import OnTheCli
from benchkit.agent.scripted import ToolCall, Turn
from benchkit.evidence import RERUN, TOOL_CALL, Event


def movable(where: Coordinates) -> tuple[str, ...]:
    """The coordinates a recorded call may name that differ on a fresh repository (the
    user stays the same)."""
    return where.token, where.api_url, where.host_url, where.owner, where.repo


def recorded_calls(transcript: list[Event]) -> list[tuple[str, dict]]:
    """(tool name, input) of every call the model proposed, in order."""
    return [(e["name"], e.get("input") or {}) for e in transcript if e["event"] == TOOL_CALL]


def moved(value, swaps: list[tuple[str, str]]):
    """A call's input with every old coordinate replaced by the new one."""
    if isinstance(value, str):
        for old, new in swaps:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {key: moved(item, swaps) for key, item in value.items()}
    if isinstance(value, list):
        return [moved(item, swaps) for item in value]
    return value


class Recorded:
    """The model's turns: call i once the request carries i tool results, then the
    trial's own answer."""

    def __init__(self, calls: list[tuple[str, dict]], answer: str | None):
        self.calls, self.answer = calls, answer
        self.served = 0

    def turn(self, request: dict) -> Turn:
        index = len(tool_results(request))
        self.served = max(self.served, index)
        if index < len(self.calls):
            name, tool_input = self.calls[index]
            return Turn(calls=(ToolCall(name, tool_input),))
        return Turn(text=self.answer or NULL_ANSWER)


class RecordedDriver(OnTheCli):
    """Plays a trial's recorded calls on the request's repository (Driver protocol).

    original: the trial's coordinates, which the request's `cell` replaces in every
    input (those that move)."""

    name = "replay"

    def __init__(self, calls: list[tuple[str, dict]], answer: str | None, original: Coordinates,
                 *, cli_path: str | None = None, confine: bool = True):
        self.calls, self.answer, self.original = calls, answer, original
        self.cli_path, self.confine = cli_path, confine

    def run(self, request: AgentRequest) -> AgentRun:
        # Imported when a run happens: the SDK takes 1.5 s to import (measured).
        from benchkit.agent.claude import ClaudeDriver
        assert request.assignment is not None  # the cell runner's requests carry it
        swaps = sorted(((old, new) for old, new in zip(movable(self.original),
                                                       movable(request.assignment.where))
                        if old and new and old != new), key=lambda pair: -len(pair[0]))
        play = Recorded([(name, moved(tool_input, swaps)) for name, tool_input in self.calls],
                        moved(self.answer, swaps) if self.answer else None)
        with ReplayModel(play, model=request.model) as model:  # type: ignore[arg-type]
            run = ClaudeDriver(base_url=model.url, cli_path=self.cli_path,
                               confine=self.confine).run(request)
        run.usage_estimated = True
        run.transcript.append({"event": RERUN, "calls": len(self.calls), "served": play.served})
        return run
