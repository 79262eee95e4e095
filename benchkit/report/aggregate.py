"""Aggregate a store's samples against the current matrix into the report's data.

Every sample lands in exactly one place, by the rule the run loop's ledger shares
(benchkit.counting): the measured cells (the headline and its views), the replay cells
(estimates, their own table), the exclusions (invalid and harness-error samples,
counted, never scored) or the other versions (reported apart). Per-arm figures are means over
tasks of per-task means, so an arm is not flattered by which tasks it happened to
run; the first table ranks the arms on the tasks all of them ran (headline.common_headline),
and the all-task means follow only when the arms ran different tasks, as not comparable.

The result is a benchkit.report.model.Report: the templates read it, the JSON export
writes it field by field.
"""

from __future__ import annotations

from collections.abc import Mapping

from benchkit import counting
from benchkit.replays import NOT_REPRODUCIBLE, FailureReplay
from benchkit.report.anatomy import anatomy_view
from benchkit.report.bonus import bonus_view
from benchkit.report.calls import command_tables
from benchkit.report.grid import TaskTables
from benchkit.report.headline import (
    Cells,
    arm_row,
    by_cost,
    common_headline,
    comparison,
    on_common,
    statistics_view,
    verdict_view,
)
from benchkit.report.load import StoreContents
from benchkit.report.matrix import Matrix
from benchkit.report.model import Ambient, NotReproducible, Report
from benchkit.report.models_compared import check_held, held, model_view
from benchkit.report.notes import baseline_notes, notes
from benchkit.report.summary import Summary, summarise
from benchkit.report.tally import Placed
from benchkit.report.versions import version_view
from benchkit.report.views import (
    cells_view,
    component_view,
    coverage_view,
    duration_view,
    estimate_view,
    exclusion_view,
    failure_view,
    other_versions_view,
    replay_view,
    task_view,
    tier_view,
    totals,
)
from benchkit.sample import COMPONENTS, runtime_label
from benchkit.statistics.intervals import LEVEL
from benchkit.surface import BYTES_PER_TOKEN, PARTS, AmbientSize, estimated_tokens

# 3: tiers compare arms on common tasks (relative, below_best), failures; 4: `common`
# ranks the arms (the first table) whenever any has samples, with the arms set apart, and
# the charts that compare arms read it; version_comparisons; 5: the bonus table's cells
# have a status and Figures with intervals (benchkit.report.bonus)
REPORT_VERSION = 5


def current(matrix: Matrix) -> counting.Current:
    """What the matrix's tree expects of a sample."""
    return counting.Current(
        arms={a.id: a.fingerprint for a in matrix.arms},
        tasks={t.id: (t.fingerprint, t.seed_fingerprint) for t in matrix.tasks},
        model=matrix.model_fingerprint,
        references={(a.id, t): played for a in matrix.arms for t, played in a.references.items()})


def place_groups(summary: Summary, matrix: Matrix) -> Placed:
    """Each group of the store in its one place (see the module's docstring)."""
    return Placed(counting.place_groups(summary.groups, current(matrix)),
                  tuple(matrix.weights[c] for c in COMPONENTS))


def ambient_sizes(summary: Summary, tools: dict, arm_ids: list[str]) -> dict[str, Ambient]:
    """arm -> the ambient size of its current tool's surface (benchkit.surface), from
    the newest sample of that tool that recorded one; arms without one are left out."""
    newest: dict = {}
    for key, group in summary.groups.items():
        arm, tool, ambient = key[0], key[8], key[9]
        if ambient is not None and arm in tools and tool == tools[arm]:
            if arm not in newest or group.last > newest[arm][0]:
                newest[arm] = (group.last, ambient)
    return {arm: ambient_view(newest[arm][1]) for arm in arm_ids if arm in newest}


def ambient_view(ambient: AmbientSize) -> Ambient:
    """An arm's ambient size in the report: bytes and estimated tokens per part and in all."""
    parts = {part: getattr(ambient, part) for part in PARTS}
    return Ambient(bytes={**parts, "total": ambient.total},
                   tokens_estimated={**{p: estimated_tokens(n) for p, n in parts.items()},
                                     "total": estimated_tokens(ambient.total)},
                   bytes_per_token=BYTES_PER_TOKEN)


# --- the report ---------------------------------------------------------------------

def not_reproducible(replays: Mapping[str, FailureReplay]) -> list[NotReproducible]:
    """Failed trials whose own calls passed on a fresh repository (benchkit.run.failures):
    still failures, listed for a look at the environment. `replays`: the store's failure
    replays (Store.failure_replays)."""
    return [NotReproducible(entry.trial, entry.arm, entry.task, entry.outcome,
                            entry.differences)
            for entry in replays.values() if entry.verdict == NOT_REPRODUCIBLE
            and entry.outcome != "harness-error"]  # a host 5xx's replay: not a failure


def build_report(contents: StoreContents | Summary, matrix: Matrix, *,
                 level: float = LEVEL, models: tuple[str, ...] = ()) -> Report:
    """The report of the store's samples (loaded, or summarised) against the matrix;
    `models`: those to compare per arm (none: every model the store holds); one the
    store holds no sample of raises ValueError."""
    if isinstance(contents, StoreContents):
        contents = summarise(contents)
    check_held(contents.groups, models)  # a model asked for that the store does not hold
    sorted_ = place_groups(contents, matrix)
    arm_ids = [a.id for a in matrix.arms]
    scored = [t.id for t in matrix.scored_tasks]
    k, floor = matrix.k, matrix.floor
    measured, replay = (Cells(sorted_.measured, k, "measured"),
                        Cells(sorted_.replay, k, "replay-estimate"))
    cells = {arm: measured.of_arm(arm, scored) for arm in arm_ids}

    headline = by_cost([arm_row(arm, cells[arm], tasks_total=len(scored), floor=floor,
                                level=level) for arm in arm_ids])
    common = common_headline(cells, scored, floor, level,
                             {a.id: a.unsupported for a in matrix.arms})
    pairs = verdict_view(cells, headline, matrix, level)
    estimates = estimate_view(replay, matrix)
    replayed = {arm: replay.of_arm(arm, scored) for arm in arm_ids}
    report = Report(
        version=REPORT_VERSION,
        model=matrix.model,
        weights=dict(matrix.weights),
        reweighted=dict(matrix.reweighted_by),
        floor=floor, pass_k=k, level=level,
        arms=arm_ids,
        tool_versions={arm: sorted_.tools[arm][0] for arm in arm_ids if arm in sorted_.tools},
        runtimes={arm: runtime_label(sorted_.tools[arm][2]) for arm in arm_ids
                  if arm in sorted_.tools},
        ambient_size=ambient_sizes(contents, sorted_.tools, arm_ids),
        totals=totals(contents, sorted_),
        headline=headline,
        common=common,
        verdicts=pairs,
        comparison=comparison(pairs, common.rows if common else headline),
        statistics=statistics_view(level, pairs),
        durations=duration_view(sorted_.jobs),
        tiers=tier_view(cells, matrix),
        # The charts that compare arms read the ranking's cells: the common tasks.
        components=component_view(sorted_.measured, on_common(cells, common), matrix),
        anatomy=(anatomy_view(sorted_.measured, on_common(cells, common), matrix.weights,
                              "measured")
                 + anatomy_view(sorted_.replay,
                                on_common(replayed, estimates.common if estimates else None),
                                matrix.weights, "replay")),
        bonus=bonus_view(measured, replay, matrix, level),
        coverage=coverage_view(sorted_, matrix),
        cells=cells_view(measured, replay, matrix),
        replay=replay_view(replay, matrix),
        estimates=estimates,
        tasks=TaskTables(task_view(measured, matrix), task_view(replay, matrix)),
        exclusions=exclusion_view(sorted_.excluded, arm_ids),
        other_versions=other_versions_view(sorted_.other),
        version_comparisons=(
            version_view(sorted_.other, cells, sorted_.tools, scored, k=k, level=level,
                         margin=matrix.margin, tallies=sorted_.measured,
                         weights=matrix.weights)
            + version_view(sorted_.other, replayed, sorted_.tools, scored, k=k, level=level,
                           margin=matrix.margin, estimated=True, tallies=sorted_.replay,
                           weights=matrix.weights)),
        problems=contents.problems,
        not_reproducible=not_reproducible(contents.replays),
        failures=failure_view(sorted_.measured, sorted_.replay, matrix),
        notes=[],
        models=held(contents.groups),
        model_comparisons=model_view(contents.groups, current(matrix), matrix, models=models,
                                     level=level),
    )
    report.notes = notes(report) + baseline_notes(matrix.baseline, pairs)
    # Each arm's commands, on the cells "Where the tokens go" reads: they sum to its
    # tool output there.
    report.commands = (
        command_tables(sorted_.measured, on_common(cells, common), matrix.weights, "measured")
        + command_tables(sorted_.replay,
                         on_common(replayed, estimates.common if estimates else None),
                         matrix.weights, "replay"))
    return report
