"""A trial's numeric row: the one layout the report's tallies build, the run's
until-decided planner makes, and CellStats reads, column by column, as a float array
of WIDTH columns. Nothing here imports numpy: the report's store-reading child builds
its columns in this order without it (benchkit.report.columns)."""

from __future__ import annotations

from typing import NamedTuple


class TrialRow(NamedTuple):
    """One trial's figures in their columns' order: cost-equivalent and raw tokens,
    turns, seconds, whether it passed (1 or 0), the guard's blocked calls, its
    imputed cost in USD (0 when it has none) and whether it has one (1 or 0). A row
    that only has a cost (the planner's) leaves the rest 0."""
    cost: float
    raw: float = 0.0
    turns: float = 0.0
    duration: float = 0.0
    success: float = 0.0
    blocked: float = 0.0
    cost_usd: float = 0.0
    has_cost_usd: float = 0.0


COLUMNS: tuple[str, ...] = TrialRow._fields
WIDTH = len(COLUMNS)
COST, SUCCESS, BLOCKED = COLUMNS.index("cost"), COLUMNS.index("success"), COLUMNS.index("blocked")
USD, HAS_USD = COLUMNS.index("cost_usd"), COLUMNS.index("has_cost_usd")
# The columns a cell's means and intervals are taken of (the rest make the imputed cost).
METRICS = COLUMNS[:BLOCKED + 1]
# cost and raw are computed from a trial's usage at the report's weights; the rest are
# as the sample recorded them (benchkit.report.columns.Block keeps them in this order).
FROM_USAGE, AS_RECORDED = COLUMNS[:2], COLUMNS[2:]
