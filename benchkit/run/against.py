"""`benchkit run ARM --until-decided --against-version VERSION`: a tool's current build
against its own earlier release, trials spent only where the verdict between them can
still change.

The pair is the one the report's version comparison shows (benchkit.report.versions):
the arm's counting samples (its current build) against its samples of VERSION, set apart
by their tool version alone, on the scored tasks VERSION ran, at the error budget the
report gives it (Bonferroni over the arm's older versions in the store). Only the
current build's cells are run (decide.plan_round's `fixed` side is never asked for).
"""

from __future__ import annotations

from benchkit import counting
from benchkit.run.compared import Comparison, NoComparison
from benchkit.run.ledger import Ledger
from benchkit.statistics.intervals import LEVEL
from benchkit.statistics.verdicts import Family


def label(arm: str, version: str) -> str:
    """How the rounds name an earlier version's side: gitea-axi@0.1.0."""
    return f"{arm}@{version}"


def version_comparison(ledger: Ledger, arms: list[str], tasks: list[str], version: str,
                       margin: float) -> tuple[Comparison, list[str]]:
    """(the pair of the current build against VERSION, notes for the user). Raises
    NoComparison when there is no such pair to decide: not one arm, the current build
    is VERSION itself, or the store holds no sample of VERSION on these tasks."""
    if len(arms) != 1:
        raise NoComparison(f"--against-version compares one arm's builds; {len(arms)} arms "
                           f"given ({', '.join(arms)})")
    (arm,) = arms
    placed = counting.place_groups(ledger.groups, ledger.current)
    known = ledger.current.tools.get(arm)
    notes = []
    if known is not None and known[0] == version:
        raise NoComparison(f"the {arm} found on PATH is {version} itself: put the build to "
                           f"compare first on PATH (docs/versions.md)")
    older: dict[str, dict[str, list[float]]] = {}  # version -> task -> costs
    counted = [arm]  # its samples in the ledger are the current build's, read each round
    for (a, task, changed, estimated), (scorable, _) in placed.other.items():
        found = counting.other_tool_version(changed)
        if a == arm and found is not None and estimated == ledger.estimated and scorable:
            older.setdefault(found, {})[task] = [ledger.cost(s) for s in scorable]
    if known is None and placed.tools.get(arm, (None,))[0] == version:
        # A dry run does not run the tool: its newest samples are VERSION's, so the
        # build to compare has none yet.
        older[version] = {task: costs for (a, task), costs in ledger.costs.items() if a == arm}
        counted = []
        notes.append(f"the dry run does not run {arm}'s tool: its newest samples are of "
                     f"{version}, so the build to compare is planned as having none yet")
    if not older.get(version):
        held = sorted({*older, *([placed.tools[arm][0] or "version unknown"]
                                 if arm in placed.tools else [])} - {version})
        raise NoComparison(f"the store holds no {'replay' if ledger.estimated else 'measured'} "
                           f"sample of {arm} {version} to compare against"
                           + (f" (versions it holds: {', '.join(held)})" if held else ""))
    shared = [t for t in tasks if t in older[version]]
    if not shared:
        raise NoComparison(f"{arm} {version} ran none of the chosen scored tasks")
    other = label(arm, version)
    # The report's family for this arm: its newest against each older version.
    fam = Family(((arm, other),), alpha=(1 - LEVEL) / len(older), margin=margin,
                 baseline=None)
    fixed = {(other, task): older[version][task] for task in shared}
    return Comparison([arm, other], shared, fam, fixed=fixed, counted=counted), notes
