"""The until-decided planner (benchkit/planning/decide.py) on cells of known costs, and
`benchkit run --until-decided` through the CLI."""

import json
import random
import threading

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.cli import main
from benchkit.planning.compared import cost_cells
from benchkit.planning.decide import (
    DECIDED,
    OPEN,
    OUT_OF_REACH,
    plan_round,
    variance_shares,
)
from benchkit.planning.settings import RunSettings
from benchkit.planning.to_decide import trials_to_decide
from benchkit.run.events import builtins
from benchkit.statistics.verdicts import evidence, family, half_width, spread, welch_df

TASKS = [f"t{i}" for i in range(10)]


def costs(arm_cost: dict, trials: int, wobble: float = 0.1) -> dict:
    """(arm, task) -> trial costs: task t costs (t + 1) x the arm's, times a uniform
    factor 1 +- wobble (seeded per cell)."""
    return {(arm, t): [c * (i + 1) * (1 + random.Random(f"{arm}{t}{j}").uniform(-wobble, wobble))
                       for j in range(trials)]
            for arm, c in arm_cost.items() for i, t in enumerate(TASKS)}


def plan(found: dict, arms, budget=1e7, batch=4):
    fam = family(list(arms), alpha=0.05, margin=0.05)
    cells = cost_cells(found)
    return plan_round(cells, list(arms), TASKS, fam, budget_left=budget, batch=batch,
                      expected=lambda arm, task: sum(found[(arm, task)]) / len(found[(arm, task)]))


def test_cells_without_a_sample_come_first():
    found = costs({"a": 1000, "b": 1000}, 1)
    del found[("b", "t3")]
    round_ = plan(found, "ab")
    assert [(t.arm, t.task) for t in round_.trials] == [("b", "t3")]
    assert round_.pairs == []


def test_one_trial_per_cell_can_decide_on_the_between_task_evidence():
    round_ = plan(costs({"a": 1000, "b": 2000}, 1, wobble=0.02), "ab")
    (pair,) = round_.pairs
    # No second trial forced before a verdict: the paired between-task variance suffices.
    assert pair.status == DECIDED and pair.verdict.variance == "between-task"
    assert round_.trials == []


def test_an_open_pair_on_one_trial_per_cell_asks_for_a_batch_not_a_round():
    round_ = plan(costs({"a": 1000, "b": 1030}, 1), "ab", batch=4)
    (pair,) = round_.pairs
    assert pair.status == OPEN and "between-task variance" in pair.why
    # The batch only, dearest tasks first (their share of the variance grows with the
    # cost squared, a trial's price with the cost), for both arms.
    assert sorted((t.arm, t.task) for t in round_.trials) == [
        ("a", "t8"), ("a", "t9"), ("b", "t8"), ("b", "t9")]


def test_between_task_variance_shares_add_up_to_the_variance():
    # a: 100 and 300, b: 100 and 100, one trial each. Means 200 and 100; deviations
    # -0.5 and 0.5, variance 0.5 / 2 tasks = 0.25. Profiles (m / (2 M))^2: a 1/16, 9/16;
    # b 1/4, 1/4; summed over n = 18/16, so s^2 = 0.25 / (18/16) = 2/9.
    cells = cost_cells({("a", "t0"): [100], ("a", "t1"): [300],
                        ("b", "t0"): [100], ("b", "t1"): [100]})
    found = evidence(cells["a"], cells["b"], spread(cells["a"].values()),
                     spread(cells["b"].values()))
    assert found.method == "between-task" and found.variance == pytest.approx(0.25)
    shares = variance_shares(found, cells["a"], cells["b"])
    assert shares == pytest.approx({("a", "t0"): 1 / 72, ("a", "t1"): 1 / 8,
                                    ("b", "t0"): 1 / 18, ("b", "t1"): 1 / 18})


def test_a_near_tie_is_out_of_reach_after_the_first_trials():
    found = costs({"a": 1000, "b": 1010}, 1, wobble=0.3)
    assert plan(found, "ab", budget=1e9).pairs[0].status == OPEN
    # 50,000 tokens: under half a trial per cell more (a sweep costs 110,000).
    round_ = plan(found, "ab", budget=50_000)
    (pair,) = round_.pairs
    assert pair.status == OUT_OF_REACH and "whole budget left" in pair.why
    assert round_.trials == []


def test_a_pair_pools_the_two_arms_degrees_of_freedom():
    # Welch-Satterthwaite: (1 + 1)^2 / (1/10 + 1/10) = 20; an arm with no variance
    # leaves the other's 10.
    assert welch_df(1.0, 10.0, 1.0, 10.0) == pytest.approx(20.0)
    assert welch_df(1.0, 10.0, 0.0, 5.0) == pytest.approx(10.0)
    cells = cost_cells(costs({"a": 1000, "b": 1000}, 3))
    found = evidence(cells["a"], cells["b"], spread(cells["a"].values()),
                     spread(cells["b"].values()))
    df_a, df_b = spread(cells["a"].values()).df, spread(cells["b"].values()).df
    assert found.method == "pooled" and max(df_a, df_b) < found.df <= df_a + df_b


def test_a_decided_pair_asks_for_nothing():
    round_ = plan(costs({"a": 1000, "b": 2000}, 3, wobble=0.02), "ab")
    (pair,) = round_.pairs
    assert pair.status == DECIDED and pair.verdict.verdict == "a-cheaper"
    assert round_.trials == []
    assert "every pair of the headline comparison is decided" in round_.lines()[-1]


def test_an_open_pair_asks_for_the_cells_worth_most_per_token():
    round_ = plan(costs({"a": 1000, "b": 1030}, 5, wobble=0.3), "ab", batch=3)
    (pair,) = round_.pairs
    assert pair.status == OPEN
    assert len(round_.trials) == 3
    # Dear tasks carry most of the variance of the mean (it grows with the cost squared,
    # a trial's price only with the cost): the dearest cells first.
    assert {t.task for t in round_.trials} <= {"t9", "t8"}
    assert all(t.why == "for a vs b" for t in round_.trials)
    assert "more trial(s), ~" in pair.why and "to a verdict if the ratio holds" in pair.why


def test_the_trials_an_open_pair_needs_are_the_fewest_that_decide_it():
    fam = family(["a", "b"], alpha=0.05, margin=0.05)
    cells = [("a", "t"), ("b", "t")]  # alike: the best split is even
    shares, costs, counts = dict.fromkeys(cells, 0.04), dict.fromkeys(cells, 1000.0), \
        dict.fromkeys(cells, 3)
    trials, tokens = trials_to_decide(0.2, shares, costs, counts, fam)
    assert trials % 2 == 0 and tokens == trials * 1000.0

    def half(per_cell):
        return half_width(sum(w / per_cell for w in shares.values()), fam.alpha_pair, fam.rho)
    assert half(3 + trials / 2) <= 0.2 < half(3 + trials / 2 - 1)  # enough, and no more
    # a side no trial can add to, wide on its own: no number of trials decides it
    assert trials_to_decide(0.2, {**shares, ("a", "t"): 5.0}, costs, counts, fam,
                            frozen={"a"}) is None


def test_a_pair_the_budget_cannot_decide_is_out_of_reach():
    found = costs({"a": 1000, "b": 1060}, 5, wobble=0.3)
    assert plan(found, "ab", budget=1e9).pairs[0].status == OPEN
    (pair,) = plan(found, "ab", budget=20_000).pairs
    assert pair.status == OUT_OF_REACH and "whole budget left" in pair.why


@pytest.mark.slow
def test_until_decided_runs_rounds_and_says_why_it_stops(tmp_path, monkeypatch):
    for name in ("GITEA_URL", "GITEA_TOKEN", "BENCHKIT_ROOT", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    arm = str(CHECKOUT / "arms.d/raw-api.yaml")
    usage = CliRunner().invoke(main, ["run", arm, "--until-decided", "--driver", "replay"])
    assert usage.exit_code == 2 and "--until-decided takes --budget" in usage.output
    result = CliRunner().invoke(main, [
        "run", arm, "--task", "close-csv-export-issue", "--task", "read-open-issue-count",
        "--until-decided", "--budget", "200000", "--driver", "replay", "--json", "--no-report",
        "--jobs", "2"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    seen = [json.loads(line) for line in result.stdout.splitlines()]
    rounds = [e for e in seen if e["event"] == "decide"]
    assert [len(r["next"]) for r in rounds] == [2, 0]  # one arm: no pair, so one round
    assert seen[-1]["event"] == "summary" and seen[-1]["ran"] == 2
    stored = [json.loads(line) for p in (tmp_path / "results/raw-api").glob("*.jsonl")
              for line in p.read_text().splitlines()]
    assert [s["jobs"] for s in stored] == [2, 2]


def test_until_decided_dry_run_says_what_it_would_spend_first(tmp_path, monkeypatch):
    for name in ("GITEA_URL", "GITEA_TOKEN", "BENCHKIT_ROOT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    arm = str(CHECKOUT / "arms.d/raw-api.yaml")
    result = CliRunner().invoke(main, [
        "run", arm, "--task", "read-open-issue-count", "--until-decided", "--budget", "50000",
        "--driver", "replay", "--dry-run"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert ("until-decided: next: 1 trial(s): raw-api read-open-issue-count (no sample yet"
            in result.stdout)
    assert not (tmp_path / "results").exists()


def test_a_run_of_two_arms_decides_at_the_level_the_report_shows():
    """The report compares every arm with samples, up to the tree's four: six pairs, so
    each pair gets 0.05 / 6, and a run of two of them must not decide at 0.05."""
    from benchkit.run.rounds import headline_family
    fam = headline_family(["raw-api", "tea"], ["gitea-axi", "tea", "gitea-mcp", "raw-api"],
                          0.05, None)
    assert fam.pairs == (("raw-api", "tea"),)
    assert fam.alpha_pair == pytest.approx(0.05 / 6)
    against = headline_family(["raw-api", "tea"], ["gitea-axi", "tea", "gitea-mcp", "raw-api"],
                              0.05, "tea")
    assert against.alpha_pair == pytest.approx(0.05 / 3)  # three arms against the baseline


def test_a_round_says_again_only_the_pairs_whose_state_changed():
    first = plan(costs({"a": 1000, "b": 1030, "c": 2000}, 1), "abc", batch=1)
    assert [p.status for p in first.pairs] == [OPEN, DECIDED, DECIDED]
    assert len(first.lines()) == 4  # every pair, and the next trial
    again = plan(costs({"a": 1000, "b": 1500, "c": 2000}, 2), "abc", batch=1)
    assert [p.status for p in again.pairs] == [DECIDED, DECIDED, DECIDED]
    said = again.lines(first)
    assert len(said) == 2 and said[0].startswith("a vs b: decided - a cheaper")
    assert again.lines(again) == [said[-1]]  # nothing changed: only what comes next


def test_cells_the_budget_left_cannot_pay_for_are_not_asked_for():
    """With rounds of one trial, the dearest cell first would end the run ("no trial of
    the round fits") while cheaper cells of the open pair still fit."""
    found = costs({"a": 1000, "b": 1030}, 3)
    assert plan(found, "ab", budget=1e9, batch=1).trials[0].task == "t9"
    (wanted,) = plan(found, "ab", budget=9_000, batch=1).trials
    assert sum(found[(wanted.arm, wanted.task)]) / 3 <= 9_000


def _rounds(monkeypatch, settings: RunSettings, mine=lambda cell: True):
    """rounds.run_rounds on a fake loop whose trials draw noisy costs, the run's own
    cells those `mine` takes: the trials each round ran, and what it said."""
    from types import SimpleNamespace

    import benchkit.run.rounds as rounds

    rng = random.Random(3)
    arms = [SimpleNamespace(id=a) for a in ("a", "b", "c")]
    cells = [(arm, SimpleNamespace(id=t, scored=True)) for arm in arms for t in TASKS]
    price = {"a": 1000, "b": 1040, "c": 1600}
    spent: dict = {}
    ledger = SimpleNamespace(
        costs=spent, valid={(a.id, t.id): 0 for a, t in cells}, number=lambda arm, task: 0,
        estimated=False,
        expected=lambda arm, task: (sum(spent[(arm, task)]) / len(spent[(arm, task)])
                                    if (arm, task) in spent else 1000.0, "mean"))
    scheduler = SimpleNamespace(totals=SimpleNamespace(halted=None, ran=0), queue=[],
                                left=lambda: 1e12, extend=lambda trials: queue.extend(trials))
    queue: list = []
    ran: list = []

    class Loop:  # runs the queued trials at once: each costs its cell's price +-30%
        def __init__(self, scheduler, *args, jobs, **kwargs):
            pass

        def run_trials(self):
            ran.append([(arm.id, task.id) for arm, task, _ in queue])
            for arm, task, _ in queue:
                cost = price[arm.id] * (1 + TASKS.index(task.id)) * rng.uniform(0.7, 1.3)
                spent.setdefault((arm.id, task.id), []).append(cost)
                scheduler.totals.ran += 1
            queue.clear()
            return rounds.Looped()

    monkeypatch.setattr(rounds, "RunLoop", Loop)
    monkeypatch.setattr(rounds, "Trial", lambda arm, task, valid: (arm, task, valid))
    said: list = []
    caller = SimpleNamespace(  # what rounds.Rounds asks of the run
        tree=SimpleNamespace(arms=["a", "b", "c"], suite=SimpleNamespace(equivalence_margin=0.05)),
        settings=settings, stop=threading.Event(), context=None,
        progress=SimpleNamespace(emit=lambda event, text: said.append((builtins(event), text)),
                                 note=lambda text: said.append(({}, text))))
    chosen = SimpleNamespace(ledger=ledger, every=cells, cells=[c for c in cells if mine(c)])
    assert rounds.run_rounds(caller, chosen, scheduler) == rounds.Looped()
    return ran, said


def test_until_decided_runs_round_after_round_of_one_trial_per_worker(monkeypatch):
    """A round per worker's trial, rounds until every pair is decided or out of reach,
    and the text repeats a pair only when its state changed."""
    ran, said = _rounds(monkeypatch, RunSettings(driver="replay", store_dir="results", jobs=2,
                                                 until_decided=True))
    sizes = [len(trials) for trials in ran]
    assert sizes[0] == 30 and len(sizes) >= 3 and set(sizes[1:]) == {2}
    events = [event for event, _ in said if event.get("event") == "decide"]
    assert all(len(event["pairs"]) == 3 for event in events[1:])  # JSON: every pair
    assert events[-1]["next"] == [] and {p["status"] for p in events[-1]["pairs"]} <= {
        DECIDED, OUT_OF_REACH}
    texts = [text for event, text in said if event.get("event") == "decide"]
    states = [{(p["a"], p["b"]): (p["status"], p["verdict"]) for p in event["pairs"]}
              for event in events]
    for before, after, text in zip(states[1:], states[2:], texts[2:]):
        changed = {f"{a} vs {b}" for (a, b), state in after.items() if before[(a, b)] != state}
        assert {line.split(":")[1].strip() for line in text.splitlines()
                if not line.startswith("until-decided: next")} == changed


def test_a_verdict_reached_on_replay_estimates_says_so(tmp_path, monkeypatch):
    """`--until-decided` on replay samples: the pair it calls decided was judged on
    estimates, and its line says so (as the report labels them)."""
    from synthetic import sample, write_store

    from benchkit.report import current_matrix
    for name in ("GITEA_URL", "GITEA_TOKEN", "BENCHKIT_ROOT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    matrix = current_matrix(CHECKOUT)
    arms = {a.id: a for a in matrix.arms}
    tasks = [t for t in matrix.scored_tasks if t.tier == "read"][:3]
    samples = [sample(arm, task.id, task.tier, driver="replay", cost_usd=None,
                      tokens={"input": 0, "cache_write": 0, "cache_read": 0, "output": output},
                      fingerprints={"task": task.fingerprint, "arm": arms[arm].fingerprint,
                                    "seed": task.seed_fingerprint,
                                    "model": matrix.model_fingerprint})
               for arm, output in (("raw-api", 1000), ("tea", 2000))
               for task in tasks for _ in range(3)]
    write_store(tmp_path / "results", samples)
    result = CliRunner().invoke(main, [
        "run", str(CHECKOUT / "arms.d/raw-api.yaml"), str(CHECKOUT / "arms.d/tea.yaml"),
        *(arg for task in tasks for arg in ("--task", task.id)), "--until-decided",
        "--budget", "50000", "--driver", "replay", "--dry-run"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert ("until-decided: raw-api vs tea: decided - raw-api cheaper (on replay "
            "estimates, not measured tokens)") in result.stdout


def test_a_shard_runs_its_part_of_one_round_planned_for_every_shard(monkeypatch):
    """`--shard 0/2`: one round is planned as for every shard (here every cell's first
    trial); the shard runs those of its own cells, and stops, saying that the shards'
    stores are merged next."""
    mine = {("a", TASKS[0]), ("b", TASKS[1])}
    settings = RunSettings(driver="replay", store_dir="results", jobs=2, until_decided=True,
                           shard=(0, 2))
    ran, said = _rounds(monkeypatch, settings, lambda cell: (cell[0].id, cell[1].id) in mine)
    assert [sorted(trials) for trials in ran] == [sorted(mine)]
    assert "shard 0/2 ran its part of the round" in said[-1][1]
