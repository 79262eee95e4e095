"""A tool against its own earlier releases: for each arm whose store holds samples of
more than one version of its tool, the newest (the counted one) against each older
version, on the scored tasks both ran, by the verdicts' own machinery
(benchkit.statistics.verdicts): cheaper, equivalent, costlier or inconclusive, with the
success difference beside it. Measured samples are compared with measured ones, replay
samples with replay ones (their figures estimates of the references' bytes, and marked
so): never one kind with the other.

Older versions' samples are set apart by benchkit.counting and never counted in the
headline; only those set apart by their tool version alone (not by their task, seed,
model, surface or runtime) are compared here. Each arm's comparisons are one family,
Bonferroni-corrected over its older versions, as the headline's pairs are over arms.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from benchkit import counting
from benchkit.report.calls import command_changes
from benchkit.report.model import Figure, VersionComparison, VersionFigures
from benchkit.report.tally import Tally
from benchkit.statistics.intervals import CellStats, mean_of
from benchkit.statistics.rows import SUCCESS
from benchkit.statistics.verdicts import (
    A_CHEAPER,
    B_CHEAPER,
    EQUIVALENT,
    Family,
    compare,
    spread,
)

UNKNOWN = "version unknown"
# A verdict of newest (a) against older (b), as the author reads it: of the newest.
SAID = {A_CHEAPER: "cheaper", B_CHEAPER: "costlier", EQUIVALENT: "equivalent"}


def older_cells(other: Mapping[tuple, tuple[Tally, int]], scored: list[str],
                k: int, estimated: bool = False) -> dict[str, dict[str, dict[str, CellStats]]]:
    """arm -> older version -> task -> CellStats of its valid samples of one kind
    (measured, or with `estimated` replay), from the groups set apart by their tool
    version alone."""
    found: dict[str, dict[str, dict[str, CellStats]]] = {}
    for (arm, task, changed, kind), (tally, _) in other.items():
        version = counting.other_tool_version(changed)
        if kind != estimated or version is None or task not in scored or not len(tally):
            continue
        found.setdefault(arm, {}).setdefault(version, {})[task] = CellStats(
            tally.rows, k, name=f"{arm} {version}/{task}")
    return found


def version_view(other: Mapping[tuple, tuple[Tally, int]],
                 cells: dict[str, dict[str, CellStats]], tools: Mapping[str, tuple],
                 scored: list[str], *, k: int, level: float, margin: float,
                 estimated: bool = False, tallies: Mapping | None = None,
                 weights: Mapping[str, float] | None = None) -> list[VersionComparison]:
    """Per arm (in `cells`' order) with samples of its newest version and of an older
    one, all of one kind (`cells` and `estimated`: the measured ones, or the replay's):
    newest against each older version, newest first; with `tallies` ((arm, task) ->
    the newest's Tally) and `weights`, command by command too (benchkit.report.calls)."""
    older = older_cells(other, scored, k, estimated)
    view = []
    for arm, newest_cells in cells.items():
        if arm not in older or not newest_cells or arm not in tools:
            continue
        newest = tools[arm][0] or UNKNOWN
        versions = sorted(older[arm], key=_version_key, reverse=True)
        fam = Family(tuple((newest, version) for version in versions), 1 - level, margin,
                     baseline=newest)
        spreads = {newest: spread(newest_cells.values()),
                   **{v: spread(older[arm][v].values()) for v in versions}}
        for version in versions:
            found = _compare(arm, newest, version, newest_cells, older[arm][version],
                             spreads, fam, scored, estimated)
            if tallies is not None and weights is not None:
                found.commands = command_changes(
                    {t: tallies[(arm, t)] for t in found.tasks if (arm, t) in tallies},
                    older_tallies(other, arm, version, estimated), found.tasks, weights)
            view.append(found)
    return view


def older_tallies(other: Mapping[tuple, tuple[Tally, int]], arm: str, version: str,
                  estimated: bool) -> dict[str, Tally]:
    """task -> the Tally of an older version's valid samples of the arm, of one kind."""
    return {task: tally for (a, task, changed, kind), (tally, _) in other.items()
            if a == arm and kind == estimated and counting.other_tool_version(changed) == version}


def _compare(arm: str, newest: str, version: str, new: dict[str, CellStats],
             old: dict[str, CellStats], spreads: dict, fam: Family,
             scored: list[str], estimated: bool) -> VersionComparison:
    pair = compare(newest, version, new, old, spreads, fam)
    tasks = [t for t in scored if t in new and t in old]
    success_new = mean_of([new[t].means[SUCCESS] for t in tasks])
    success_old = mean_of([old[t].means[SUCCESS] for t in tasks])
    verdict = SAID.get(pair.verdict, "inconclusive")
    says = (f"{newest} {verdict} than {version}" if verdict in ("cheaper", "costlier")
            else f"equivalent within ±{fam.margin:.0%}" if verdict == "equivalent"
            else "inconclusive: more trials may decide it")
    return VersionComparison(
        arm=arm, versions=[newest, version], tasks=tasks,
        figures=VersionFigures(
            cost_newest=pair.a_mean, cost_older=pair.b_mean,
            ratio=Figure(pair.ratio, pair.ratio_low, pair.ratio_high),
            success_newest=success_new, success_older=success_old,
            success_difference=(success_new - success_old
                                if success_new is not None and success_old is not None
                                else None),
            samples_newest=sum(new[t].n for t in tasks),
            samples_older=sum(old[t].n for t in tasks)),
        verdict=verdict, says=says, method=_method(fam), estimated=estimated)


def _method(fam: Family) -> str:
    return (f"{1 - fam.alpha:.0%} per arm, Bonferroni over its older versions, by the "
            "verdicts' confidence sequences on the log ratio of mean cost-equivalent tokens "
            f"over the tasks both ran, valid at every sample size; equivalent means within "
            f"±{fam.margin:.0%}")


def _version_key(version: str) -> tuple:
    """Newest first by the numbers in the version ("0.10.0" after "0.9.1"), then by text."""
    return (tuple(int(n) for n in re.findall(r"\d+", version)), version)
