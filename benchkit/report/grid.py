"""The report arm by task, as typed records: each cell's coverage (which cells ran, which
fall short of the floor, which cannot run), each cell's means (the CSV export) and, per
arm, each task's (the per-task tables). benchkit.report.views reads them off the
tallies; benchkit.report.model's Report holds them."""

from __future__ import annotations

from benchkit.report.record import ReportRecord


class CoverageCell(ReportRecord):
    arm: str
    samples: int
    status: str  # n/a | cannot | missing | replayed (no measured sample) | covered | below
    why: str | None
    excluded: int
    replay: int


class CoverageRow(ReportRecord):
    task: str
    tier: str
    scored: bool
    cells: list[CoverageCell]


class Gap(ReportRecord):
    arm: str
    task: str
    samples: int


class Cannot(ReportRecord):
    task: str
    why: str
    arms: list[str]


class Coverage(ReportRecord):
    rows: list[CoverageRow]
    missing: list[Gap]
    below_floor: list[Gap]
    cannot: list[Cannot]
    replayed: list[Gap] = []  # scored cells with replay estimates and no measured sample


class CellRow(ReportRecord):
    """A current cell with samples and its means: a row of the CSV export."""
    arm: str
    task: str
    tier: str
    kind: str  # measured | replay-estimate
    samples: int
    passes: int
    cost: float | None
    raw: float | None
    turns: float | None
    duration: float | None
    success: float | None
    blocked: float | None
    pass_k: float | None
    cost_usd: float | None
    input: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    output: float


class TaskRow(ReportRecord):
    task: str
    tier: str
    scored: bool
    samples: int
    passes: int
    cost: float | None
    raw: float | None
    turns: float | None
    duration: float | None
    success: float | None
    blocked: float | None
    pass_k: float | None
    cost_usd: float | None


class ArmTasks(ReportRecord):
    arm: str
    rows: list[TaskRow]
    missing: int  # scored tasks it has no sample of


class TaskTables(ReportRecord):
    measured: list[ArmTasks]
    replay: list[ArmTasks]
