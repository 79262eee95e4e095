"""`benchkit run ARM --until-decided --against-version VERSION`: a tool's current build
against its own earlier release, trials spent only where the verdict between them can
still change (and `benchkit gate`, which runs the same pair: benchkit.report.gate).

The pair is the one the report's version comparison shows (benchkit.report.versions):
the arm's counting samples (its current build) against its samples of VERSION, set apart
by their tool version alone, on the scored tasks VERSION ran, at the error budget the
report gives it (Bonferroni over the arm's older versions in the store). Only the
current build's cells are run (decide.plan_round's `fixed` side is never asked for).

VERSION is a version line as the tool printed it (`gitea-cli-py 0.1.0`) or a bare
version within one (`0.1.0`): `resolve_version` finds the one line it names.
"""

from __future__ import annotations

from benchkit import counting
from benchkit.planning.compared import Comparison, NoComparison, cost_cells
from benchkit.planning.ledger import Ledger
from benchkit.statistics.intervals import LEVEL
from benchkit.statistics.verdicts import MIN_DF, Family, spread

UNKNOWN = "version unknown"


def label(arm: str, version: str) -> str:
    """How the rounds name an earlier version's side: gitea-axi@0.1.0."""
    return f"{arm}@{version}"


def names(given: str, line: str) -> bool:
    """Whether `given` names the version line `line`: the whole line, or one of its
    words (a leading `v` aside on either side: `0.1.0` names `gitea-cli-py v0.1.0`)."""
    if given == line:
        return True
    bare = given.removeprefix("v")
    return bool(bare) and " " not in given and any(
        word.removeprefix("v") == bare for word in line.split())


def resolve_version(arm: str, given: str, held: list[str], kind: str) -> str:
    """The one version line of `held` (the store's, newest first) that `given` names;
    NoComparison saying why there is none, or which lines a bare version leaves open."""
    if given in held:
        return given
    found = [line for line in held if names(given, line)]
    if len(found) == 1:
        return found[0]
    if found:
        raise NoComparison(f'"{given}" names more than one version of {arm}\'s tool in the '
                           f"store ({', '.join(found)}): give the whole version line")
    holds = (f" (the versions it holds: {', '.join(held)})" if held
             else f" (it holds no {kind} sample of {arm} at all)")
    raise NoComparison(f'the store holds no {kind} sample of {arm} at tool version "{given}" '
                       f"to compare against{holds}")


def version_comparison(ledger: Ledger, arms: list[str], tasks: list[str], version: str,
                       margin: float, installed: str | None = None
                       ) -> tuple[Comparison, list[str]]:
    """(the pair of the current build against VERSION, notes for the user). Raises
    NoComparison when there is no such pair to decide: not one arm, a VERSION the store
    does not hold, the current build is VERSION itself, or VERSION ran none of the
    tasks. `installed`: the version the arm's tool prints here, where the ledger does
    not know it (a dry run runs no probe)."""
    if len(arms) != 1:
        raise NoComparison(f"--against-version compares one arm's builds; {len(arms)} arms "
                           f"given ({', '.join(arms)})")
    (arm,) = arms
    kind = "replay" if ledger.estimated else "measured"
    placed = counting.place_groups(ledger.groups, ledger.current)
    known = ledger.current.tools.get(arm)
    build = known[0] if known is not None else installed
    newest = (placed.tools[arm][0] or UNKNOWN) if arm in placed.tools else None
    older: dict[str, dict[str, list[float]]] = {}  # version -> task -> costs
    counted = [arm]  # its samples in the ledger are the current build's, read each round
    for (a, task, changed, estimated), (scorable, _) in placed.other.items():
        found = counting.other_tool_version(changed)
        if a == arm and found is not None and estimated == ledger.estimated and scorable:
            older.setdefault(found, {})[task] = [ledger.cost(s) for s in scorable]
    held = list(dict.fromkeys([*([newest] if newest else []), *sorted(older, reverse=True)]))
    try:
        wanted = resolve_version(arm, version, held, kind)
    except NoComparison:
        if any(a == arm and "reference" in changed and estimated == ledger.estimated
               for a, _, changed, estimated in placed.other):
            raise NoComparison(
                f"the store's {kind} samples of {arm} played other references than its "
                f"refs.d/ holds now: their figures are those references' bytes, another "
                f"workload; replay {version} with these references first, or compare "
                f"measured trials") from None
        raise
    if build is not None and build == wanted:
        raise NoComparison(f"the {arm} tool installed here prints \"{build}\", the version to "
                           f"compare against itself: put the build to compare first on PATH "
                           f"(docs/versions.md)")
    notes = []
    if known is None and newest is not None and newest != build:
        # A dry run does not run the tool through the sandbox: the store's newest samples
        # are another build's (VERSION's, or one between), so the build to compare has none.
        older[newest] = {task: costs for (a, task), costs in ledger.costs.items() if a == arm}
        counted = []
        notes.append(f"the dry run finds {arm}'s tool here at "
                     f"{build or 'a version it cannot tell'}, and the store's newest samples "
                     f"are of {newest}, so the build to compare is planned as having none yet")
    if not older.get(wanted):
        raise NoComparison(f"the store holds no counting {kind} sample of {arm} {wanted} "
                           "on a scored task")
    shared = [t for t in tasks if t in older[wanted]]
    if not shared:
        raise NoComparison(f"{arm} {wanted} ran none of the chosen scored tasks")
    other = label(arm, wanted)
    # The report's family for this arm: its newest against each older version.
    fam = Family(((arm, other),), alpha=(1 - LEVEL) / max(1, len(older)), margin=margin,
                 baseline=None)
    fixed = {(other, task): older[wanted][task] for task in shared}
    kept = spread(cost_cells(fixed).get(other, {}).values())
    if kept.df < MIN_DF:  # the pair can only be judged on the spread between tasks
        notes.append(f"{arm} {wanted} has too few trials per task to give its cost spread "
                     f"(degrees of freedom {kept.df:.1f} of {MIN_DF}), and no trial can add "
                     f"to them: a verdict may never come; give the store more trials of it "
                     f"(`--until 3` with that build installed)")
    return Comparison([arm, other], shared, fam, fixed=fixed, counted=counted), notes
