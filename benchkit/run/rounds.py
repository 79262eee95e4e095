"""`benchkit run --until-decided` in the run loop: the comparison a run decides (the
headline's pairs, or the current build against --against-version's samples), its rounds
planned by benchkit.planning.decide and run on the loop until nothing is worth a trial, the
--dry-run's first round, and what each round says.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from benchkit.agent.runtime import installed_runtime
from benchkit.documents import Arm, Tree
from benchkit.installed import installed
from benchkit.planning.against import version_comparison
from benchkit.planning.compared import Comparison, NoComparison
from benchkit.planning.decide import Round, Wanted, plan_round, round_size
from benchkit.planning.ledger import Ledger
from benchkit.planning.plan import Chosen, Trial, choose
from benchkit.planning.settings import RunSettings
from benchkit.planning.shard import label
from benchkit.preflight.checks import Checked
from benchkit.run import events
from benchkit.run.loop import Looped, RunLoop
from benchkit.run.progress import Progress
from benchkit.statistics.intervals import LEVEL
from benchkit.statistics.verdicts import Family, family
from benchkit.stopping import Stop
from benchkit.store import Store
from benchkit.trial.prepare import RunContext


def headline_family(arms: list, tree_arms: list, margin: float, baseline: str | None) -> Family:
    """The run's pairs, each at the error budget the report gives it: the report compares
    every arm with samples (at most the tree's), so a run of two of four arms must not
    decide a pair at a looser level than the report will show it."""
    ours = family(arms, alpha=1 - LEVEL, margin=margin, baseline=baseline)
    whole = family(list(dict.fromkeys([*arms, *tree_arms])), alpha=1 - LEVEL, margin=margin,
                   baseline=baseline)
    return replace(ours, alpha=whole.alpha_pair * max(1, len(ours.pairs)))


def headline(cells) -> tuple[list, list]:
    """(arm ids, scored task ids every arm can run) of the run's cells."""
    arms = list(dict.fromkeys(arm.id for arm, _ in cells))
    runnable: dict = {}
    for arm, task in cells:
        if task.scored:
            runnable.setdefault(task.id, set()).add(arm.id)
    return arms, [t for t, ran in runnable.items() if len(ran) == len(arms)]


def comparison_of(ledger: Ledger, cells, tree_arms: list, margin: float,
                  settings: RunSettings, installed: dict | None = None
                  ) -> tuple[Comparison, list[str]]:
    """(the pairs the run decides, notes for the user): the headline comparison of the
    run's arms, or the current build against --against-version's samples (`installed`:
    arm -> the version its tool prints here, where the ledger does not know it). Raises
    NoComparison when that cannot be made."""
    arms, tasks = headline(cells)
    if settings.against_version is not None:
        return version_comparison(ledger, arms, tasks, settings.against_version, margin,
                                  installed=(installed or {}).get(arms[0]) if arms else None)
    fam = headline_family(arms, tree_arms, margin, settings.baseline)
    return Comparison(arms, tasks, fam), []


def next_round(ledger: Ledger, comparison: Comparison, budget_left: float,
               jobs: int) -> Round:
    """The round the ledger's samples call for, as the run and its --dry-run plan it."""
    fixed = frozenset(side for side, _ in comparison.fixed)
    round_ = plan_round(comparison.cells(ledger), comparison.arms, comparison.tasks,
                        comparison.fam,
                        expected=lambda arm, task: ledger.expected(arm, task)[0],
                        budget_left=budget_left, batch=round_size(jobs), fixed=fixed)
    round_.estimated = ledger.estimated
    return round_


class Rounds(Protocol):
    """What run_rounds needs of the run that calls it (invocation.Invocation): the tree
    and settings it plans by, and the parts each round's loop runs with."""

    @property
    def tree(self) -> Tree: ...
    @property
    def settings(self) -> RunSettings: ...
    @property
    def progress(self) -> Progress: ...
    @property
    def stop(self) -> Stop: ...
    def context(self, arm: Arm) -> RunContext: ...


def run_rounds(run: Rounds, chosen: Chosen, scheduler) -> Looped:
    """Plan a round, run it on the loop, again, until the planner has nothing left
    worth a trial, the budget fits no trial or a round halts: what every round's loop
    came back with. A stop raises the loop's Interrupted. A --shard run plays its part
    of one round (planned for every shard's workers: docs/scale-out.md) and stops."""
    ledger, settings = chosen.ledger, run.settings
    by_key = {(arm.id, task.id): (arm, task) for arm, task in chosen.every}
    try:
        comparison, notes = comparison_of(ledger, chosen.every, list(run.tree.arms),
                                          run.tree.suite.equivalence_margin, settings)
    except NoComparison as error:  # checked before the host started: the store changed
        run.progress.note(f"error: {error}")
        return Looped(error=str(error))
    for note in notes:
        run.progress.note(f"until-decided: {note}")
    last_round, looped = None, Looped()
    while not run.stop.is_set() and not scheduler.totals.halted:
        round_ = next_round(ledger, comparison, scheduler.left(), fleet(settings))
        announce(run.progress, round_, last_round)
        last_round = round_
        trials = mine(round_, chosen)
        if not round_.trials or not trials:
            return looped
        scheduler.extend([Trial(*by_key[(t.arm, t.task)], ledger.number(t.arm, t.task))
                          for t in trials])
        ran_before = scheduler.totals.ran
        looped = looped.then(RunLoop(scheduler, run.context, run.progress,
                                     jobs=settings.jobs, stop=run.stop).run_trials())
        if looped.error or looped.refused:
            return looped
        if scheduler.totals.ran == ran_before:
            run.progress.note("until-decided: no trial of the round fits the budget "
                              "left: stopping")
            return looped
        if settings.shard is not None:
            run.progress.note(f"until-decided: shard {label(settings.shard)} ran its part of "
                              "the round; merge every shard's store, and run the next round "
                              "from the merged one (docs/scale-out.md)")
            return looped
    return looped


def fleet(settings: RunSettings) -> int:
    """Trials a round plans for: one per worker, on every shard's machine."""
    return settings.jobs * (settings.shard[1] if settings.shard else 1)


def mine(round_: Round, chosen: Chosen) -> list[Wanted]:
    """The round's trials of the run's own cells (its --shard's)."""
    own = {(arm.id, task.id) for arm, task in chosen.cells}
    return [t for t in round_.trials if (t.arm, t.task) in own]


def planned(checked: Checked, settings: RunSettings, *, self_review,
            installed: dict | None = None) -> tuple[Chosen, Comparison, list[str]]:
    """(the run's choice of cells and its ledger, the comparison a run would decide,
    notes for the user), before any probe: `installed` (arm -> the version its tool prints here) stands in for
    the version the probe would find. Raises NoComparison when the comparison cannot be
    made."""
    chosen = choose(checked, settings, self_review=self_review, runtime=installed_runtime(),
                    store=Store(settings.store_dir))
    comparison, notes = comparison_of(chosen.ledger, chosen.every, list(checked.tree.arms),
                                      checked.tree.suite.equivalence_margin, settings,
                                      installed)
    return chosen, comparison, notes


def unprobed(checked: Checked) -> tuple[Checked, dict[str, str | None]]:
    """`checked` as before the probes (its arms' versions unknown to the ledger), and
    arm -> the version its tool prints here: pre-flight's, else `benchkit list arms`'."""
    versions = {arm.id: arm.tool_version or installed(arm.tool, arm.path).version
                for arm in checked.arms}
    return replace(checked, arms=[replace(arm, tool_version=None) for arm in checked.arms]), versions


def dry_round(checked, progress: Progress, settings: RunSettings, *, self_review) -> Round:
    """`--until-decided --dry-run`: the first round the run would spend, from the
    store's samples, and each pair's state; nothing run or written. Raises
    NoComparison when the comparison asked for cannot be made."""
    versions: dict = {}
    if settings.against_version is not None:
        checked, versions = unprobed(checked)
    chosen, comparison, notes = planned(checked, settings, self_review=self_review,
                                        installed=versions)
    for note in notes:
        progress.note(f"until-decided: {note}")
    left = chosen.budget_left(settings.budget)
    assert left is not None  # --until-decided takes --budget
    round_ = next_round(chosen.ledger, comparison, left, fleet(settings))
    announce(progress, round_)
    if settings.shard is not None:
        progress.note(f"until-decided: shard {label(settings.shard)} would run "
                      f"{len(mine(round_, chosen))} of the round's trials")
    return round_


def announce(progress, round_: Round, before: Round | None = None) -> None:
    """The round as a `decide` event (every pair) and, for a person, the pairs whose
    state changed since the round before and the next trials."""
    progress.emit(events.DecideEvent(
        estimated=round_.estimated,
        pairs=[events.Pair(p.a, p.b, p.status, p.why, p.verdict.verdict) for p in round_.pairs],
        next=[events.Next(t.arm, t.task, t.why) for t in round_.trials]),
                  "\n".join("until-decided: " + line for line in round_.lines(before)))
