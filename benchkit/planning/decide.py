"""`benchkit run --until-decided`'s planner: spend trials only where they can still
change a verdict of the headline comparison (or, with --against-version, of the current
build against an earlier version's samples: benchkit.planning.against).

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
from dataclasses import dataclass, field

from benchkit.planning.to_decide import trials_to_decide
from benchkit.statistics.verdicts import (
    MIN_DF,
    UNDECIDED,
    Family,
    PairVerdict,
    compare,
    evidence,
    half_width,
    spread,
)

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


def plan_round(cells: dict, arms: list, tasks: list, fam: Family, *, expected,
               budget_left: float, batch: int, fixed: frozenset = frozenset()) -> Round:
    """The next trials (at most `batch` once every cell has its first), and each
    pair's state.

    cells: arm -> task -> CellStats (cost); expected(arm, task) -> tokens one more
    trial of the cell is expected to cost; budget_left: tokens still to spend; fixed:
    sides no trial can add to (an earlier version's samples), never asked for."""
    round_ = Round()
    empty = [(arm, task) for arm in arms if arm not in fixed for task in tasks
             if task not in cells.get(arm, {})]
    if empty:
        round_.trials = [Wanted(arm, task, "no sample yet: every pair compares on common tasks")
                         for arm, task in empty]
        return round_
    spreads = {arm: spread(cells[arm].values()) for arm in arms}
    wants: dict = {}  # (arm, task) -> [gain per token, pairs served]
    for a, b in fam.pairs:
        state = _pair_state(a, b, cells, spreads, fam, expected, budget_left, wants, fixed)
        round_.pairs.append(state)
    ranked = sorted(wants.items(), key=lambda item: -item[1][0])[:batch]
    round_.trials = [Wanted(arm, task, "for " + ", ".join(served))
                     for (arm, task), (_, served) in ranked]
    return round_


def _pair_state(a: str, b: str, cells: dict, spreads: dict, fam: Family, expected,
                budget_left: float, wants: dict, fixed: frozenset = frozenset()) -> PairState:
    """Decided, out of reach, or open; an open pair adds what each of its cells' next
    trial is worth to `wants`."""
    verdict = compare(a, b, cells[a], cells[b], spreads, fam)
    if verdict.verdict != UNDECIDED:
        return PairState(a, b, DECIDED, verdict, verdict.says)
    found = evidence(cells[a], cells[b], spreads[a], spreads[b])
    shares = variance_shares(found, cells[a], cells[b])
    if not shares:
        return _spread_wanted(a, b, found.tasks, cells, spreads, expected, budget_left, wants,
                              fixed, verdict)
    costs = {(side, t): max(expected(a if side == "a" else b, t), 1.0) for side, t in shares}
    frozen = {side for side, arm in (("a", a), ("b", b)) if arm in fixed}
    reach = reachable(found, shares, costs, cells, a, b, budget_left, fam, frozen)
    if reach is not None:
        return PairState(a, b, OUT_OF_REACH, verdict, reach)
    for (side, t), weight in shares.items():
        if costs[(side, t)] > budget_left or side in frozen:
            continue  # asked for, it would end the run while cheaper cells still fit
        arm = a if side == "a" else b
        n = cells[arm][t].n
        _want(wants, (arm, t), weight / (n * (n + 1)) / costs[(side, t)], f"{a} vs {b}")
    counts = {(side, t): cells[a if side == "a" else b][t].n for side, t in shares}
    more = trials_to_decide(found.theta, shares, costs, counts, fam, frozen)
    said = "" if more is None else (f"; at least {more[0]} more trial(s), ~{more[1]:,.0f} "
                                    "tokens, to a verdict if the ratio holds")
    return PairState(a, b, OPEN, verdict, _interval_text(verdict, found.method) + said)


def _spread_wanted(a: str, b: str, tasks: list, cells: dict, spreads: dict, expected,
                   budget_left: float, wants: dict, fixed: frozenset,
                   verdict: PairVerdict) -> PairState:
    """A pair with no interval yet: on one common task only the arms' own spreads can
    give one, so an arm short of MIN_DF within-cell degrees of freedom asks for another
    trial of its common cells; an earlier version short of them never gets them."""
    short = [arm for arm in (a, b) if spreads[arm].df < MIN_DF]
    if any(arm in fixed for arm in short) and len(tasks) < 2:
        return PairState(a, b, OUT_OF_REACH, verdict,
                         f"{' and '.join(a for a in short if a in fixed)} has too few trials "
                         "per task to give a spread, and no trial can add to them")
    for arm in (x for x in short if x not in fixed):
        for task in tasks:
            cost = max(expected(arm, task), 1.0)
            if cost <= budget_left:
                _want(wants, (arm, task), 1.0 / (cells[arm][task].n * cost), f"{a} vs {b}")
    return PairState(a, b, OPEN, verdict, "no interval on common tasks yet")


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
              budget_left: float, fam: Family, frozen: set | frozenset = frozenset()) -> str | None:
    """None when the budget could still decide the pair, else why not. The best
    split of C tokens over cells with variance shares w and costs c gives variance
    (sum sqrt(w c))^2 / C (Lagrange); C is what the pair's cells cost so far plus the
    whole remaining budget. A frozen side's cells (an earlier version's: no trial adds
    to them) keep their share w / n. Its interval is taken at the normal quantile (as
    if the spread were known): the most the budget could buy."""
    def n(key):
        return cells[a if key[0] == "a" else b][key[1]].n
    free = [key for key in shares if key[0] not in frozen]
    kept = sum(shares[key] / n(key) for key in shares if key[0] in frozen)
    total = sum(costs[key] * n(key) for key in free) + max(budget_left, 0.0)
    best = kept + (sum(math.sqrt(shares[key] * costs[key]) for key in free) ** 2 / total
                   if free and total > 0 else math.inf if free else 0.0)
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
