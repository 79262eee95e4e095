"""Stores with known truth, analysed by benchkit's own code: how often the report's
intervals cover the truth, how often its verdicts are wrong, and how many trials
`benchkit run --until-decided` spends against a fixed sweep. Prints figures (each rate
with its binomial standard error); asserts nothing (tests/statistics/test_simulate.py runs a
small version and checks the thresholds).

Truth: the suite's published snapshot (4 arms x 20 tasks x 3 trials, one host):
per-arm means of cost-equivalent tokens
raw-api 17,613, gitea-axi 17,815, gitea-mcp 23,198, tea 23,210; success
100/100/100/85% (turns and durations are drawn in proportion to the cost: the same
interval method). 20 tasks whose costs spread lognormally
(sigma 0.35) with an arm-by-task interaction (sigma 0.1), 30% per-trial noise
(lognormal), and per-task success rates spread on the logit scale. The estimand is
the mean over the drawn tasks (the suite's mean). Each cell's trials come from its own
random stream (common random numbers): every procedure run on a replication sees the
same k-th trial of a cell, so their differences are the procedures', and ranking
rates are compared pairwise (the replications only one of the two reached). The code
under test: benchkit.statistics.intervals.intervals (the headline's intervals),
benchkit.statistics.verdicts (the verdicts), benchkit.planning.decide.plan_round (the
until-decided planner).

Few tasks (`--only few`): two equal arms on 3, 4, 6, 12 and 20 tasks, one pair at
the full 5%: how often fixed sweeps and until-decided call it cheaper, with 95%
(Wilson) intervals.

    python3 benchmarks/simulate.py [--replications 200] [--seed 1] [--only few]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import numpy as np

from benchkit.planning.decide import plan_round, round_size
from benchkit.statistics.intervals import ALL_METRICS, CellStats, intervals
from benchkit.statistics.rows import WIDTH, TrialRow
from benchkit.statistics.verdicts import (
    A_CHEAPER,
    B_CHEAPER,
    EQUIVALENT,
    PairVerdict,
    family,
    verdicts,
)

# The suite's published snapshot: 4 arms x 20 tasks x 3 trials, one host.
PUBLISHED = {"raw-api": 17613, "gitea-axi": 17815, "gitea-mcp": 23198, "tea": 23210}
PUBLISHED_SUCCESS = {"raw-api": 1.0, "gitea-axi": 1.0, "gitea-mcp": 1.0, "tea": 0.85}
# The published ranking {raw-api, gitea-axi} < {gitea-mcp, tea}: its four cross pairs
# (cheaper, dearer). The two pairs within a side differ by 1.1% and 0.05%: reaching the
# ranking means those end "equivalent" or undecided / out of reach, never "cheaper".
RANKING = [("raw-api", "tea"), ("raw-api", "gitea-mcp"), ("gitea-axi", "tea"),
           ("gitea-axi", "gitea-mcp")]
NEAR = [("raw-api", "gitea-axi"), ("gitea-mcp", "tea")]
TASKS, TASK_SIGMA, INTERACTION_SIGMA, NOISE_CV = 20, 0.35, 0.1, 0.30
K, MARGIN, LEVEL = 3, 0.05, 0.95


@dataclass
class Truth:
    """One replication's suite: each cell's true mean cost and success rate."""
    arms: list
    cost: np.ndarray      # (arms, tasks)
    success: np.ndarray   # (arms, tasks)

    def mean(self, arm: int) -> float:
        return float(self.cost[arm].mean())

    @property
    def tasks(self) -> int:
        return self.cost.shape[1]


def draw_truth(rng, means: dict, success: dict, tasks: int = TASKS,
               interaction: float = INTERACTION_SIGMA) -> Truth:
    """interaction 0: every arm's cost profile over tasks is the same (equal arms are
    then equal on the suite too, not only on average)."""
    arms = list(means)
    task = np.exp(rng.normal(0, TASK_SIGMA, tasks) - TASK_SIGMA ** 2 / 2)
    inter = np.exp(rng.normal(0, interaction, (len(arms), tasks)) - interaction ** 2 / 2)
    cost = np.array([means[a] for a in arms])[:, None] * task[None, :] * inter
    rates = np.empty((len(arms), tasks))
    for i, arm in enumerate(arms):
        p = success[arm]
        if p >= 1.0 or p <= 0.0:
            rates[i] = p
        else:
            logits = math.log(p / (1 - p)) + rng.normal(0, 1.0, tasks)
            rates[i] = 1 / (1 + np.exp(-logits))
    return Truth(arms, cost, rates)


NOISE_SIGMA = math.sqrt(math.log1p(NOISE_CV ** 2))


def trials(rng, truth: Truth, arm: int, task: int, n: int) -> np.ndarray:
    """n trial rows of a cell, the columns stats.CellStats reads."""
    cost = truth.cost[arm, task] * np.exp(rng.normal(0, NOISE_SIGMA, n) - NOISE_SIGMA ** 2 / 2)
    passed = (rng.random(n) < truth.success[arm, task]).astype(float)
    return np.column_stack(TrialRow(cost=cost, raw=cost * 3, turns=cost / 3000,
                                    duration=cost / 1000, success=passed,
                                    blocked=np.zeros(n), cost_usd=cost / 1e5,
                                    has_cost_usd=np.ones(n)))


class Draws:
    """A replication's trials, each cell's in a fixed order from its own random stream:
    the k-th trial of a cell is the same whichever procedure asks for it and in what
    order (common random numbers), so procedures compared on one replication differ
    by what they do, not by the luck of their draws."""

    BLOCK = 8

    def __init__(self, truth: Truth, seed: tuple):
        self.truth, self.seed, self.rows = truth, seed, {}

    def first(self, arm: int, task: int, n: int) -> np.ndarray:
        have = self.rows.get((arm, task), np.zeros((0, WIDTH)))
        while len(have) < n:
            block = len(have) // self.BLOCK
            rng = np.random.default_rng([*self.seed, arm, task, block])
            have = np.vstack([have, trials(rng, self.truth, arm, task, self.BLOCK)])
        self.rows[(arm, task)] = have
        return have[:n]


def replication(seed: int, index: int, means: dict, success: dict,
                interaction: float = INTERACTION_SIGMA, tasks: int = TASKS) -> Draws:
    """Replication `index` of a seed: its suite's truth and its cells' trials."""
    truth = draw_truth(np.random.default_rng([seed, index]), means, success, tasks,
                       interaction=interaction)
    return Draws(truth, (seed, index))


def rate(hits: int, total: int) -> str:
    p = hits / total if total else float("nan")
    return f"{p:6.1%} ± {math.sqrt(p * (1 - p) / total) if total else float('nan'):.1%}"


# --- coverage ---------------------------------------------------------------------------

COVERED = ("cost", "turns", "duration", "success", "pass_k")


def coverage(seed: int, replications: int, counts=(1, 3, 5), means=PUBLISHED,
             success=None) -> dict:
    """(metric, n) -> [hits, total] over arms and replications; plus the verdicts'
    intervals on every pair's ratio ("ratio", n)."""
    success = success or {"raw-api": 0.97, "gitea-axi": 0.99, "tea": 0.9, "gitea-mcp": 0.75}
    tally: dict = {}
    for index in range(replications):
        draws = replication(seed, index, means, success)
        truth = draws.truth
        for n in counts:
            cells = {}
            for i, arm in enumerate(truth.arms):
                cells[arm] = {t: CellStats(draws.first(i, t, n), K) for t in range(TASKS)}
                bounds = dict(zip(ALL_METRICS, intervals(list(cells[arm].values()), level=LEVEL),
                                  strict=True))
                true = {"cost": truth.mean(i), "turns": truth.mean(i) / 3000,
                        "duration": truth.mean(i) / 1000,
                        "success": float(truth.success[i].mean()),
                        "pass_k": float((truth.success[i] ** K).mean())}
                for metric in COVERED:
                    low, high = bounds[metric]
                    if low is None:
                        continue
                    entry = tally.setdefault((metric, n), [0, 0])
                    entry[0] += low - 1e-12 <= true[metric] <= high + 1e-12
                    entry[1] += 1
            fam = family(truth.arms, alpha=1 - LEVEL, margin=MARGIN)
            index = {a: i for i, a in enumerate(truth.arms)}
            for pair in verdicts(cells, fam):
                if pair.ratio_low is None:
                    continue
                ratio = truth.mean(index[pair.a]) / truth.mean(index[pair.b])
                entry = tally.setdefault(("ratio (each pair)", n), [0, 0])
                entry[0] += pair.ratio_low <= ratio <= pair.ratio_high
                entry[1] += 1
    return tally


# --- verdicts of a fixed sweep ------------------------------------------------------------

def sweep(draws: Draws, n: int, fam) -> tuple[list, int]:
    tasks = draws.truth.tasks
    cells = {arm: {t: CellStats(draws.first(i, t, n), K) for t in range(tasks)}
             for i, arm in enumerate(draws.truth.arms)}
    return verdicts(cells, fam), n * tasks * len(draws.truth.arms)


def wrong(pair: PairVerdict, truth: Truth) -> str | None:
    """'direction' or 'equivalence' when the verdict contradicts the suite's truth."""
    index = {a: i for i, a in enumerate(truth.arms)}
    ratio = truth.mean(index[pair.a]) / truth.mean(index[pair.b])
    verdict = pair.verdict
    if (verdict == A_CHEAPER and ratio >= 1) or (verdict == B_CHEAPER and ratio <= 1):
        return "direction"
    if verdict == EQUIVALENT and abs(math.log(ratio)) >= math.log1p(MARGIN):
        return "equivalence"
    return None


# --- until-decided ----------------------------------------------------------------------

def until_decided(draws: Draws, fam, budget: float, jobs: int = 1) -> tuple[list, int]:
    """The planner's rounds run to the end on simulated trials: (the verdicts the
    report gives on the final cells, trials spent)."""
    truth = draws.truth
    costs: dict = {}
    cells: dict = {arm: {} for arm in truth.arms}
    spent, count = 0.0, 0
    index = {a: i for i, a in enumerate(truth.arms)}
    prior = float(np.mean([truth.mean(i) for i in range(len(truth.arms))]))

    def expected(arm, task):
        values = costs.get((arm, task))
        return float(np.mean([v[0] for v in values])) if values else prior

    while True:
        round_ = plan_round(cells, truth.arms, list(range(truth.tasks)), fam, expected=expected,
                            budget_left=budget - spent, batch=round_size(jobs))
        touched = set()
        for trial in round_.trials:
            if spent + expected(trial.arm, trial.task) > budget:
                continue
            done = costs.setdefault((trial.arm, trial.task), [])
            row = draws.first(index[trial.arm], trial.task, len(done) + 1)[-1]
            done.append(row)
            spent += row[0]
            count += 1
            touched.add((trial.arm, trial.task))
        if not touched:
            break
        for arm, task in touched:
            cells[arm][task] = CellStats(np.array(costs[(arm, task)]), K)
    return verdicts(cells, fam), count


def ranking_reached(pairs: list) -> bool:
    """The four cross pairs called the published way round, and neither pair within a
    side called cheaper (equivalent, undecided or out of reach are all honest there)."""
    found = {(p.a, p.b): p.verdict for p in pairs}
    for cheaper, dearer in RANKING:
        if found.get((cheaper, dearer)) != A_CHEAPER and found.get((dearer, cheaper)) != B_CHEAPER:
            return False
    return all(found.get(pair) not in (A_CHEAPER, B_CHEAPER) for pair in NEAR)


# until-decided as run: (its budget as a share of the fixed 3-trial sweep's expected
# tokens, --jobs: the trials of a round)
UNTIL_DECIDED = {"until-decided": (1.0, 1), "until-decided 85%": (0.85, 1),
                 "until-decided --jobs 4": (1.0, 4)}


def compare_procedures(seed: int, replications: int, means: dict, *, budget_trials: int = 240,
                       interaction: float = INTERACTION_SIGMA):
    """Fixed 1-, 3- and 5-trial sweeps against until-decided on the same trials."""
    arms = list(means)
    fam = family(arms, alpha=1 - LEVEL, margin=MARGIN)
    budget = budget_trials * float(np.mean(list(means.values())))
    rows: dict = {}
    for index in range(replications):
        draws = replication(seed, index, means, PUBLISHED_SUCCESS, interaction)
        truth = draws.truth
        results = {f"fixed {n}": sweep(draws, n, fam) for n in (1, 3, 5)}
        for name, (share, jobs) in UNTIL_DECIDED.items():
            results[name] = until_decided(draws, fam, budget * share, jobs)
        for name, (pairs, spent) in results.items():
            tally(rows.setdefault(name, {"trials": [], "wrong": 0, "any": 0, "reached": [],
                                         "verdicts": {}, "covered": [0, 0]}), pairs, spent, truth)
    return rows


def tally(row: dict, pairs: list[PairVerdict], spent: int, truth: Truth) -> None:
    row["trials"].append(spent)
    row["wrong"] += any(wrong(p, truth) == "direction" for p in pairs)
    row["any"] += any(p.verdict in (A_CHEAPER, B_CHEAPER) for p in pairs)
    row["reached"].append(ranking_reached(pairs))
    index = {a: i for i, a in enumerate(truth.arms)}
    for p in pairs:
        counts = row["verdicts"].setdefault((p.a, p.b), {})
        counts[p.says] = counts.get(p.says, 0) + 1
        if p.ratio_low is not None:
            ratio = truth.mean(index[p.a]) / truth.mean(index[p.b])
            row["covered"][0] += p.ratio_low <= ratio <= p.ratio_high
            row["covered"][1] += 1


def discordant(reached: list, fixed: list) -> tuple[int, int]:
    """(replications only this procedure reached the ranking in, those only the fixed
    sweep did): on the same trials, their difference is the procedures'."""
    return (sum(a and not b for a, b in zip(reached, fixed)),
            sum(b and not a for a, b in zip(reached, fixed)))


def print_procedures(title: str, rows: dict, replications: int, ranking: bool) -> None:
    print(f"\n{title} ({replications} replications)")
    for name, row in rows.items():
        trials = np.array(row["trials"], dtype=float)
        saved = 1 - trials.mean() / (K * TASKS * 4)
        error = trials.std(ddof=1) / math.sqrt(len(trials))
        line = (f"  {name:>18}: mean trials {trials.mean():6.1f} ± {error:.1f} ({saved:.1%} fewer "
                f"than fixed {K})   any wrong-direction {rate(row['wrong'], replications)}"
                f"   any 'cheaper' {rate(row['any'], replications)}")
        if ranking:
            line += f"   ranking reached {rate(sum(row['reached']), replications)}"
            if name != f"fixed {K}":
                only, missed = discordant(row["reached"], rows[f"fixed {K}"]["reached"])
                line += f" (only here {only}, only fixed {K} {missed})"
        line += f"   ratio intervals covering {rate(*row['covered'])}"
        print(line)
    for name, row in rows.items():
        print(f"  {name}:")
        for (a, b), counts in row["verdicts"].items():
            print(f"    {a} vs {b}: " + ", ".join(f"{v} {c}" for v, c in sorted(counts.items())))


# --- few tasks ------------------------------------------------------------------------------

FEW_TASKS = (3, 4, 6, 12, 20)
TWO_EQUAL = {"raw-api": 19000, "gitea-axi": 19000}


def few_tasks(seed: int, replications: int, tasks: int) -> dict:
    """Two equal arms on `tasks` tasks, one pair at the full 5%: procedure -> replications
    in which the pair was called cheaper (every such call is false). The until-decided
    budget is the fixed 3-trial sweep's."""
    fam = family(list(TWO_EQUAL), alpha=1 - LEVEL, margin=MARGIN)
    budget = K * tasks * len(TWO_EQUAL) * float(np.mean(list(TWO_EQUAL.values())))
    calls: dict = {}
    for index in range(replications):
        draws = replication(seed, index, TWO_EQUAL, {a: 1.0 for a in TWO_EQUAL}, 0.0, tasks)
        results = {f"fixed {n}": sweep(draws, n, fam) for n in (1, 3, 5)}
        results["until-decided"] = until_decided(draws, fam, budget)
        for name, (pairs, spent) in results.items():
            row = calls.setdefault(name, {"cheaper": 0, "trials": 0})
            row["cheaper"] += any(p.verdict in (A_CHEAPER, B_CHEAPER) for p in pairs)
            row["trials"] += spent
    return calls


def wilson_95(hits: int, total: int) -> tuple[float, float]:
    z = 1.959964
    p, z2 = hits / total, z * z
    centre = (p + z2 / (2 * total)) / (1 + z2 / total)
    half = z / (1 + z2 / total) * math.sqrt(p * (1 - p) / total + z2 / (4 * total ** 2))
    return max(0.0, centre - half), min(1.0, centre + half)


def print_few_tasks(seed: int, reps: int) -> None:
    print(f"\ntwo equal arms on few tasks, one pair at 5% ({reps} replications each): "
          "false 'cheaper' calls, with the 95% (Wilson) interval")
    for tasks in FEW_TASKS:
        for name, row in few_tasks(seed, reps, tasks).items():
            low, high = wilson_95(row["cheaper"], reps)
            print(f"  {tasks:>2} tasks {name:>14}: {row['cheaper'] / reps:6.1%} "
                  f"({low:.1%}-{high:.1%})   mean trials {row['trials'] / reps:6.1f}", flush=True)


def print_coverage(seed: int, reps: int) -> None:
    print(f"coverage of the {LEVEL:.0%} intervals ({reps} replications x 4 arms; "
          "success 97/99/90/75% across arms, spread over tasks)")
    for (metric, n), (hits, total) in sorted(coverage(seed, reps).items()):
        print(f"  {metric:>18} at {n} trial(s) per cell: {rate(hits, total)}  ({total} intervals)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=["coverage", "verdicts", "equal", "published", "few"])
    args = parser.parse_args(argv)
    seed, reps = args.seed, args.replications
    if args.only in (None, "coverage"):
        print_coverage(seed, reps)
    if args.only in (None, "verdicts", "equal"):
        equal = {arm: 19000 for arm in PUBLISHED}
        print_procedures("four equal arms: any arm called cheaper is a false verdict",
                         compare_procedures(seed, reps, equal, interaction=0.0), reps, False)
    if args.only in (None, "verdicts", "few"):
        print_few_tasks(seed, reps)
    if args.only in (None, "verdicts", "published"):
        print_procedures("the published effects (reaching the ranking: the four cross pairs "
                         "called right, neither near pair called cheaper)",
                         compare_procedures(seed, reps, PUBLISHED), reps, True)


if __name__ == "__main__":
    sys.exit(main())
