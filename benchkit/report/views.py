"""The report's tables beside the headline: totals, tiers, token components, coverage,
per-cell and per-task rows, replay estimates, exclusions and other versions. Each is a
record of benchkit.report.model (benchkit.report.grid: coverage, cells and tasks)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping

from benchkit.counting import charged_leak
from benchkit.report.grid import (
    ArmTasks,
    Cannot,
    CellRow,
    Coverage,
    CoverageCell,
    CoverageRow,
    Gap,
    TaskRow,
)
from benchkit.report.headline import Cells, arm_row, by_cost, common_headline, on_common
from benchkit.report.links import trial_href
from benchkit.report.matrix import Matrix
from benchkit.report.model import (
    ArmRow,
    ComponentRow,
    Durations,
    Estimates,
    ExclusionRow,
    FailedTrial,
    JobCount,
    OtherVersion,
    SampleTotals,
    Tier,
    TierArm,
)
from benchkit.report.summary import Summary
from benchkit.report.tally import Placed, Tally
from benchkit.sample import COMPONENTS, SCORED_TIERS
from benchkit.statistics.intervals import ALL_METRICS, CellStats, mean_of
from benchkit.statistics.rows import COST, SUCCESS

Cell = tuple[str, str]  # (arm id, task id)


def totals(contents: Summary, sorted_: Placed) -> SampleTotals:
    def trials(tallies):
        return sum(len(t) for t in tallies.values())

    def excluded(why):
        return sum(n for c in sorted_.excluded.values() for (reason, _), n in c.items()
                   if reason == why)
    return SampleTotals(samples=contents.samples, files=contents.files,
                        measured=trials(sorted_.measured), replay=trials(sorted_.replay),
                        invalid=excluded("invalid"), unaudited=excluded("unaudited"),
                        harness_error=excluded("harness-error"),
                        other_versions=sum(n for _, n in sorted_.other.values()),
                        unconfined=contents.unconfined, unreadable=len(contents.problems),
                        gateway_only=contents.gateway_only,
                        leaks_counted=sum(n for c in sorted_.excluded.values()
                                          for (reason, kind), n in c.items()
                                          if charged_leak(reason, kind)))


def duration_view(jobs: Counter) -> Durations:
    """How many measured samples ran at each concurrency (None: not recorded)."""
    return Durations([JobCount(j, n) for j, n in
                      sorted(jobs.items(), key=lambda item: (item[0] is None, item[0] or 0))])


def tier_view(cells: dict[str, dict[str, CellStats]], matrix: Matrix) -> list[Tier]:
    """Per tier and arm: cost and success over the tier's tasks the arm ran, and the
    arms compared on the tier's tasks all of them ran (TierArm)."""
    view = []
    for tier in SCORED_TIERS:
        ids = [t.id for t in matrix.scored_tasks if t.tier == tier]
        if not ids:
            continue
        ran = {arm: [t for t in ids if t in cells[arm]] for arm in (a.id for a in matrix.arms)}
        common = [t for t in ids if all(t in cells[arm] for arm, found in ran.items() if found)]

        def means(arm, tasks):
            found = [cells[arm][t] for t in tasks]
            return (mean_of([c.means[COST] for c in found]),
                    mean_of([c.means[SUCCESS] for c in found]))
        own = {arm: means(arm, tasks) for arm, tasks in ran.items()}
        shared = {arm: means(arm, common) for arm, tasks in ran.items() if tasks and common}
        best = max((success for _, success in shared.values()), default=None)
        at_best = [cost for cost, success in shared.values() if _reaches(success, best)]
        reference = min(at_best, default=None)
        arms = []
        for arm, (cost, success) in own.items():
            common_cost, common_success = shared.get(arm, (None, None))
            arms.append(TierArm(
                arm, len(ran[arm]), cost, success,
                relative=(common_cost / reference if common_cost is not None and reference
                          else None),
                common_cost=common_cost, common_success=common_success,
                below_best=arm in shared and not _reaches(common_success, best)))
        view.append(Tier(tier, len(ids), arms, len(common) if shared else 0))
    return view


def _reaches(success: float | None, best: float | None) -> bool:
    """At the best success (a hair below counts: sums of means are not exact)."""
    return success is not None and best is not None and success >= best - 1e-9


def component_view(tallies: Mapping[Cell, Tally], cells: dict[str, dict[str, CellStats]],
                   matrix: Matrix) -> list[ComponentRow]:
    """Per arm: mean tokens per trial of each component, weighted, and its share."""
    view: list[ComponentRow] = []
    for arm in (a.id for a in matrix.arms):
        per_task = [tallies[(arm, t)].tokens.mean(axis=0).tolist()
                    for t in cells[arm]]
        if not per_task:
            view.append(ComponentRow(arm=arm, tokens=None, weighted=None, shares=None))
            continue
        tokens = {c: mean_of(col) for c, col in zip(COMPONENTS, zip(*per_task, strict=True), strict=True)}
        weighted = {c: tokens[c] * matrix.weights[c] for c in COMPONENTS}
        total = math.fsum(weighted.values())
        view.append(ComponentRow(
            arm=arm, tokens=tokens, weighted=weighted, total=total,
            shares={c: (w / total if total else 0.0) for c, w in weighted.items()}))
    return view


def coverage_view(sorted_: Placed, matrix: Matrix) -> Coverage:
    """Arm by task: valid measured samples, whether the floor is reached, what else is
    there (excluded, replay), and the cells missing or below the floor."""
    rows: list[CoverageRow] = []
    gaps: dict[str, list[Gap]] = {"missing": [], "below": [], "replayed": []}
    for task in matrix.tasks:
        entries = []
        for arm in (a.id for a in matrix.arms):
            key = (arm, task.id)
            n = len(sorted_.measured[key]) if key in sorted_.measured else 0
            replayed = len(sorted_.replay[key]) if key in sorted_.replay else 0
            not_applicable = task.applicability.get(arm) == "not-applicable"
            why = task.cannot_run.get(arm)  # no trial can run: not a gap to fill
            # A cell only replayed is not missing: the main job's estimates are there.
            status = ("n/a" if not_applicable and n == 0 else "cannot" if why and n == 0
                      else "replayed" if n == 0 and replayed else "missing" if n == 0
                      else "covered" if n >= matrix.floor else "below")
            if task.scored and status in gaps:
                gaps[status].append(Gap(arm, task.id, n))
            entries.append(CoverageCell(
                arm=arm, samples=n, status=status, why=why,
                excluded=sum(sorted_.excluded.get(key, {}).values()), replay=replayed))
        rows.append(CoverageRow(task.id, task.tier, task.scored, entries))
    return Coverage(rows, gaps["missing"], gaps["below"], _cannot(rows),
                    replayed=gaps["replayed"])


def _cannot(rows: list[CoverageRow]) -> list[Cannot]:
    """The cells that cannot run, one entry per task and reason, with its arms."""
    found: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        for cell in row.cells:
            if cell.status == "cannot" and cell.why is not None:
                found.setdefault((row.task, cell.why), []).append(cell.arm)
    return [Cannot(task, why, arms) for (task, why), arms in found.items()]


def cells_view(measured: Cells, replay: Cells, matrix: Matrix) -> list[CellRow]:
    """Every current cell with samples, measured or replayed, with its component means:
    the CSV export, from which a spreadsheet can re-weight without the store."""
    tasks = {t.id: t for t in matrix.tasks}
    rows = []
    for kind, cells in (("measured", measured), ("replay-estimate", replay)):
        for (arm, task), tally in cells.tallies.items():
            stats = cells.stats(arm, task)
            if stats is None:
                continue
            tokens = tally.tokens.mean(axis=0).tolist()
            rows.append(CellRow(arm=arm, task=task, tier=tasks[task].tier, kind=kind,
                                samples=stats.n, passes=stats.passes,
                                **dict(zip(ALL_METRICS, stats.figures(), strict=True)),
                                **dict(zip(COMPONENTS, tokens, strict=True))))
    order = {t.id: i for i, t in enumerate(matrix.tasks)}
    arms = {a.id: i for i, a in enumerate(matrix.arms)}
    return sorted(rows, key=lambda r: (r.kind, arms[r.arm], order[r.task]))


def _column_mean(tally: Tally, column: int) -> float | None:
    return float(tally.rows[:, column].mean()) if len(tally) else None


def replay_view(replay: Cells, matrix: Matrix) -> list[ArmRow]:
    """Replay samples per arm, over the scored tasks: estimates, never the headline."""
    scored = [t.id for t in matrix.scored_tasks]
    rows = []
    for arm in (a.id for a in matrix.arms):
        cells = replay.of_arm(arm, scored)
        if cells:
            rows.append(arm_row(arm, cells, tasks_total=len(scored), floor=matrix.floor,
                                level=None, estimated=True))
    return rows


def estimate_view(replay: Cells, matrix: Matrix) -> Estimates | None:
    """Replay samples in the measured figures' layout (headline, tiers, components),
    every figure an estimate and kept apart from the measured ones; None without any."""
    scored = [t.id for t in matrix.scored_tasks]
    arm_ids = [a.id for a in matrix.arms]
    cells = {arm: replay.of_arm(arm, scored) for arm in arm_ids}
    if not any(cells.values()):
        return None
    headline = by_cost([arm_row(arm, cells[arm], tasks_total=len(scored), floor=matrix.floor,
                                level=None, estimated=True) for arm in arm_ids])
    common = common_headline(cells, scored, matrix.floor, None,
                             {a.id: a.unsupported for a in matrix.arms}, estimated=True)
    return Estimates(headline, tier_view(cells, matrix),
                     component_view(replay.tallies, on_common(cells, common), matrix),
                     estimated=True, common=common)


def task_view(cells: Cells, matrix: Matrix) -> list[ArmTasks]:
    """Per arm with samples: a row per scored task it ran, in matrix order, with its
    means (bonus operations have their own table: benchkit.report.bonus)."""
    view = []
    for arm in (a.id for a in matrix.arms):
        rows = []
        for task in matrix.scored_tasks:
            stats = cells.stats(arm, task.id)
            if stats is None:
                continue
            rows.append(TaskRow(task=task.id, tier=task.tier, scored=task.scored,
                                samples=stats.n, passes=stats.passes,
                                **dict(zip(ALL_METRICS, stats.figures(), strict=True))))
        if rows:
            view.append(ArmTasks(arm, rows,
                                 len(matrix.scored_tasks) - sum(r.scored for r in rows)))
    return view


def failure_view(measured: Mapping[Cell, Tally], replay: Mapping[Cell, Tally],
                 matrix: Matrix) -> list[FailedTrial]:
    """The counted trials that did not pass, each with its page: measured ones first,
    then replayed, in matrix order, then by trial number."""
    arms = {a.id: i for i, a in enumerate(matrix.arms)}
    tasks = {t.id: i for i, t in enumerate(matrix.tasks)}
    # Sorted as tuples, their place in the tallies breaking ties (a stable sort), then
    # made records: no Python key function a failure (9,500 on 100,000 samples).
    found = sorted(
        (estimated, arms[arm], tasks[task], number, place, sample_id, arm, task, outcome,
         failure_class)
        for place, (estimated, arm, task, (sample_id, number, outcome, failure_class)) in
        enumerate((estimated, arm, task, failed)
                  for estimated, tallies in ((False, measured), (True, replay))
                  for (arm, task), tally in tallies.items() for block in tally.blocks
                  for failed in block.failed))
    return [FailedTrial(trial=sample_id, arm=arm, task=task, number=number, outcome=outcome,
                        failure_class=failure_class, estimated=estimated,
                        page=trial_href(arm, task, sample_id))
            for estimated, _, _, number, _, sample_id, arm, task, outcome, failure_class in found]


def exclusion_view(excluded: Mapping[Cell, Counter], arm_ids: list[str]) -> list[ExclusionRow]:
    """Per arm: invalid, unaudited and harness-error samples, by failure class."""
    per_arm: defaultdict[str, Counter] = defaultdict(Counter)
    for (arm, _), counter in excluded.items():
        per_arm[arm].update(counter)
    order = arm_ids + sorted(set(per_arm) - set(arm_ids))
    return [ExclusionRow(
        arm=arm, invalid=sum(n for (r, _), n in per_arm[arm].items() if r == "invalid"),
        unaudited=sum(n for (r, _), n in per_arm[arm].items() if r == "unaudited"),
        harness_error=sum(n for (r, _), n in per_arm[arm].items() if r == "harness-error"),
        classes={f"{r}: {c}" if c else r: n for (r, c), n in sorted(per_arm[arm].items())})
        for arm in order if per_arm[arm]]


def other_versions_view(other: dict[tuple, tuple[Tally, int]]) -> list[OtherVersion]:
    """Samples of another version of the tree or tool, per cell and what changed."""
    rows = []
    for (arm, task, changes, estimated), (tally, count) in sorted(other.items()):
        rows.append(OtherVersion(arm=arm, task=task, changed=list(changes), estimated=estimated,
                                 samples=count, valid=len(tally),
                                 success=_column_mean(tally, SUCCESS),
                                 cost=_column_mean(tally, COST)))
    return rows
