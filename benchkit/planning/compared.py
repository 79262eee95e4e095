"""What a `--until-decided` run decides: its pairs, the tasks they are compared on,
their error budget and the cost cells the planner reads (benchkit.planning.decide plans the
rounds; benchkit.planning.against makes the pair of a build against an earlier version)."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchkit.errors import BenchkitError
from benchkit.planning.ledger import Ledger
from benchkit.statistics.intervals import CellStats
from benchkit.statistics.rows import TrialRow
from benchkit.statistics.verdicts import Family


class NoComparison(ValueError, BenchkitError):
    """The comparison asked for cannot be made: said to the user, nothing run."""


@dataclass
class Comparison:
    """The pairs a run decides: `arms` (the sides' names), the `tasks` they are compared
    on, their family (error budget), the costs of cells no trial can add to (`fixed`:
    an earlier version's, (side, task) -> costs) and the arms whose counting samples
    in the ledger are read (`counted`; None: every arm)."""
    arms: list
    tasks: list
    fam: Family
    fixed: dict = field(default_factory=dict)
    counted: list | None = None

    def cells(self, ledger) -> dict:
        """side -> task -> CellStats of cost, as the ledger has them now."""
        counted = self.arms if self.counted is None else self.counted
        return cost_cells({**scored_costs(ledger, counted, self.tasks), **self.fixed})


def cost_cells(costs: dict, k: int = 1) -> dict:
    """arm -> task -> CellStats from (arm, task) -> [cost-equivalent tokens per trial]:
    the only column a verdict reads."""
    cells: dict = {}
    for (arm, task), values in costs.items():
        if values:
            rows = [TrialRow(cost=v) for v in values]
            cells.setdefault(arm, {})[task] = CellStats(rows, k, name=f"{arm}/{task}")
    return cells


def scored_costs(ledger: Ledger, arms: list, tasks: list) -> dict:
    """The ledger's counting costs of the headline's cells: scored tasks every arm ran,
    as the report's verdicts read them."""
    cells = {(arm, task) for arm in arms for task in tasks}
    return {key: values for key, values in ledger.costs.items() if key in cells}
