"""A group's samples as the numeric columns the report's tallies need (a Block):
one C-level pass over the samples a column, never a Python expression a sample.
Nothing here imports numpy: the report's store-reading child builds them without it
(benchkit.report.summary)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from itertools import chain
from operator import attrgetter
from typing import ClassVar

import msgspec
from msgspec.structs import astuple

from benchkit.anatomy import PARTS
from benchkit.sample import COMPONENTS, Anatomy, Sample
from benchkit.statistics.rows import AS_RECORDED

# A sample's anatomy as columns: has it, estimated, requests, the first request's
# prompt, tool results and their bytes, tool searches, then each part's tokens in
# COMPONENTS order.
ANATOMY_PARTS = PARTS
ANATOMY_COLUMNS = ("has", "estimated", "requests", "ambient_tokens", "tool_results",
                   "tool_result_bytes", "search_calls",
                   *(f"{part}.{c}" for part in ANATOMY_PARTS for c in COMPONENTS))
_USAGE, _COST_USD, _ANATOMY = attrgetter("usage"), attrgetter("cost_usd"), attrgetter("anatomy")
_INPUT, _CACHE_WRITE, _CACHE_WRITE_1H, _CACHE_READ, _OUTPUT = map(attrgetter, (
    "input", "cache_write", "cache_write_1h", "cache_read", "output"))
_TURNS, _DURATION, _OUTCOME, _BLOCKED = map(attrgetter, (
    "turns", "duration_s", "outcome", "blocked_calls"))
_FAILED = attrgetter("id", "trial", "outcome", "failure_class")
_ANATOMY_FIGURES = attrgetter(*ANATOMY_COLUMNS[2:7])
_ANATOMY_PARTS = attrgetter(*ANATOMY_PARTS)


class Block(msgspec.Struct, array_like=True, gc=False):
    """One group's columns, as float64 bytes, column after column: usage as recorded
    (input, cache_write, cache_write_1h or 0, cache_read, output), the trial row's
    columns the sample recorded (benchkit.statistics.rows.AS_RECORDED: turns, duration,
    passed, blocked calls, cost_usd or 0, whether it has a cost), and the cost anatomy
    of the members that have one (ANATOMY_COLUMNS: 1, then its figures; older samples
    have none); and the members that did not pass, (id, trial, outcome, failure class)
    each, for the report's list of failures; and what each of the tool's commands cost
    (command_sums)."""
    count: int
    jobs: int | None
    usage: bytes
    other: bytes
    anatomy: bytes
    failed: list[tuple[str, int, str, str | None]]
    commands: dict[str, list[float]]  # command -> COMMAND_COLUMNS (benchkit.report.calls)
    USAGE: ClassVar[int] = 5  # columns of each
    OTHER: ClassVar[int] = len(AS_RECORDED)
    ANATOMY: ClassVar[int] = len(ANATOMY_COLUMNS)

    @classmethod
    def of(cls, members: list[Sample], jobs: int | None) -> Block:
        # Each column is a C-level pass (attrgetter over the members), not a Python
        # expression a sample: on a 100,000-sample store this was half the report's time.
        usages = list(map(_USAGE, members))
        costs = list(map(_COST_USD, members))
        recorded = {
            "turns": map(_TURNS, members), "duration": map(_DURATION, members),
            "success": [outcome == "passed" for outcome in map(_OUTCOME, members)],
            "blocked": map(_BLOCKED, members),
            "cost_usd": [cost or 0.0 for cost in costs],
            "has_cost_usd": [cost is not None for cost in costs]}
        anatomies = [found for found in map(_ANATOMY, members) if found is not None]
        return cls(
            len(members), jobs,
            _columns(map(_INPUT, usages), map(_CACHE_WRITE, usages),
                     [value or 0 for value in map(_CACHE_WRITE_1H, usages)],
                     map(_CACHE_READ, usages), map(_OUTPUT, usages)),
            _columns(*(recorded[column] for column in AS_RECORDED)),
            _columns(*zip(*map(_anatomy_row, anatomies))) if anatomies else b"",
            [failed for failed in map(_FAILED, members) if failed[2] != "passed"],
            command_sums(members))


# A command's sums over a block's members that have an anatomy: calls, failed calls,
# retries, result bytes, then its results' tokens in COMPONENTS order.
COMMAND_COLUMNS = ("calls", "failed", "retries", "bytes", *COMPONENTS)
# Where a sample older than its calls has its tool output (its anatomy says how much).
UNRECORDED = "(calls not recorded)"


def command_sums(members: list[Sample]) -> dict[str, list[float]]:
    """command -> its COMMAND_COLUMNS summed over the members with an anatomy (those
    "Where the tokens go" reads), so the commands' tokens sum to their tool output."""
    sums: dict[str, list[float]] = {}
    for sample in members:
        if sample.anatomy is None:
            continue
        if sample.calls is None:
            row = sums.setdefault(UNRECORDED, [0.0] * len(COMMAND_COLUMNS))
            for c, value in enumerate(astuple(sample.anatomy.tool_output)):
                row[4 + c] += value
            continue
        for call in sample.calls:
            row = sums.setdefault(call.command, [0.0] * len(COMMAND_COLUMNS))
            row[0] += 1
            row[1] += call.failed is not None
            row[2] += call.retry
            row[3] += call.bytes
            for c, value in enumerate(astuple(call.result)):
                row[4 + c] += value
    return sums


def _anatomy_row(found: Anatomy) -> tuple:
    return (1.0, float(found.estimated), *_ANATOMY_FIGURES(found),
            *chain.from_iterable(map(astuple, _ANATOMY_PARTS(found))))


def _columns(*columns: Iterable) -> bytes:
    values = array("d")
    for column in columns:
        values.extend(array("d", column))
    return values.tobytes()
