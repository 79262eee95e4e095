"""Where a trial's tokens go: its model requests' usage, one by one, split into six
parts that add up to the trial's usage exactly (docs/anatomy.md).

    ambient        the first request's whole prompt (system prompt, tool definitions,
                   skill, bootstrap, the task)
    runtime's own  the requests the runtime makes for its own chores, outside the
                   agent's loop (Claude Code names the session with one, on the main
                   model): the trial's usage beyond its agent's requests'
    searches       the fresh part of a later request's prompt taken by the tool
                   schemas the runtime's tool search loaded since the request before:
                   their bytes / 4 tokens, at most the request's fresh tokens (zero
                   for an arm whose schemas are eager)
    carried        what later requests re-read of earlier turns: their cache reads, and
                   the fresh part of their prompt that is not tool output (the model's
                   previous turn coming back as input, the CLI's wrapping)
    tool output    the fresh part of a later request's prompt taken by the tool results
                   that came since the request before: their bytes / 4 tokens, at most
                   what the searches left of the request's fresh tokens (input and
                   cache writes, in proportion)
    model output   every request's output tokens

A part is kept in the cost components (benchkit.sample.COMPONENTS), so the report
weighs it as it weighs the trial's usage and the four parts' costs sum to the trial's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import msgspec

from benchkit.evidence import RequestEvent, UsageFigures
from benchkit.sample import COMPONENTS, Anatomy, Part

PARTS = ("ambient", "runtime_own", "searches", "carried", "tool_output", "model_output")
BYTES_PER_TOKEN = 4


def components_of(usage: UsageFigures) -> list[int]:
    """Usage as recorded (benchkit.sample.USAGE_FIELDS) in COMPONENTS order; a cache
    write not split by lifetime counts as a 5-minute one (as benchkit.cost does)."""
    one_hour = usage.get("cache_write_1h") or 0
    return [usage.get("input") or 0, (usage.get("cache_write") or 0) - one_hour, one_hour,
            usage.get("cache_read") or 0, usage.get("output") or 0]


def anatomy(requests: list[RequestEvent], total: UsageFigures, *, estimated: bool,
            schema_bytes: Mapping[str, int] | None = None) -> Anatomy | None:
    """The six parts of a trial from its request events (transcript "request":
    usage, tool_results, tool_result_bytes, and the tools a search `loaded`) and its
    total usage; None with no request. `schema_bytes`: an arm's tool name (without
    mcp__<server>__) -> the bytes of its schema (benchkit.surface)."""
    if not requests:
        return None
    parts = {name: [0] * len(COMPONENTS) for name in PARTS}
    input_, write_5m, write_1h, read, output = range(len(COMPONENTS))
    for number, request in enumerate(requests):
        figures = components_of(request["usage"])
        parts["model_output"][output] += figures[output]
        if number == 0:
            for c in (input_, write_5m, write_1h, read):
                parts["ambient"][c] += figures[c]
            continue
        parts["carried"][read] += figures[read]
        fresh, search, tool = fresh_split(request, schema_bytes)
        for c, left, searched, taken in zip((input_, write_5m, write_1h), fresh, search, tool,
                                            strict=True):
            parts["searches"][c] += searched
            parts["tool_output"][c] += taken
            parts["carried"][c] += left - taken
    _settle(parts, components_of(total))
    first = components_of(requests[0]["usage"])
    return Anatomy(
        requests=len(requests),
        ambient_tokens=sum(first[:4]),
        tool_results=sum(r.get("tool_results", 0) for r in requests),
        tool_result_bytes=sum(r.get("tool_result_bytes", 0) for r in requests),
        search_calls=sum(r.get("searches", 0) for r in requests),
        estimated=estimated,
        **{name: Part(*values) for name, values in parts.items()})


def fresh_split(request: RequestEvent, schema_bytes: Mapping[str, int] | None = None
                ) -> tuple[list[int], list[int], list[int]]:
    """A later request's fresh prompt tokens (input, 5-minute and 1-hour writes): (what
    the tool searches left of them, the searches' share, the tool results' share).
    benchkit.agent.calls splits the tool results' share over the results themselves."""
    figures = components_of(request["usage"])
    fresh = figures[:3]
    loaded = sum((schema_bytes or {}).get(_bare(name), 0) for name in request.get("loaded", ()))
    search = _tool_share(fresh, math.ceil(loaded / BYTES_PER_TOKEN))
    fresh = [whole - taken for whole, taken in zip(fresh, search, strict=True)]
    tool = _tool_share(fresh, math.ceil(request.get("tool_result_bytes", 0) / BYTES_PER_TOKEN))
    return fresh, search, tool


def _bare(name: str) -> str:
    """A tool's name without the runtime's mcp__<server>__ prefix."""
    return name.split("__", 2)[2] if name.startswith("mcp__") and name.count("__") >= 2 else name


def _tool_share(fresh: list[int], tokens: int) -> list[int]:
    """Up to `tokens` of a request's fresh prompt tokens, taken from input, 5-minute
    and 1-hour writes in proportion (integers, summing to min(tokens, fresh))."""
    whole = sum(fresh)
    wanted = min(tokens, whole)
    if whole == 0:
        return [0, 0, 0]
    taken = [min(f, f * wanted // whole) for f in fresh]
    for i, f in enumerate(fresh):  # the rounding's remainder, where room is left
        extra = min(f - taken[i], wanted - sum(taken))
        taken[i] += extra
    return taken


def _settle(parts: dict, total: list[int]) -> None:
    """Make the parts sum to the trial's usage: what the requests do not account for
    is the runtime's own requests'; where the requests report more than the
    total (a run the backstop ended keeps only what its messages carried), the
    excess comes off the parts, model output first."""
    for c, whole in enumerate(total):
        left = whole - sum(parts[name][c] for name in PARTS)
        if left >= 0:
            parts["runtime_own"][c] += left
            continue
        for name in reversed(PARTS):
            cut = min(parts[name][c], -left)
            parts[name][c] -= cut
            left += cut


def cost_of(part: Part, weights: tuple) -> float:
    """Cost-equivalent tokens of one part at the suite's weights (COMPONENTS order)."""
    return sum(count * weight for count, weight in
               zip(msgspec.structs.astuple(part), weights, strict=True))
