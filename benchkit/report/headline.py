"""The headline: each arm's figures with their intervals, the arms compared on the
tasks they all ran, and the verdicts and cost differences of the pairs of arms."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from benchkit.report.matrix import Matrix
from benchkit.report.model import (
    ArmRow,
    Common,
    Difference,
    Figure,
    ReferenceComparison,
    StatisticsNote,
    Unsupported,
    Verdicts,
)
from benchkit.report.tally import Tally
from benchkit.statistics.intervals import ALL_METRICS, CellStats, intervals, mean_of
from benchkit.statistics.verdicts import family, verdicts


def figure(value: float | None, interval: tuple = (None, None)) -> Figure:
    low, high = interval
    return Figure(value, low, high)


class Cells:
    """One kind of counting samples' tallies (measured, or replay), (arm, task) ->
    Tally, with each cell's CellStats computed once, when first asked for: the
    headline, the tiers and the per-cell and per-task tables all read the same."""

    def __init__(self, tallies: Mapping[tuple[str, str], Tally], k: int, kind: str):
        self.tallies, self.k, self.kind = tallies, k, kind
        self._stats: dict[tuple[str, str], CellStats | None] = {}

    def stats(self, arm: str, task: str) -> CellStats | None:
        """The cell's CellStats; None when it has no sample."""
        key = (arm, task)
        if key not in self._stats:
            tally = self.tallies.get(key)
            self._stats[key] = (CellStats(tally.rows, self.k, name=f"{self.kind}:{arm}/{task}")
                                if tally is not None and len(tally) else None)
        return self._stats[key]

    def of_arm(self, arm: str, task_ids: Iterable[str]) -> dict[str, CellStats]:
        """task id -> CellStats of the arm's cells that have at least one sample."""
        found = ((task, self.stats(arm, task)) for task in task_ids)
        return {task: stats for task, stats in found if stats is not None}


def arm_row(arm: str, cells: dict[str, CellStats], *, tasks_total: int, floor: int,
            level: float | None, estimated: bool = False) -> ArmRow:
    """One arm's headline row: means over its tasks of per-task means, with intervals
    (none when level is None); `estimated` for the replay's."""
    figures = [c.figures() for c in cells.values()]
    points = ([mean_of(column) for column in zip(*figures, strict=True)] if figures
              else [None] * len(ALL_METRICS))
    bounds = (intervals(list(cells.values()), level=level) if level
              else [(None, None)] * len(ALL_METRICS))
    covered = sum(1 for c in cells.values() if c.n >= floor)
    metrics = {name: figure(p, b) for name, p, b in zip(ALL_METRICS, points, bounds, strict=True)}
    return ArmRow(arm=arm, tasks=len(cells), tasks_total=tasks_total, covered=covered,
                  samples=sum(c.n for c in cells.values()),
                  pass_k_tasks=sum(1 for c in cells.values() if c.pass_k is not None),
                  **metrics, coverage=covered / tasks_total if tasks_total else None,
                  estimated=estimated)


def by_cost(rows: list[ArmRow]) -> list[ArmRow]:
    """Cheapest first; arms without samples last, in matrix order."""
    return sorted(rows, key=lambda r: (r.cost.value is None, r.cost.value or 0))


def common_headline(cells: dict[str, dict[str, CellStats]], scored: list[str], floor: int,
                    level: float | None, unsupported: dict[str, dict] | None = None, *,
                    estimated: bool = False) -> Common | None:
    """The arms ranked on the tasks every one of them ran: the report's first table
    (None when no arm has samples). Arms that share no task with the rest are set
    apart (ranked_arms), not ranked; `uneven` when the arms ran different tasks, so
    their all-task means are not comparable. `unsupported`: arm -> {task: why its tool
    cannot do it}, named where it left a scored task out; level None: no intervals
    (the replay's estimates)."""
    ran = {arm: set(c) for arm, c in cells.items() if c}
    if not ran:
        return None
    ranked, apart = ranked_arms(ran)
    shared = [t for t in scored if all(t in ran[arm] for arm in ranked)]
    rows = [arm_row(arm, {t: cells[arm][t] for t in shared}, tasks_total=len(shared),
                    floor=floor, level=level, estimated=estimated) for arm in ranked]
    cannot = [Unsupported(arm, task, why)
              for arm in ran for task, why in (unsupported or {}).get(arm, {}).items()
              if task in scored and task not in ran[arm]]
    return Common(shared, {arm: len(s) for arm, s in ran.items()}, by_cost(rows), cannot,
                  apart=apart, uneven=len({frozenset(s) for s in ran.values()}) > 1)


def ranked_arms(ran: dict[str, set]) -> tuple[list[str], list[str]]:
    """(arms ranked, arms set apart): while no task is common to the arms left, the
    one whose leaving leaves the most common tasks (ties: the one that ran fewest,
    then by name) is set apart; an arm sharing no task with the rest goes first."""
    ranked = list(ran)
    apart: list[str] = []

    def common(arms):
        return set.intersection(*(ran[a] for a in arms)) if arms else set()
    while len(ranked) > 1 and not common(ranked):
        leaving = max(ranked, key=lambda arm: (len(common([a for a in ranked if a != arm])),
                                               -len(ran[arm]), arm))
        ranked.remove(leaving)
        apart.append(leaving)
    return ranked, apart


def on_common(cells: dict[str, dict[str, CellStats]],
              common: Common | None) -> dict[str, dict[str, CellStats]]:
    """The cells the ranking reads: each ranked arm's on the common tasks; the arms
    set apart have none (a chart that compares arms compares these)."""
    if common is None:
        return cells
    ranked = {r.arm for r in common.rows}
    return {arm: ({t: found[t] for t in common.tasks} if arm in ranked else {})
            for arm, found in cells.items()}


def verdict_view(cells: dict[str, dict[str, CellStats]], headline: list[ArmRow],
                 matrix: Matrix, level: float) -> Verdicts | None:
    """The headline comparison: each pair's three-way verdict (benchkit.statistics.verdicts),
    every pair of the arms with samples, or each against the baseline."""
    ranked = [r.arm for r in headline if r.cost.value is not None]
    if len(ranked) < 2:
        return None
    fam = family(ranked, alpha=1 - level, margin=matrix.margin, baseline=matrix.baseline)
    pairs = verdicts({arm: cells[arm] for arm in ranked}, fam)
    return Verdicts(fam.method(), fam.margin, fam.baseline, fam.alpha, fam.alpha_pair, pairs)


def comparison(pairs: Verdicts | None, rows: list[ArmRow]) -> ReferenceComparison | None:
    """Each arm's cost difference to the reference (the baseline, else the cheapest
    arm), from the verdicts' simultaneous intervals, so choosing the cheapest after
    looking costs nothing: every pair is covered at once."""
    if pairs is None:
        return None
    ranked = [r.arm for r in rows if r.cost.value is not None]
    reference = pairs.baseline or ranked[0]
    found = []
    for arm in (a for a in ranked if a != reference):
        pair = next((p for p in pairs.pairs if {p.a, p.b} == {arm, reference}), None)
        if pair is None:
            continue
        flip = pair.a != arm  # rows read "arm vs reference"
        ratio, low, high = ((1 / pair.ratio if pair.ratio else None,
                             _inverse(pair.ratio_high), _inverse(pair.ratio_low)) if flip
                            else (pair.ratio, pair.ratio_low, pair.ratio_high))
        base = pair.a_mean if flip else pair.b_mean
        verdict = {"a-cheaper": "b-cheaper", "b-cheaper": "a-cheaper"}.get(
            pair.verdict, pair.verdict) if flip else pair.verdict
        found.append(Difference(
            arm=arm, tasks=pair.tasks, verdict=verdict,
            difference=figure(_scaled(base, ratio), (_scaled(base, low), _scaled(base, high))),
            relative=ratio - 1 if ratio is not None else None,
            distinguishable=verdict in ("a-cheaper", "b-cheaper")))
    return ReferenceComparison(reference, found) if found else None


def _inverse(value: float | None) -> float | None:
    return 1 / value if value else None


def _scaled(base: float | None, ratio: float | None) -> float | None:
    """The difference in tokens a ratio to the reference's mean means."""
    return base * (ratio - 1) if base is not None and ratio is not None else None


def statistics_view(level: float, pairs: Verdicts | None) -> StatisticsNote:
    return StatisticsNote(intervals=(
        f"Intervals: {level:.0%}, for the mean over the suite's tasks. Tokens, turns and "
        "durations: t-intervals pooling each arm's within-cell spread (proportional to a "
        "cell's mean) over its cells, or the spread between tasks while no cell has two "
        "trials; success and pass^k: score (Wilson-type) intervals around the unbiased "
        "per-task estimates, never a point. These intervals are not corrected for looking "
        "often; the verdicts are (docs/statistics.md)."),
        verdicts=pairs.method if pairs else None)
