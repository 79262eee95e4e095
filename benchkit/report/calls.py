"""The report's per-command view: which of a tool's own commands cost the tokens.

Each trial's calls are named by the tool's command (benchkit.agent.calls) and carry
their results' share of the cost anatomy's tool-output part, so an arm's commands add
up to its tool output in "Where the tokens go": per trial, as there, the mean over the
arm's tasks of each task's mean over the trials that recorded their requests. A
version comparison adds, command by command, what changed between the two versions on
the tasks both ran.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np

from benchkit.report.columns import COMMAND_COLUMNS
from benchkit.report.record import ReportRecord
from benchkit.report.tally import Tally
from benchkit.sample import COMPONENTS

_CALLS, _FAILED, _RETRIES, _BYTES = range(4)


class CommandRow(ReportRecord):
    """One command of an arm's tool (benchkit.report.calls): per trial, means over the
    arm's tasks of each task's mean, as "Where the tokens go" counts."""
    command: str
    calls: float        # calls per trial
    cost: float         # its results' cost-equivalent tokens per trial (tool output)
    share: float | None  # of the arm's tool output
    failed: float | None  # failed calls / calls
    retries: float      # retries per trial
    bytes: float | None  # a result's mean size


class CommandTable(ReportRecord):
    """An arm's commands by cost: its tool-output part, command by command."""
    arm: str
    kind: str  # measured | replay
    estimated: bool
    tasks: int
    trials: int
    tool_output: float  # the tool-output part per trial: the rows' costs sum to it
    rows: list[CommandRow]


class CommandChange(ReportRecord):
    """One command in a version comparison: newest against older, per trial on the
    tasks both ran; None where a version never ran it."""
    command: str
    cost_newest: float | None
    cost_older: float | None
    calls_newest: float | None
    calls_older: float | None
    failed_newest: float | None
    failed_older: float | None


def command_tables(tallies: Mapping, cells: Mapping[str, Iterable[str]],
                   weights: Mapping[str, float], kind: str) -> list[CommandTable]:
    """Per arm with a trial that has an anatomy: its commands by cost, costliest first.
    cells: arm -> the tasks counted (those "Where the tokens go" reads); kind: measured
    | replay."""
    weight = _weight(weights)
    tables = []
    for arm, tasks in cells.items():
        per_task = [found for task in tasks
                    if (found := per_trial(tallies.get((arm, task)), weight)) is not None]
        if not per_task:
            continue
        means = _mean_over_tasks(per_task)
        total = math.fsum(row[-1] for row in means.values())
        rows = [_row(command, row, total) for command, row in means.items()]
        tables.append(CommandTable(
            arm=arm, kind=kind, estimated=kind == "replay", tasks=len(per_task),
            trials=sum(n for _, n in per_task), tool_output=total,
            rows=sorted(rows, key=lambda r: (-r.cost, r.command))))
    return tables


def command_changes(new: Mapping[str, Tally], old: Mapping[str, Tally], tasks: list[str],
                    weights: Mapping[str, float]) -> list[CommandChange]:
    """Command by command, newest (`new`: task -> Tally) against older (`old`) on
    `tasks`: cost, calls and failure rate per trial; the largest change first."""
    weight = _weight(weights)
    sides = []
    for tallies in (new, old):
        found = [f for t in tasks if (f := per_trial(tallies.get(t), weight)) is not None]
        sides.append(_mean_over_tasks(found) if found else {})
    changes = []
    for command in dict.fromkeys([*sides[0], *sides[1]]):
        a, b = sides[0].get(command), sides[1].get(command)
        changes.append(CommandChange(
            command=command,
            cost_newest=None if a is None else float(a[-1]),
            cost_older=None if b is None else float(b[-1]),
            calls_newest=None if a is None else float(a[_CALLS]),
            calls_older=None if b is None else float(b[_CALLS]),
            failed_newest=_rate(a), failed_older=_rate(b)))
    return sorted(changes, key=lambda c: (-abs((c.cost_newest or 0) - (c.cost_older or 0)),
                                          c.command))


def per_trial(tally: Tally | None, weight: np.ndarray) -> tuple[dict[str, np.ndarray], int] | None:
    """A cell's (command -> its columns per trial, with its cost appended; trials with an
    anatomy); None when no trial has one."""
    if tally is None or not len(tally):
        return None
    sums, trials = tally.commands()
    if not trials:
        return None
    return {command: np.append(row[:4], row[4:] @ weight) / trials
            for command, row in sums.items()}, trials


def _mean_over_tasks(per_task: list[tuple[dict[str, np.ndarray], int]]) -> dict[str, np.ndarray]:
    """command -> the mean over the tasks of its per-trial columns (zero in a task
    that never ran it)."""
    width = len(COMMAND_COLUMNS) - len(COMPONENTS) + 1
    commands = dict.fromkeys(command for found, _ in per_task for command in found)
    return {command: sum((found.get(command, np.zeros(width)) for found, _ in per_task),
                         np.zeros(width)) / len(per_task)
            for command in commands}


def _row(command: str, row: np.ndarray, total: float) -> CommandRow:
    calls = float(row[_CALLS])
    return CommandRow(command=command, calls=calls, cost=float(row[-1]),
                      share=float(row[-1]) / total if total else None, failed=_rate(row),
                      retries=float(row[_RETRIES]),
                      bytes=float(row[_BYTES]) / calls if calls else None)


def _rate(row: np.ndarray | None) -> float | None:
    if row is None or not row[_CALLS]:
        return None
    return float(row[_FAILED] / row[_CALLS])


def _weight(weights: Mapping[str, float]) -> np.ndarray:
    return np.array([weights[c] for c in COMPONENTS], dtype=float)
