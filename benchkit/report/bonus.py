"""The bonus table: each bonus operation on every arm, measured as the scored suite is
and never in its figures.

A cell with samples has the figures the headline gives an arm (benchkit.report.headline:
passed/samples, success, cost-equivalent tokens, turns and duration), over this one
operation: intervals on measured samples, none on the replay's estimates (shown where
no measured sample is there). A cell without says why: the arm cannot do the
operation (not applicable), its tool cannot (unsupported, from its reference), the
operation has no scoring spec, or no trial of it has run yet.
"""

from __future__ import annotations

from benchkit.report.headline import Cells, arm_row
from benchkit.report.matrix import Matrix, TaskEntry
from benchkit.report.model import Bonus, BonusArm

# What a cell without figures shows, by why it has none.
NOT_APPLICABLE, UNSUPPORTED, NO_SPEC, NO_SAMPLE = (
    "not applicable", "unsupported", "not run: no scoring spec", "no sample yet")


def bonus_view(measured: Cells, replay: Cells, matrix: Matrix, level: float) -> list[Bonus]:
    """Per bonus operation, in matrix order: a BonusArm per arm."""
    return [Bonus(task.id, task.only_when,
                  [_entry(task, arm.id, measured, replay, matrix.floor, level)
                   for arm in matrix.arms])
            for task in matrix.bonus_tasks]


def _entry(task: TaskEntry, arm: str, measured: Cells, replay: Cells, floor: int,
           level: float) -> BonusArm:
    applicability, why = task.applicability.get(arm), task.cannot_run.get(arm)
    stats, estimated = measured.stats(arm, task.id), False
    if stats is None:
        stats = replay.stats(arm, task.id)
        estimated = stats is not None
    if stats is None:
        status = (NOT_APPLICABLE if applicability == "not-applicable"
                  else NO_SPEC if why and why.startswith("no scoring spec")
                  else UNSUPPORTED if why else NO_SAMPLE)
        return BonusArm(arm=arm, applicability=applicability, status=status, why=why)
    row = arm_row(arm, {task.id: stats}, tasks_total=1, floor=floor,
                  level=None if estimated else level, estimated=estimated)
    return BonusArm(arm=arm, applicability=applicability,
                    status="replayed" if estimated else "measured", why=why,
                    estimated=estimated, samples=stats.n, passes=stats.passes,
                    success=row.success, cost=row.cost, turns=row.turns, duration=row.duration)
