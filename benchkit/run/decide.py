"""`benchkit run --until-decided`: spend trials only where they can still change a
verdict of the headline comparison.

Each round looks at the cells as the report would (benchkit.statistics.verdicts, the same
code), and for every pair of the headline comparison:

    decided        its confidence sequence gives a verdict: no more trials for it
    out of reach   even the remaining budget, spent on this pair alone in the best
                   proportions, would leave its interval straddling both 0 and the
                   margin at the current estimate: no more trials for it
    open           more trials can decide it: it asks for the trials that shrink its
                   interval most per token (a cell's share of the variance, w/n,
                   falls by w/(n(n+1)) for one more trial costing its mean)

Every cell gets a first trial; from then on a pair is judged on whatever evidence the
report has, the paired between-task variance until its arms' spread can be pooled, so
no second trial is forced anywhere: a pair decided or out of reach on one trial per
cell costs nothing more, and the batch goes only to the cells of open pairs. Stopping
early (decided, or futile) keeps every verdict within its error budget: the intervals
hold at every sample size (docs/statistics.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Protocol

from benchkit.agent.runtime import installed_runtime
from benchkit.documents import Arm, Tree
from benchkit.run.ledger import Ledger
from benchkit.run.loop import Looped, RunLoop
from benchkit.run.plan import Trial, choose
from benchkit.run.prepare import RunContext
from benchkit.run.progress import Progress
from benchkit.run.settings import RunSettings
from benchkit.statistics.intervals import LEVEL, CellStats
from benchkit.statistics.rows import TrialRow
from benchkit.statistics.verdicts import (
    UNDECIDED,
    Family,
    PairVerdict,
    compare,
    evidence,
    family,
    half_width,
    spread,
)
from benchkit.stopping import Stop
from benchkit.store import Store

DECIDED, OUT_OF_REACH, OPEN = "decided", "out of reach", "open"


@dataclass
class PairState:
    a: str
    b: str
    status: str
    verdict: PairVerdict
    why: str


@dataclass
class Wanted:
    arm: str
    task: str
    why: str


@dataclass
class Round:
    trials: list = field(default_factory=list)   # [Wanted]
    pairs: list = field(default_factory=list)    # [PairState]
    estimated: bool = False  # judged on replay estimates, not measured tokens

    def lines(self, before: Round | None = None) -> list[str]:
        """What the round found and what it would spend next, for a person: every pair,
        or only those whose state changed since the round `before`; a state judged on
        estimates says so."""
        known = ({(p.a, p.b): (p.status, p.verdict.verdict) for p in before.pairs}
                 if before else {})
        on = " (on replay estimates, not measured tokens)" if self.estimated else ""
        said = [f"{p.a} vs {p.b}: {p.status} - {p.why}{on}" for p in self.pairs
                if known.get((p.a, p.b)) != (p.status, p.verdict.verdict)]
        if self.trials:
            said.append(f"next: {len(self.trials)} trial(s): " + "; ".join(
                f"{t.arm} {t.task} ({t.why})" for t in self.trials))
        else:
            said.append("next: nothing - every pair of the headline comparison is decided "
                        "or out of reach within the budget")
        return said


def round_size(jobs: int) -> int:
    """Trials per round: one per worker. A trial planned while others still run may be
    made needless by them, so with the default one job each trial is planned on every
    trial before it (benchmarks/simulate.py: rounds of 4 spend 6-8% more trials than
    rounds of 1, and buy a little more of the ranking with them)."""
    return max(1, jobs)


def cost_cells(costs: dict, k: int = 1) -> dict:
    """arm -> task -> CellStats from (arm, task) -> [cost-equivalent tokens per trial]:
    the only column a verdict reads."""
    cells: dict = {}
    for (arm, task), values in costs.items():
        if values:
            rows = [TrialRow(cost=v) for v in values]
            cells.setdefault(arm, {})[task] = CellStats(rows, k, name=f"{arm}/{task}")
    return cells


def plan_round(cells: dict, arms: list, tasks: list, fam: Family, *, expected,
               budget_left: float, batch: int) -> Round:
    """The next trials (at most `batch` once every cell has its first), and each
    pair's state.

    cells: arm -> task -> CellStats (cost); expected(arm, task) -> tokens one more
    trial of the cell is expected to cost; budget_left: tokens still to spend."""
    round_ = Round()
    empty = [(arm, task) for arm in arms for task in tasks if task not in cells.get(arm, {})]
    if empty:
        round_.trials = [Wanted(arm, task, "no sample yet: every pair compares on common tasks")
                         for arm, task in empty]
        return round_
    spreads = {arm: spread(cells[arm].values()) for arm in arms}
    wants: dict = {}  # (arm, task) -> [gain per token, pairs served]
    for a, b in fam.pairs:
        state = _pair_state(a, b, cells, spreads, fam, expected, budget_left, wants)
        round_.pairs.append(state)
    ranked = sorted(wants.items(), key=lambda item: -item[1][0])[:batch]
    round_.trials = [Wanted(arm, task, "for " + ", ".join(served))
                     for (arm, task), (_, served) in ranked]
    return round_


def _pair_state(a: str, b: str, cells: dict, spreads: dict, fam: Family, expected,
                budget_left: float, wants: dict) -> PairState:
    """Decided, out of reach, or open; an open pair adds what each of its cells' next
    trial is worth to `wants`."""
    verdict = compare(a, b, cells[a], cells[b], spreads, fam)
    if verdict.verdict != UNDECIDED:
        return PairState(a, b, DECIDED, verdict, verdict.says)
    found = evidence(cells[a], cells[b], spreads[a], spreads[b])
    shares = variance_shares(found, cells[a], cells[b])
    if not shares:
        return PairState(a, b, OPEN, verdict, "no interval on common tasks yet")
    costs = {(side, t): max(expected(a if side == "a" else b, t), 1.0) for side, t in shares}
    reach = reachable(found, shares, costs, cells, a, b, budget_left, fam)
    if reach is not None:
        return PairState(a, b, OUT_OF_REACH, verdict, reach)
    for (side, t), weight in shares.items():
        if costs[(side, t)] > budget_left:
            continue  # asked for, it would end the run while cheaper cells still fit
        arm = a if side == "a" else b
        n = cells[arm][t].n
        _want(wants, (arm, t), weight / (n * (n + 1)) / costs[(side, t)], f"{a} vs {b}")
    return PairState(a, b, OPEN, verdict, _interval_text(verdict, found.method))


def variance_shares(found, cells_a: dict, cells_b: dict) -> dict:
    """(side, task) -> w, the cell's share of the variance of theta being w / n. The
    pooled evidence has them; for the between-task one (no pooled spread yet) they are
    what one relative spread common to every cell would give, s^2 (m_t / (T M))^2, with
    s^2 fitted to the between-task variance: that variance also holds the tasks'
    differing profiles, which more trials do not shrink, so the shares overstate what a
    trial buys (optimistic for reach, which only stops a pair sooner or later)."""
    if found.weights:
        return dict(found.weights)
    if found.method != "between-task":
        return {}
    count = len(found.tasks)
    profile = {}
    for side, cells, mean in (("a", cells_a, found.mean_a), ("b", cells_b, found.mean_b)):
        for t in found.tasks:
            profile[(side, t)] = (cells[t].means[0] / (count * mean)) ** 2
    scale = sum(share / (cells_a if side == "a" else cells_b)[t].n
                for (side, t), share in profile.items())
    relative = found.variance / scale if scale > 0 else math.inf
    return {key: relative * share for key, share in profile.items()}


def _want(wants: dict, cell: tuple, gain: float, pair: str) -> None:
    entry = wants.setdefault(cell, [0.0, []])
    entry[0] += gain
    entry[1].append(pair)


def reachable(found, shares: dict, costs: dict, cells: dict, a: str, b: str,
              budget_left: float, fam: Family) -> str | None:
    """None when the budget could still decide the pair, else why not. The best
    split of C tokens over cells with variance shares w and costs c gives variance
    (sum sqrt(w c))^2 / C (Lagrange); C is what the pair's cells cost so far plus the
    whole remaining budget. Its interval is taken at the normal quantile (as if the
    spread were known): the most the budget could buy."""
    spent = sum(costs[key] * cells[a if key[0] == "a" else b][key[1]].n for key in costs)
    total = spent + max(budget_left, 0.0)
    best = sum(math.sqrt(w * costs[key]) for key, w in shares.items()) ** 2 / total
    half = half_width(best, fam.alpha_pair, fam.rho)
    delta = math.log1p(fam.margin)
    theta = abs(found.theta)
    if theta > half or theta + half < delta:
        return None
    return (f"at ratio {math.exp(found.theta):.3f} even the whole budget left would leave "
            f"±{math.expm1(half):.1%}: neither a difference nor equivalence within "
            f"±{fam.margin:.0%} can be shown")


def _interval_text(verdict: PairVerdict, method: str) -> str:
    if verdict.ratio_low is None:
        return "no interval yet"
    return (f"ratio {verdict.ratio:.3f}, interval {verdict.ratio_low:.3f} to "
            f"{verdict.ratio_high:.3f} ({method} variance): can still be decided")


# --- in the run loop -----------------------------------------------------------------------

def headline_family(arms: list, tree_arms: list, margin: float, baseline: str | None) -> Family:
    """The run's pairs, each at the error budget the report gives it: the report compares
    every arm with samples (at most the tree's), so a run of two of four arms must not
    decide a pair at a looser level than the report will show it."""
    ours = family(arms, alpha=1 - LEVEL, margin=margin, baseline=baseline)
    whole = family(list(dict.fromkeys([*arms, *tree_arms])), alpha=1 - LEVEL, margin=margin,
                   baseline=baseline)
    return replace(ours, alpha=whole.alpha_pair * max(1, len(ours.pairs)))


def scored_costs(ledger: Ledger, arms: list, tasks: list) -> dict:
    """The ledger's counting costs of the headline's cells: scored tasks every arm ran,
    as the report's verdicts read them."""
    cells = {(arm, task) for arm in arms for task in tasks}
    return {key: values for key, values in ledger.costs.items() if key in cells}


def headline(cells) -> tuple[list, list]:
    """(arm ids, scored task ids every arm can run) of the run's cells."""
    arms = list(dict.fromkeys(arm.id for arm, _ in cells))
    runnable: dict = {}
    for arm, task in cells:
        if task.scored:
            runnable.setdefault(task.id, set()).add(arm.id)
    return arms, [t for t, ran in runnable.items() if len(ran) == len(arms)]


def next_round(ledger: Ledger, arms: list, tasks: list, fam: Family, budget_left: float,
               jobs: int) -> Round:
    """The round the ledger's samples call for, as the run and its --dry-run plan it."""
    round_ = plan_round(cost_cells(scored_costs(ledger, arms, tasks)), arms, tasks, fam,
                        expected=lambda arm, task: ledger.expected(arm, task)[0],
                        budget_left=budget_left, batch=round_size(jobs))
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


def run_rounds(run: Rounds, cells, ledger, scheduler) -> Looped:
    """Plan a round, run it on the loop, again, until the planner has nothing left
    worth a trial, the budget fits no trial or a round halts: what every round's loop
    came back with. A stop raises the loop's Interrupted."""
    by_key = {(arm.id, task.id): (arm, task) for arm, task in cells}
    arms, tasks = headline(cells)
    fam = headline_family(arms, list(run.tree.arms), run.tree.suite.equivalence_margin,
                          run.settings.baseline)
    last_round, looped = None, Looped()
    while not run.stop.is_set() and not scheduler.totals.halted:
        round_ = next_round(ledger, arms, tasks, fam, scheduler.left(), run.settings.jobs)
        announce(run.progress, round_, last_round)
        last_round = round_
        if not round_.trials:
            return looped
        scheduler.extend([Trial(*by_key[(t.arm, t.task)], ledger.number(t.arm, t.task))
                          for t in round_.trials])
        ran_before = scheduler.totals.ran
        looped = looped.then(RunLoop(scheduler, run.context, run.progress,
                                     jobs=run.settings.jobs, stop=run.stop).run_trials())
        if looped.error or looped.refused:
            return looped
        if scheduler.totals.ran == ran_before:
            run.progress.note("until-decided: no trial of the round fits the budget "
                              "left: stopping")
            return looped
    return looped


def dry_round(checked, progress: Progress, settings: RunSettings, *, self_review) -> Round:
    """`--until-decided --dry-run`: the first round the run would spend, from the
    store's samples, and each pair's state; nothing run or written."""
    suite = checked.tree.suite
    chosen = choose(checked, settings, self_review=self_review, runtime=installed_runtime(),
                    store=Store(settings.store_dir))
    ledger = chosen.ledger
    arms, tasks = headline(chosen.cells)
    fam = headline_family(arms, list(checked.tree.arms), suite.equivalence_margin,
                          settings.baseline)
    assert settings.budget is not None  # --until-decided takes --budget
    round_ = next_round(ledger, arms, tasks, fam, settings.budget, settings.jobs)
    announce(progress, round_)
    return round_


def announce(progress, round_: Round, before: Round | None = None) -> None:
    """The round as a `decide` event (every pair) and, for a person, the pairs whose
    state changed since the round before and the next trials."""
    progress.emit({"event": "decide", "estimated": round_.estimated,
                   "pairs": [{"a": p.a, "b": p.b, "status": p.status, "why": p.why,
                              "verdict": p.verdict.verdict} for p in round_.pairs],
                   "next": [{"arm": t.arm, "task": t.task, "why": t.why} for t in round_.trials]},
                  "\n".join("until-decided: " + line for line in round_.lines(before)))
